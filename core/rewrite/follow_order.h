// The order of a rewritten graph that follows a plan of the graph it was
// rewritten from (issue 17): a rewrite keeps most ops and their names, so
// the old plan, carried over, is a good order to start the new search from.
#ifndef SERENITY_CORE_REWRITE_FOLLOW_ORDER_H_
#define SERENITY_CORE_REWRITE_FOLLOW_ORDER_H_

#include <string>
#include <vector>

#include "core/graph/graph.h"

namespace serenity {

// When the ops of a rewritten graph that `reference` does not name (its new
// ops) run in FollowOrder.
enum class NewOps {
  kAsSoonAsReady,  // as soon as their inputs exist
  kWhenNeeded,     // just before the first named op that reads them
};

// A topological order of `graph` in which the ops named in `reference` keep
// its relative order wherever the graph's edges allow it, and the new ops
// run as `new_ops` says. kAsSoonAsReady: a list schedule that, among the
// ready ops, runs first a new op, then the named op that comes first in
// `reference` (ties by OpId). kWhenNeeded: the named ops in `reference`'s
// order, each after its ancestors not run yet (by depth-first search over
// its inputs, in input order), then the ops no named op needs.
std::vector<OpId> FollowOrder(const Graph& graph, const std::vector<std::string>& reference,
                              NewOps new_ops = NewOps::kAsSoonAsReady);

// The names of `order`'s ops, in order: a `reference` for FollowOrder.
std::vector<std::string> OpNamesInOrder(const Graph& graph, const std::vector<OpId>& order);

}  // namespace serenity

#endif  // SERENITY_CORE_REWRITE_FOLLOW_ORDER_H_
