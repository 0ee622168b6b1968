#include "fuzz/fuzz_plan_check.h"

#include <cstdio>
#include <vector>

#include "absl/status/statusor.h"
#include "core/arena/arena_verifier.h"
#include "core/planner.h"

namespace serenity {

void FuzzPlanAndCheck(const Graph& graph) {
  if (graph.num_ops() > kFuzzMaxPlannedOps) return;
  // The default memory model, then every switch on (views, weights,
  // element-wise in place, Concat slices).
  for (const MemoryModel& model : {MemoryModel{}, MemoryModel{true, true, true, true}}) {
    PlanOptions options;
    options.memory_model = model;
    options.time_limit_seconds = 0.05;
    options.step_time_limit_seconds = 0.05;
    options.max_search_states = 10000;
    absl::StatusOr<Plan> plan = PlanGraph(graph, options);
    if (!plan.ok()) {
      // Errors are fine for odd graphs, but Graph::Build accepted this one,
      // so anything but a clear status code is a bug worth a look.
      if (plan.status().code() == absl::StatusCode::kInternal || plan.status().code() == absl::StatusCode::kUnknown) {
        std::fprintf(stderr, "PlanGraph: unexpected status %s\n", plan.status().ToString().c_str());
        __builtin_trap();
      }
      return;
    }
    if (!IsTopologicalOrder(graph, plan->order)) {
      std::fprintf(stderr, "PlanGraph returned a non-topological order: %s\n",
                   CheckOrder(graph, plan->order).ToString().c_str());
      __builtin_trap();
    }
    // The arena: every buffer placed, anchored slices at their anchors, no
    // overlap among buffers live together.
    std::vector<ArenaBuffer> lifetimes;
    for (const BufferLifetimeInfo& b : plan->profile.buffers) {
      lifetimes.push_back({b.bytes, b.first_step, b.last_step, b.anchor, b.offset_from_anchor});
    }
    if (plan->moves.empty()) {
      absl::Status arena = VerifyArena(lifetimes, plan->arena);
      if (!arena.ok()) {
        std::fprintf(stderr, "PlanGraph returned a bad arena: %s\n", arena.ToString().c_str());
        __builtin_trap();
      }
    }
  }
}

}  // namespace serenity
