// Serenity's Algorithm 1: dynamic programming over signatures (scheduled-op
// sets), level by level, keeping only the lowest-peak entry per signature
// (the paper's Theorem 1). Exact, and exponential in the graph's width: it is
// here for the ablation against `auto` (budget_search.h), selected with
// --algorithm dp.
#ifndef SERENITY_CORE_SCHEDULE_SIGNATURE_DP_H_
#define SERENITY_CORE_SCHEDULE_SIGNATURE_DP_H_

#include <cstdint>
#include <vector>

#include "core/memory/buffer_model.h"
#include "core/schedule/budget_search.h"

namespace serenity {

// Runs the DP on `part`. Entries whose peak would exceed `budget` are dropped
// (the budgeted DP of the paper's soft budgeting; INT64_MAX for none). The
// result's order holds the part's ops only and its peak is the largest step
// among them. When a level outgrows options.max_states or time runs out
// (stats.hit_limit), or the budget empties a level, the order is empty;
// otherwise it is optimal for the part.
MinimizeResult SignatureDp(const BufferModel& buffers, const SearchOptions& options, int64_t budget = INT64_MAX,
                           const Subproblem& part = Subproblem());

}  // namespace serenity

#endif  // SERENITY_CORE_SCHEDULE_SIGNATURE_DP_H_
