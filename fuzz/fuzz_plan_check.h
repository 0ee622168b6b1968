// Shared check of the graph fuzzers: plan a small graph with tight limits,
// under the default memory model and with every switch on, and trap unless
// the order is topological and the arena valid.
#ifndef SERENITY_FUZZ_FUZZ_PLAN_CHECK_H_
#define SERENITY_FUZZ_FUZZ_PLAN_CHECK_H_

#include "core/graph/graph.h"

namespace serenity {

// Graphs above this many ops are only built, not planned (keeps each input
// fast).
inline constexpr int kFuzzMaxPlannedOps = 40;

// Plans `graph` when it has at most kFuzzMaxPlannedOps ops (time limit
// 0.05 s, 10000 search states), twice, and traps unless PlanGraph either
// fails with a status or returns a topological order of all ops whose arena
// passes VerifyArena.
void FuzzPlanAndCheck(const Graph& graph);

}  // namespace serenity

#endif  // SERENITY_FUZZ_FUZZ_PLAN_CHECK_H_
