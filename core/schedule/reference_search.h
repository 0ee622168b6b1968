// Reference searches, selectable for comparison and used as oracles:
// exhaustive enumeration of topological orders (small graphs) and a
// Dijkstra-style best-first search over signatures with the peak as the
// path cost (a path's cost is the largest step on it).
#ifndef SERENITY_CORE_SCHEDULE_REFERENCE_SEARCH_H_
#define SERENITY_CORE_SCHEDULE_REFERENCE_SEARCH_H_

#include "core/memory/buffer_model.h"
#include "core/schedule/budget_search.h"

namespace serenity {

// Enumerates topological orders depth first, skipping prefixes whose peak
// already reaches the best complete order's (so it stays exact). Gives up
// after options.max_states prefixes or the time limit: the best order so far,
// not optimal.
MinimizeResult ExhaustiveSearch(const BufferModel& buffers, const SearchOptions& options);

// Pops signatures in order of (peak, live bytes, insertion); the first
// complete signature popped is optimal. Gives up when more than
// options.max_states signatures are stored or time runs out: empty order.
MinimizeResult BestFirstSearch(const BufferModel& buffers, const SearchOptions& options);

}  // namespace serenity

#endif  // SERENITY_CORE_SCHEDULE_REFERENCE_SEARCH_H_
