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
#include <memory>
#include <vector>

#include "absl/types/span.h"
#include "core/graph/reachability.h"
#include "core/memory/buffer_model.h"

namespace serenity {

// The bound for every op (indexed by OpId). Each entry is at least the
// corresponding StepLowerBounds entry. One max-flow per op, taken in order of
// decreasing StepLowerBounds while a fixed work budget lasts (counted, so
// deterministic): graphs of a few hundred ops get it for every op, the rest
// of a larger graph keeps its StepLowerBounds entries. In a segment without
// bitsets (reachability.h) an op's ancestors and descendants come from a
// walk over the segment's edges instead (the same bound, at a walk's cost
// in the work budget). Also stops at
// `deadline` (then sets `*cut`, when given): the ops not reached keep their
// StepLowerBounds entries, so every entry is still a bound.
//
// `steps`, when not empty, holds each op's step bytes in some valid order
// (indexed by OpId). No op's bound exceeds its step, so an op whose step is
// at most the largest bound already found (in any segment), or at most
// `floor` (a bound the caller has, e.g. on the whole graph's peak), keeps
// its StepLowerBounds entry without a max-flow: the largest entry, or the
// floor when higher, is the same as without `steps` (or higher, when the
// work saved lets more ops in before the work budget runs out), for less
// work. (A segment's own largest entry may then be lower, but not above
// that.)
std::vector<int64_t> ClosureStepLowerBounds(
    const BufferModel& buffers, const Reachability& reach,
    std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max(), bool* cut = nullptr,
    absl::Span<const int64_t> steps = {}, int64_t floor = 0);

// Lower bounds on the peak of every order from pairs of ops: of two ops u
// and v that are not ancestors of each other, every order runs one first.
// With v first, u's step holds at least the closure bound of u over the
// sets that hold v, and v's step the closure bound of v over the sets
// without u; so the peak is at least the smaller, over the two ways, of the
// larger of those two. Such a pair bound can exceed both ops' closure
// bounds: each op's least closure may need the other op on the other side.
// One object per graph and reachability (both must outlive it): the
// per-segment data is built once, and one work budget is shared by all
// calls (counted, so deterministic).
class ClosureCuts;
class PairBounds {
 public:
  // Ops tried first, and how many ops that can run in either order with
  // each (the first in `ops`' order) they are paired with: at most 96
  // pairs, four max-flows each.
  static constexpr size_t kFirstOps = 12;
  static constexpr size_t kPartners = 8;

  PairBounds(const BufferModel& buffers, const Reachability& reach);
  ~PairBounds();
  PairBounds(const PairBounds&) = delete;
  PairBounds& operator=(const PairBounds&) = delete;

  // The largest pair bound of `ops` (ops of one segment, the likeliest to
  // set its bound first, e.g. by decreasing closure bound): each of the
  // first kFirstOps ops with the first kPartners ops that can run in either
  // order with it, but for those among the first ops that come before it (a
  // pair of two first ops is tried from the earlier one's list only, if
  // there); or `known` (a bound the caller has) when higher. Stops,
  // with the pairs done so far, when the work budget is spent or at
  // `deadline` (then sets `*cut`, when given): always a bound.
  // `steps`, when not empty, holds each op's step bytes in some valid order
  // (indexed by OpId): that order runs one of the two ways, so a pair's
  // bound is at most the larger of its ops' steps, and a pair whose steps
  // are both at most the bound so far is skipped (as are ops of no such
  // pair), for less work and the same result.
  int64_t Of(absl::Span<const OpId> ops, int64_t known = 0,
             std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max(),
             bool* cut = nullptr, absl::Span<const int64_t> steps = {});

 private:
  std::unique_ptr<ClosureCuts> cuts_;
  const Reachability& reach_;
  int64_t work_ = 0;
};

}  // namespace serenity

#endif  // SERENITY_CORE_MEMORY_CLOSURE_BOUND_H_
