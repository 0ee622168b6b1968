// Static offset planning: every buffer gets an offset in one arena so that
// buffers live at the same step never overlap.
#ifndef SERENITY_CORE_ARENA_ARENA_PLANNER_H_
#define SERENITY_CORE_ARENA_ARENA_PLANNER_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/util/memory_account.h"

namespace serenity {

// A buffer of `size` bytes live from `first_step` to `last_step` inclusive.
// An anchored buffer (anchor >= 0) has no placement of its own: it sits at
// the offset of buffer `anchor` plus `offset_from_anchor`, unaligned (the
// slices of a Concat laid out in place). An anchor is itself free.
struct ArenaBuffer {
  int64_t size = 0;
  int32_t first_step = 0;
  int32_t last_step = 0;
  int32_t anchor = -1;
  int64_t offset_from_anchor = 0;
};

// What a planning call may spend: it stops at `deadline` or when
// `cancelled` becomes true, and charges its large structures (co-live
// lists, the searches' tables) to `memory` (null: unlimited). Defaults: no
// limit.
struct ArenaLimits {
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  const std::atomic<bool>* cancelled = nullptr;
  MemoryAccount* memory = nullptr;
};

// Set when a limit cut a planning call short: `reason` is "time_limit",
// "memory_limit", "cancelled" or "size_limit" (the searches' tables would
// hold more than kMaxArenaSearchCells entries); `used` says what the plan
// is instead ("greedy placement", "fast greedy placement"). Empty reason:
// nothing was cut.
struct ArenaCut {
  std::string reason;
  std::string used;
};

// Most entries (buffer-section and co-live pair) the searches by offsets and
// skylines may set up (8 bytes each, twice): beyond it (a fan-out of
// thousands of long-lived buffers) they are skipped.
inline constexpr int64_t kMaxArenaSearchCells = 8'000'000;

// Search nodes per skyline attempt in PlanArena: tens of milliseconds at most.
inline constexpr int64_t kDefaultSkylineNodes = 10000;

struct ArenaPlan {
  int64_t size_bytes = 0;  // max over buffers of offset + size
  int64_t alignment = 1;
  std::vector<int64_t> offsets;  // one per buffer, in input order
};

// `value` rounded up to a multiple of `alignment` (>= 1). The caller keeps
// it from overflowing (PlanArena bounds the bytes by 2^62).
inline int64_t AlignUp(int64_t value, int64_t alignment) { return (value + alignment - 1) / alignment * alignment; }

// Time compressed to sections: the runs of steps between consecutive
// lifetime boundaries of the buffers. Buffer i lives in sections
// [spans[i].first, spans[i].second).
struct TimeSections {
  int count = 0;
  std::vector<std::pair<int, int>> spans;
};
TimeSections SplitIntoSections(absl::Span<const ArenaBuffer> buffers);

// True when buffer `i` is free, or anchored to a free buffer in range at a
// non-negative offset_from_anchor (the rule PlanArena enforces).
inline bool AnchorIsValid(absl::Span<const ArenaBuffer> buffers, size_t i) {
  const ArenaBuffer& b = buffers[i];
  if (b.anchor < 0) return b.anchor == -1;
  return static_cast<size_t>(b.anchor) < buffers.size() && buffers[static_cast<size_t>(b.anchor)].anchor < 0 &&
         b.offset_from_anchor >= 0;
}

// For each buffer (indexed like `buffers`), the buffers of `members` whose
// steps overlap its own, if it is a member: one sweep over first steps, so
// n log n plus the pairs. Empty when there are more than `max_pairs` pairs.
std::vector<std::vector<size_t>> OverlappingBuffers(absl::Span<const ArenaBuffer> buffers, std::vector<size_t> members,
                                                    int64_t max_pairs = INT64_MAX);

// The number of pairs of buffers that share a step (n log n, nothing listed).
int64_t CountCoLivePairs(absl::Span<const ArenaBuffer> buffers);

// A conservative estimate of the seconds one greedy placement pass
// (PlaceInOrder: PlanArenaGreedyBySize, each of PlanArena's placements)
// takes on `buffers`: quadratic in the buffers when scanning them costs
// less than listing the co-live pairs (or those are too many to list),
// else in proportion to the pairs.
double EstimatePlacementSeconds(absl::Span<const ArenaBuffer> buffers);

// EstimatePlacementSeconds, and the bytes PlanArena charges for the
// co-live lists of `buffers` (0 when it scans instead): what one greedy
// placement pass holds. One count of the co-live pairs for both.
struct PlacementEstimate {
  double seconds = 0;
  int64_t list_bytes = 0;
};
PlacementEstimate EstimatePlacement(absl::Span<const ArenaBuffer> buffers);

// For each buffer, the buffers anchored to it, lowest offset_from_anchor
// first (empty for most). Anchors out of range are skipped (PlanArena
// refuses them).
std::vector<std::vector<size_t>> AnchoredBuffers(absl::Span<const ArenaBuffer> buffers);

// A free buffer alone, or an anchor with the buffers anchored to it, placed
// as one piece: `extent`, the highest end of a member above the head's
// offset; `first` and `last`, the union of their lifetimes (inclusive).
struct AnchoredBlock {
  size_t head;
  int64_t extent;
  int32_t first;
  int32_t last;
};

// The blocks of `buffers` (valid for PlanArena) with a positive extent, in
// the order of their heads; blocks of extent 0 sit at offset 0.
std::vector<AnchoredBlock> AnchoredBlocks(absl::Span<const ArenaBuffer> buffers);

// The largest number of bytes live at one step: no plan can be smaller.
int64_t ArenaLowerBound(absl::Span<const ArenaBuffer> buffers);

// With offsets multiples of `alignment`, every live buffer but the topmost
// takes its size rounded up: at each step the rounded sizes less the
// largest rounding. At least ArenaLowerBound; equal to it when `alignment`
// is 1 or some buffer is anchored (slices sit unaligned).
int64_t AlignedArenaLowerBound(absl::Span<const ArenaBuffer> buffers, int64_t alignment);

// OK when the planners below accept `buffers` and `alignment`; otherwise
// the error they give (as PlanArenaGreedyBySize's).
absl::Status ValidateArenaBuffers(absl::Span<const ArenaBuffer> buffers, int64_t alignment);

// TensorFlow-Lite-style greedy planning: buffers in decreasing size (ties by
// first step, then input position); each goes into the lowest-waste gap
// (best fit) between the already placed buffers whose lifetimes overlap it,
// or above them all; offsets are multiples of `alignment`. InvalidArgument
// for alignment < 1, a negative size, last_step < first_step, an anchor out
// of range or itself anchored, or a negative offset_from_anchor; OutOfRange
// when the sizes, each rounded up to `alignment`, total more than 2^62 bytes.
absl::StatusOr<ArenaPlan> PlanArenaGreedyBySize(absl::Span<const ArenaBuffer> buffers, int64_t alignment);

// A placement that is fast on any instance (n log n time, linear memory):
// steps run in order; at each, the buffers that end before it give their
// bytes back (adjacent holes merge) and the buffers that start there (larger
// first) take the tightest hole that holds their aligned size, or the top.
// An anchor's group is one block spanning its members' bytes over the union
// of their lifetimes. Errors as PlanArenaGreedyBySize. The arena may be
// larger than the greedy placements' (the holes it leaves are never
// revisited); it is what PlanArena falls back to when out of time.
absl::StatusOr<ArenaPlan> PlanArenaFast(absl::Span<const ArenaBuffer> buffers, int64_t alignment);

// The bounded searches for a packing at AlignedArenaLowerBound, in the
// order they run: by lowest offsets under three ranks (offset_search.h),
// `offset_nodes` nodes each, then by skylines under two orders
// (skyline_search.h), `skyline_nodes` nodes each. 0 skips a kind.
struct ArenaSearches {
  int64_t offset_nodes = 0;
  int64_t skyline_nodes = 0;
};

// Nodes of one search by offsets at the bound for `n` buffers: enough to
// place every buffer with a little backtracking (nasnet_a_cifar10's 779
// buffers pack at the bound in about 1,000).
inline int64_t AtBoundOffsetNodes(size_t n) { return 2 * static_cast<int64_t>(n) + 1000; }

// `plan` (a valid plan of `buffers`), or the first packing at the bound
// that `searches` find; it stops at the first search that packs or proves
// the bound impossible (then sets `*refuted`, when given). Within `limits`
// as PlanArena: skipped when out of time, when the searches' tables cannot
// be charged to the account or would exceed kMaxArenaSearchCells, and `cut`
// (may be null) then says why. Deterministic unless a limit cuts it.
ArenaPlan SearchAtBound(absl::Span<const ArenaBuffer> buffers, int64_t alignment, ArenaPlan plan,
                        const ArenaSearches& searches, const ArenaLimits& limits = {}, ArenaCut* cut = nullptr,
                        bool* refuted = nullptr);

// The planner every plan uses: the smallest of several greedy placements
// (buffers ordered by size, by the live bytes of their busiest step, by
// lifetime, by size times lifetime, and by start; each placed best-fit and
// first-fit), stopping as soon as one reaches AlignedArenaLowerBound, then
// SearchAtBound's searches: by lowest offsets, min(skyline_nodes,
// AtBoundOffsetNodes(n)) nodes each, then by skylines, `skyline_nodes` each. Deterministic.
// Never larger than PlanArenaGreedyBySize. Errors as PlanArenaGreedyBySize.
// An anchor and the buffers anchored to it are placed together, at the
// lowest aligned offset where none of them meets a placed buffer (each
// greedy order is also tried with the groups first); the skyline search
// places a group when its anchor comes up.
// `skyline_nodes` 0 skips the searches. For a bare instance,
// where more time is worth spending, see PlanArenaInstance.
// Within `limits`: a placement whose estimated time (EstimatePlacementSeconds)
// would pass the deadline is not started, and the searches are skipped
// when out of time, when their tables cannot be charged to the memory
// account, or when they would exceed kMaxArenaSearchCells; when not even the
// first placement fits the time, the plan is PlanArenaFast's. `cut` (may be
// null) says what was cut and why. `by_size` (may be null) receives the
// first greedy placement, PlanArenaGreedyBySize's plan, when it ran (it
// does unless the call was cancelled or not even one placement fits the
// time first; it is reset otherwise), so a caller that wants both does not
// place twice.
absl::StatusOr<ArenaPlan> PlanArena(absl::Span<const ArenaBuffer> buffers, int64_t alignment,
                                    int64_t skyline_nodes = kDefaultSkylineNodes, const ArenaLimits& limits = {},
                                    ArenaCut* cut = nullptr, std::optional<ArenaPlan>* by_size = nullptr);

}  // namespace serenity

#endif  // SERENITY_CORE_ARENA_ARENA_PLANNER_H_
