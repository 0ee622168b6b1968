// The SparsityReport of a plan (issue 20): what one order and one arena mean
// for every sparsity level of a nested sparse model, and for switching from
// a level to the next sparser one in the middle of a run.
//
// Sparsity keeps every tensor's shape, so the activations, the order, their
// peak and the arena are the same at every level; only the weights differ.
// The report is therefore computed from a finished plan (its order,
// step_bytes, arena and moves) and the graph, for a cached plan as for a
// fresh one, and never changes the plan itself.
//
// The memory model (docs/sparsity.md):
// - activations(s) = Plan.step_bytes[s] minus the weights the plan counts
//   (memory_model.count_weights: they are live at every step);
// - a level's weights are resident for the whole run in that level's own CSR
//   (csr_weight_bytes, nested_sparsity.h); a level's peak is
//   max_s activations(s) + csr_weight_bytes;
// - a switch after the op at step k from level d to level d + 1: the steps
//   0..k run with d's weights resident, the steps k+1.. with d + 1's (the
//   switch frees d's weights and loads d + 1's between the two steps), so
//   its peak is max(max_{s<=k} activations(s) + W_d,
//                   max_{s>k} activations(s) + W_{d+1});
//   the live tensors at the switch are the activation buffers made at or
//   before step k and read after it (first_step <= k < last_step), at their
//   offset at step k (after the moves before it);
// - time: a level's time_us is one whole inference; an op's share is its
//   MACs over the graph's (every op the same share when all MACs are 0); a
//   switch's time is d's shares of the steps 0..k plus d + 1's of the rest;
// - with a budget (> 0): a level or switch fits when its peak <= budget; the
//   densest fitting level is the first level that fits.
#ifndef SERENITY_CORE_SPARSITY_SPARSITY_REPORT_H_
#define SERENITY_CORE_SPARSITY_SPARSITY_REPORT_H_

#include "core/graph/graph.h"
#include "core/plan_options.h"
#include "serenity/v1/scheduler.pb.h"

namespace serenity {

// Sets plan->sparsity for options.levels and options.switch_points (which
// SanitizePlanOptions checked for `graph`), with the budget
// options.memory_budget_bytes; clears it when there are no levels or the
// plan is score-only (no arena). `plan` must be a plan of `graph` (its
// order_names, step_bytes, arena and moves).
void AddSparsityReport(const Graph& graph, const PlanOptions& options, v1::Plan* plan);

}  // namespace serenity

#endif  // SERENITY_CORE_SPARSITY_SPARSITY_REPORT_H_
