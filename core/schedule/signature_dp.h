// Serenity's Algorithm 1: dynamic programming over signatures (scheduled-op
// sets), level by level, keeping only the lowest-peak entry per signature
// (the paper's Theorem 1). Exact, and exponential in the graph's width: it is
// here for the ablation against `auto` (budget_search.h), selected with
// --algorithm dp.
#ifndef SERENITY_CORE_SCHEDULE_SIGNATURE_DP_H_
#define SERENITY_CORE_SCHEDULE_SIGNATURE_DP_H_

#include <cstdint>

#include "core/memory/buffer_model.h"
#include "core/schedule/budget_search.h"

namespace serenity {

// Runs the DP. Entries whose peak would exceed `budget` are dropped (the
// budgeted DP of the paper's soft budgeting; pass INT64_MAX for none). When a
// level outgrows options.max_states or time runs out, or the budget empties a
// level, the result has an empty order and optimal == false; otherwise the
// order is optimal.
MinimizeResult SignatureDp(const BufferModel& buffers, const SearchOptions& options, int64_t budget = INT64_MAX);

}  // namespace serenity

#endif  // SERENITY_CORE_SCHEDULE_SIGNATURE_DP_H_
