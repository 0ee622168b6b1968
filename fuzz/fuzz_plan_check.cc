#include "fuzz/fuzz_plan_check.h"

#include <cstdio>

#include "absl/status/statusor.h"
#include "core/planner.h"

namespace serenity {

void FuzzPlanAndCheck(const Graph& graph) {
  if (graph.num_ops() > kFuzzMaxPlannedOps) return;
  PlanOptions options;
  options.time_limit_seconds = 0.05;
  options.step_time_limit_seconds = 0.05;
  options.max_search_states = 10000;
  absl::StatusOr<Plan> plan = PlanGraph(graph, options);
  if (!plan.ok()) {
    // Errors are fine for odd graphs, but Graph::Build accepted this one, so
    // anything but a clear status code is a bug worth a look.
    if (plan.status().code() == absl::StatusCode::kInternal ||
        plan.status().code() == absl::StatusCode::kUnknown) {
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
}

}  // namespace serenity
