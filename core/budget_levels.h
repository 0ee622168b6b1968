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
// fits). Of time_limit_seconds, 90% goes to these plans, each level an
// equal share of what is left when it starts (at least a quarter of an even
// split); the arenas' layout then gets the rest (at least a tenth of the
// limit), each level an equal share, by options->deadline. The first
// level's arena is its plan's (when that plan moves buffers mid-run, a
// static placement of its rows instead, as for every level: a level's
// arena has no moves); every later level's is ShareOffsets of its own with
// the previous level's, within the larger of its budget and its own arena
// (the bound), except that a later level whose budget the previous level's
// plan fits (peak within the budget, arena within the bound) with no more
// time takes that plan and arena (order, primitives, peak; its own
// certificate, which holds for the same time): nothing moves.
// Returns the first budget's plan (its moves, if any, kept) with
// Plan.time.levels, one BudgetLevel per budget. Errors of PlanForTime and
// ShareOffsets.
absl::StatusOr<v1::Plan> PlanBudgetLevels(const Graph& graph, const SanitizedOptions& options,
                                          Executor* executor = nullptr);

// `own` (a level's static arena: rows as PlanToProto writes them) with its
// buffers re-placed so that as many as possible sit at the offset their
// tensor has in `previous` (by the buffer's tensor, or its op's name for a
// workspace; an alias in `previous` counts at its buffer's offset), and the
// arena ends at most at `bound` bytes. Each free buffer, or Concat slice
// group (placed as one block at its first slice), whose previous offset is
// aligned and ends within `bound` is a candidate; candidates are accepted
// largest first while they overlap no accepted co-live one, and the others
// placed around them (PlanArenaInstanceWithPinned). When that arena ends
// above `bound`, the accepted ones are tried again one by one, largest
// first, each kept when the arena still ends within `bound` (at most 256
// placements, and none after limits.deadline). Zero-size buffers keep their
// previous offset when it lies within the arena. Returns `own` unchanged
// when no candidate could be kept or when it moves no more tensors
// (MovedTensors) than the result. InvalidArgument when `own` is not a valid
// arena (a slice naming no group), Internal when the result fails
// VerifyArena.
absl::StatusOr<v1::Arena> ShareOffsets(const v1::Arena& previous, const v1::Arena& own, int64_t bound,
                                       const ArenaLimits& limits = {});

// The names, in `current`'s row order then `previous`'s, of the tensors (and
// workspaces, by their op's name) whose offset in `current` differs from
// their offset in `previous`, weights whose size differs (a primitive that
// keeps them in another form: the device writes them again), and those
// only one of the two holds. A tensor's offset is its row's, or the row
// whose aliases name it.
std::vector<std::string> MovedTensors(const v1::Arena& previous, const v1::Arena& current);

}  // namespace serenity

#endif  // SERENITY_CORE_BUDGET_LEVELS_H_
