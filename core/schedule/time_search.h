// Primitive selection under a memory budget (issue 19): one alternative per
// op (graph.h's Primitive: a kernel with its own time and workspace) and an
// order, minimising the total time subject to every step fitting a budget.
//
// The time of a plan is the sum of its chosen primitives' times, whatever
// the order; the order decides which choices fit, since a primitive's
// workspace is live only during its op's step, on top of the bytes live
// there. So for a given order the fastest primitive whose workspace fits
// each step is best (SelectForOrder), and the exact search is a shortest
// path over the sets of ops run (the scheduler's zero-indegree sets): from a
// set, running op v costs the time of v's fastest primitive that fits. It is
// searched by A* with, as the estimate of what is left, the sum over the ops
// not run of the fastest primitive that fits beside the op's own inputs and
// outputs (a lower bound: consistent, so the first complete set taken is
// optimal). One exact rule prunes: a ready op that does not raise the live
// bytes and whose primitive that fits now is as fast as its estimate (the
// fastest it can be anywhere) runs at once (moving it to the front of any
// completion lowers or keeps every later step, so every later choice still
// fits). An op without alternatives runs with its workspace_bytes
// in no time.
//
// With layouts (layout_conversions.h) an op's time and step also count its
// input conversions, which depend on its producers' choices: a state is
// then the set and the layouts of the ops run that still matter, a ready op
// branches on its layouts, only an op whose layout matters to no later op
// is forced, and segments are not cut between an op and a consumer its
// layout matters to. A selection's time and workspaces include the
// conversions (ChoiceTime, StepWorkspaces).
#ifndef SERENITY_CORE_SCHEDULE_TIME_SEARCH_H_
#define SERENITY_CORE_SCHEDULE_TIME_SEARCH_H_

#include <chrono>
#include <cstdint>
#include <optional>
#include <vector>

#include "core/memory/buffer_model.h"
#include "core/schedule/budget_search.h"

namespace serenity {

// An order and a choice per op.
struct PrimitiveSelection {
  std::vector<OpId> order;
  // Per op (by OpId): the index of its chosen alternative, -1 for an op
  // without alternatives.
  std::vector<int> choice;
  double time_us = 0;
  // Per op: the workspace it runs with (the chosen alternative's, or the
  // op's own workspace_bytes).
  std::vector<int64_t> workspace_bytes;
};

// The fastest alternative of every op that fits `budget` at its step of
// `order` (ties: the smaller workspace, then the first listed); nullopt when
// some op has none that fits (or, without alternatives, its step does not
// fit). `order` must be a valid order of buffers.graph(). With layouts or
// transformed weights (primitive_weights.h), the least total time of the
// choices that fit, conversions and weights included (a shortest path over
// the steps; past 4096 states at a step, or after `deadline` past one, the
// fastest are kept, and the result may then not be the least, or nullopt
// when some choice fits).
std::optional<PrimitiveSelection> SelectForOrder(
    const BufferModel& buffers, const std::vector<OpId>& order, int64_t budget,
    std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max());

// The workspace and the time of `op` run with alternative `choice` (-1:
// the op's own workspace_bytes, in no time).
int64_t WorkspaceOf(const Op& op, int choice);
double TimeOf(const Op& op, int choice);

// The time of `op`'s fastest alternative (0 without alternatives).
double FastestTime(const Op& op);

// Per op the index of its fastest alternative (ties: the smaller
// workspace, then the first; -1 without alternatives).
std::vector<int> FastestChoices(const Graph& graph);

// Per op the index of its least-workspace alternative (ties: the faster,
// then the first; -1 without alternatives): what every budget must allow.
std::vector<int> LeastWorkspaceChoices(const Graph& graph);

// Per op the workspace `choices` give it (WorkspaceOf), without layout
// conversions (a bound: StepWorkspaces in layout_conversions.h adds them).
std::vector<int64_t> WorkspacesOf(const Graph& graph, const std::vector<int>& choices);

// Per op, the bytes live at its step in every order when the ops that
// choose an alternative have no workspace (the closure bound of
// closure_bound.h, reaching the ops it can by `end`): what MinimizeTime's
// estimate stands on, the same for every budget.
std::vector<int64_t> SurelyLiveBytes(const BufferModel& buffers, std::chrono::steady_clock::time_point end);

// A plan from the primitives' side: every op aims at its fastest
// alternative; while the least peak with the aimed workspaces
// (MinimizePeak, stopping at the budget, with the aimed weights when they
// count) exceeds the budget, the op over the budget (any op, for its
// transformed weights) whose step down to an alternative of no more
// workspace and no more weights costs the least time per byte saved steps
// down to it; then SelectForOrder on the order found. nullopt when nothing
// can shrink or `limits`' time runs out first.
std::optional<PrimitiveSelection> DowngradeUntilFits(const BufferModel& buffers, int64_t budget,
                                                     const SearchOptions& limits);

struct TimeSearchResult {
  // False when the search proved that no order and choice fits the budget
  // (then `selection` is empty); true when one was found. When the search
  // stopped on a limit before finding one, `feasible` is false and
  // `proven` false.
  bool feasible = false;
  bool proven = false;  // feasible: the time is optimal; not feasible: none fits
  PrimitiveSelection selection;
  double lower_bound_us = 0;  // no plan within the budget is faster
  int64_t states = 0;         // sets of ops expanded
};

// Minimises the total time within `budget` from `start_order` (a valid
// order: its SelectForOrder, when it fits, is the first plan found) within
// `limits` (time_limit_seconds, max_states, cancelled, and memory: the
// sets it keeps are charged there; the other fields are not read).
// `surely_live`, when given, is SurelyLiveBytes(buffers, ...) (a caller
// that searches several budgets computes it once); otherwise it is computed
// in a tenth of the time.
TimeSearchResult MinimizeTime(const BufferModel& buffers, const std::vector<OpId>& start_order, int64_t budget,
                              const SearchOptions& limits, const std::vector<int64_t>* surely_live = nullptr);

}  // namespace serenity

#endif  // SERENITY_CORE_SCHEDULE_TIME_SEARCH_H_
