// Several budgets in one plan (issue 19; docs/primitives.md, "Several
// budgets"): options.budgets with objective "time" give one plan per budget
// (PlanForTime's answer for it), and the levels' arenas are laid out so that
// as many tensors as possible keep their offset from one level to the next:
// a device can switch level between inferences without re-planning, moving
// only the tensors each level lists.
#ifndef SERENITY_CORE_BUDGET_LEVELS_H_
#define SERENITY_CORE_BUDGET_LEVELS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/arena/arena_planner.h"
#include "core/graph/graph.h"
#include "core/plan_options.h"
#include "core/util/executor.h"
#include "serenity/v1/scheduler.pb.h"

namespace serenity {

// Plans `graph` once per options->budgets (sanitized: objective kTime, no
// memory_budget_bytes), in the order given. Level k is PlanForTime's answer
// with memory_budget_bytes = budgets[k] (order, primitives, time and its
// certificate; feasible false with the least-workspace plan when nothing
// fits), searched with an equal share of the time left when it starts (at
// least a quarter of time_limit_seconds / budgets.size()). The first level's
// arena is its plan's; every later level's is ShareOffsets of its own with
// the previous level's, within the larger of its budget and its own arena.
// Returns the first budget's plan with Plan.time.levels, one BudgetLevel
// per budget. Errors of PlanForTime and ShareOffsets.
absl::StatusOr<v1::Plan> PlanBudgetLevels(const Graph& graph, const SanitizedOptions& options,
                                          Executor* executor = nullptr);

// `own` (a level's static arena: rows as PlanToProto writes them) with its
// buffers re-placed so that as many as possible sit at the offset their
// tensor has in `previous` (by the buffer's tensor, or its op's name for a
// workspace; an alias in `previous` counts at its buffer's offset), and the
// arena ends at most at `bound` bytes. Each free buffer, or Concat slice
// group (placed as one block at its first slice), whose previous offset is
// aligned and ends within `bound` is a candidate; candidates are accepted
// largest first while they overlap no accepted co-live one, then the others
// are placed around them (PlanArenaInstanceWithPinned). When that arena ends
// above `bound`, half of the accepted ones (the smallest) are dropped and it
// is tried again; with none left, `own` is returned unchanged. Zero-size
// buffers keep their previous offset when it lies within the arena.
// InvalidArgument when `own` is not a valid arena (a slice naming no
// group), Internal when the result fails VerifyArena.
absl::StatusOr<v1::Arena> ShareOffsets(const v1::Arena& previous, const v1::Arena& own, int64_t bound,
                                       const ArenaLimits& limits = {});

// The names, in `current`'s row order then `previous`'s, of the tensors (and
// workspaces, by their op's name) whose offset in `current` differs from
// their offset in `previous`, or that only one of the two holds. A tensor's
// offset is its row's, or the row whose aliases name it.
std::vector<std::string> MovedTensors(const v1::Arena& previous, const v1::Arena& current);

}  // namespace serenity

#endif  // SERENITY_CORE_BUDGET_LEVELS_H_
