// The order of a rewritten graph that follows a plan of the graph it was
// rewritten from (issue 17): a rewrite keeps most ops and their names, so
// the old plan, carried over, is a good order to start the new search from.
#ifndef SERENITY_CORE_REWRITE_FOLLOW_ORDER_H_
#define SERENITY_CORE_REWRITE_FOLLOW_ORDER_H_

#include <string>
#include <vector>

#include "core/graph/graph.h"

namespace serenity {

// A topological order of `graph`: a list schedule that, among the ready
// ops, runs first an op whose name is not in `reference` (a new op runs as
// soon as its inputs exist), then the named op that comes first in
// `reference`; ties by OpId. So the ops named in `reference` keep its
// relative order wherever the graph's edges allow it.
std::vector<OpId> FollowOrder(const Graph& graph, const std::vector<std::string>& reference);

// The names of `order`'s ops, in order: a `reference` for FollowOrder.
std::vector<std::string> OpNamesInOrder(const Graph& graph, const std::vector<OpId>& order);

}  // namespace serenity

#endif  // SERENITY_CORE_REWRITE_FOLLOW_ORDER_H_
