// Plans that choose primitives (issue 19; docs/primitives.md): objective
// "time" picks one alternative per op (graph.h's Primitive) and the order,
// the least total time with every step within the memory budget
// (core/schedule/time_search.h), then plans that order with the chosen
// workspaces as any other plan (steps, arena, baselines).
#ifndef SERENITY_CORE_PRIMITIVE_PLAN_H_
#define SERENITY_CORE_PRIMITIVE_PLAN_H_

#include "absl/status/statusor.h"
#include "core/graph/graph.h"
#include "core/plan_options.h"
#include "core/util/executor.h"
#include "serenity/v1/scheduler.pb.h"

namespace serenity {

// Plans `graph` for options.objective kTime (`options` sanitized for it:
// a memory budget is given). The order is the search's (or the given one,
// whose primitives are then chosen for it); the plan's steps, arena and
// baselines are those of the graph with the chosen workspaces, its
// certificate "baseline" (the peak was not minimised) and its algorithm
// "time"; Plan.time reports the choice, its time, the lower bound and the
// certificate (optimal when the search finished). When no choice fits the
// budget, the plan of least peak with every op's least-workspace alternative,
// feasible false, and Plan.time reports those alternatives (certificate
// baseline). Errors of PlanGraph.
absl::StatusOr<v1::Plan> PlanForTime(const Graph& graph, const SanitizedOptions& options, Executor* executor = nullptr);

}  // namespace serenity

#endif  // SERENITY_CORE_PRIMITIVE_PLAN_H_
