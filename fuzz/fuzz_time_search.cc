// libFuzzer target: bytes -> a small DAG whose ops carry alternatives
// (issue 19) and a budget -> MinimizeTime and DowngradeUntilFits -> an
// independent check of what they return: a topological order whose
// simulated peak, with the chosen workspaces, fits the budget, choices that
// are the ops' own, a time that is their sum and not below the lower bound.
//
// Layout: byte 0 ops (2 + b % 12), byte 1 memory-model switches, bytes 2-3
// the budget (x 4), then per op 5 bytes: first input (an earlier tensor or
// the graph input), second input (0: none), output bytes, alternatives
// (b % 4), and a seed for their times and workspaces.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "core/graph/graph.h"
#include "core/memory/buffer_model.h"
#include "core/memory/simulator.h"
#include "core/schedule/baselines.h"
#include "core/schedule/time_search.h"

namespace {

[[noreturn]] void Fail(const char* what) {
  std::fprintf(stderr, "time search: %s\n", what);
  __builtin_trap();
}

void Check(const serenity::Graph& graph, const serenity::MemoryModel& model, int64_t budget,
           const serenity::PrimitiveSelection& plan, double lower_bound) {
  if (!serenity::IsTopologicalOrder(graph, plan.order)) Fail("not a topological order");
  double time = 0;
  for (serenity::OpId u = 0; u < graph.num_ops(); ++u) {
    const serenity::Op& op = graph.op(u);
    const int c = plan.choice[u];
    if ((c < 0) != op.alternatives.empty() || c >= static_cast<int>(op.alternatives.size())) Fail("bad choice");
    if (plan.workspace_bytes[u] != (c < 0 ? op.workspace_bytes : op.alternatives[c].workspace_bytes)) {
      Fail("workspace is not the choice's");
    }
    time += c < 0 ? 0 : op.alternatives[c].time_us;
  }
  if (time != plan.time_us) Fail("time is not the sum of the choices");
  if (lower_bound > plan.time_us) Fail("lower bound above the time");
  const serenity::Graph chosen = graph.WithWorkspaces(plan.workspace_bytes);
  absl::StatusOr<serenity::MemoryProfile> profile =
      serenity::Simulate(serenity::BufferModel(chosen, model), plan.order);
  if (!profile.ok() || profile->peak_bytes > budget) Fail("the plan does not fit the budget");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 4) return 0;
  const int num_ops = 2 + data[0] % 12;
  serenity::MemoryModel model;
  model.alias_views = data[1] & 1;
  model.in_place = data[1] & 2;
  const int64_t budget = (int64_t{data[2]} << 8 | data[3]) * 4;
  serenity::GraphSpec spec;
  spec.name = "fuzz";
  spec.tensors.push_back({"in", {}, 1, 64, false, true});
  spec.inputs = {"in"};
  std::vector<std::string> tensors = {"in"};
  size_t at = 4;
  for (int u = 0; u < num_ops && at + 5 <= size; ++u, at += 5) {
    serenity::OpSpec op;
    op.name = "op" + std::to_string(u);
    op.type = data[at + 3] & 4 ? "Relu" : "Conv";
    op.inputs.push_back(tensors[data[at] % tensors.size()]);
    if (data[at + 1] != 0) {
      const std::string& second = tensors[data[at + 1] % tensors.size()];
      if (second != op.inputs.front()) op.inputs.push_back(second);
    }
    const std::string out = "t" + std::to_string(u);
    op.outputs.push_back(out);
    spec.tensors.push_back({out, {}, 1, 1 + data[at + 2], false, true});
    uint32_t seed = data[at + 4] * 2654435761u;
    for (int a = 0; a < (data[at + 3] & 3); ++a) {
      seed = seed * 1103515245u + 12345u;
      op.alternatives.push_back({"k" + std::to_string(a), static_cast<double>(seed >> 24 & 63),
                                 static_cast<int64_t>(seed >> 8 & 511), "", 0});
    }
    spec.ops.push_back(std::move(op));
    tensors.push_back(out);
  }
  if (spec.ops.empty()) return 0;
  spec.outputs = {tensors.back()};
  absl::StatusOr<serenity::Graph> graph = serenity::Graph::Build(std::move(spec));
  if (!graph.ok()) return 0;
  const serenity::BufferModel buffers(*graph, model);
  serenity::SearchOptions limits;
  limits.time_limit_seconds = 1;
  const serenity::TimeSearchResult result =
      serenity::MinimizeTime(buffers, serenity::FileOrder(*graph), budget, limits);
  if (result.feasible) Check(*graph, model, budget, result.selection, result.lower_bound_us);
  if (result.feasible && result.proven && result.lower_bound_us != result.selection.time_us) {
    Fail("a proven time is not its lower bound");
  }
  if (std::optional<serenity::PrimitiveSelection> downgraded = serenity::DowngradeUntilFits(buffers, budget, limits)) {
    Check(*graph, model, budget, *downgraded, 0);
    if (result.proven && result.feasible && downgraded->time_us < result.selection.time_us) {
      Fail("the primitives' side beat a proven optimum");
    }
    if (result.proven && !result.feasible) Fail("the primitives' side fits a budget proven infeasible");
  }
  return 0;
}
