// The Serenity paper's pipeline, kept as the paper states it so its parts can
// be measured against `auto`: divide-and-conquer at cut points
// (partition.h), then per segment the signature DP (signature_dp.h), either
// unbudgeted ("dp+dc") or under adaptive soft budgeting ("dp+dc+asb",
// Algorithm 2): start at tau_max (the peak of Kahn's order); run the
// budgeted DP with a per-step time limit; on a timeout set (tau_old, tau_new)
// to (tau_new, tau_new / 2); when the budget leaves no solution set them to
// (tau_new, (tau_new + tau_old) / 2); stop at the first solution.
#ifndef SERENITY_CORE_SCHEDULE_DIVIDE_AND_CONQUER_H_
#define SERENITY_CORE_SCHEDULE_DIVIDE_AND_CONQUER_H_

#include "core/memory/buffer_model.h"
#include "core/schedule/budget_search.h"

namespace serenity {

struct SegmentedDpOptions {
  SearchOptions search;                // overall time limit and state cap
  bool soft_budget = false;            // Algorithm 2 per segment
  double step_time_limit_seconds = 1;  // T of Algorithm 2
  int max_budget_steps = 64;           // Algorithm 2 iterations per segment at most
};

// Orders every segment and concatenates. On success the order is optimal (a
// completed DP within any budget is exact for that segment). When a segment
// fails (time, states, or Algorithm 2 never reaching a solution) the order is
// empty; stats say how far it got.
MinimizeResult SegmentedDp(const BufferModel& buffers, const SegmentedDpOptions& options);

}  // namespace serenity

#endif  // SERENITY_CORE_SCHEDULE_DIVIDE_AND_CONQUER_H_
