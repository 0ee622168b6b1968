// A lower bound on the bytes live at each op's step, stronger than
// StepLowerBounds: it also counts the buffers of ops that are not ancestors,
// when running them first would cost as much.
//
// In every order, the ops that run before u form a down-closed set S that
// holds u's ancestors and none of u's descendants (nor u). At u's step every
// buffer made in S (or a graph input) that has a reader outside S, or is a
// graph output, is live. The cheapest such S is a minimum-weight closure,
// found as a minimum cut; u's outputs, workspace and the resident weights
// are added, and a possible in-place saving is subtracted, as in
// StepLowerBounds.
#ifndef SERENITY_CORE_MEMORY_CLOSURE_BOUND_H_
#define SERENITY_CORE_MEMORY_CLOSURE_BOUND_H_

#include <chrono>
#include <cstdint>
#include <vector>

#include "absl/types/span.h"
#include "core/graph/reachability.h"
#include "core/memory/buffer_model.h"

namespace serenity {

// The bound for every op (indexed by OpId). Each entry is at least the
// corresponding StepLowerBounds entry. One max-flow per op, taken in order of
// decreasing StepLowerBounds while a fixed work budget lasts (counted, so
// deterministic): graphs of a few hundred ops get it for every op, the rest
// of a larger graph keeps its StepLowerBounds entries, as do the ops of a
// segment without bitsets (reachability.h). Also stops at
// `deadline` (then sets `*cut`, when given): the ops not reached keep their
// StepLowerBounds entries, so every entry is still a bound.
//
// `steps`, when not empty, holds each op's step bytes in some valid order
// (indexed by OpId). No op's bound exceeds its step, so an op whose step is
// at most the largest bound already found (in any segment), or at most
// `floor` (a bound the caller has, e.g. on the whole graph's peak), keeps
// its StepLowerBounds entry without a max-flow: the largest entry, or the
// floor when higher, is the same as without `steps`, for less work. (A
// segment's own largest entry may then be lower, but not above that.)
std::vector<int64_t> ClosureStepLowerBounds(
    const BufferModel& buffers, const Reachability& reach,
    std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max(), bool* cut = nullptr,
    absl::Span<const int64_t> steps = {}, int64_t floor = 0);

}  // namespace serenity

#endif  // SERENITY_CORE_MEMORY_CLOSURE_BOUND_H_
