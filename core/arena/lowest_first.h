// A placement for large arena instances (10^4 to 10^6 buffers): the first
// descent of the search by lowest offsets (offset_search.h) without its
// tables. Repeatedly the unplaced buffer with the lowest lowest offset (the
// highest end of the placed buffers it shares a step with; ties by a static
// rank, OffsetRank) goes there. Each lowest offset is a range maximum over
// time (a segment tree), refreshed lazily when its buffer reaches the front
// of a heap, so time is about n log n and memory linear: no co-live lists.
// On random instances shaped like schedules it ends 0-4% above the lower
// bound (10^4 to 10^6 buffers) where greedy placements by size end 15-25%
// above it (bench/RESULTS.md).
#ifndef SERENITY_CORE_ARENA_LOWEST_FIRST_H_
#define SERENITY_CORE_ARENA_LOWEST_FIRST_H_

#include <cstdint>
#include <random>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/arena/arena_planner.h"
#include "core/arena/offset_search.h"

namespace serenity {

// Places every buffer, lowest offsets first, ranks broken by `rank` (as the
// search's: larger first by the live bytes of the busiest step in the
// buffer's lifetime, its lifetime and its area, in the order named; then
// input position). Offsets are multiples of `alignment`. An anchor and the
// buffers anchored to it go in as one block spanning their union of steps
// and their extent above the anchor. A non-zero `shuffle_seed` perturbs the
// rank as the search's restarts do (OffsetSearchOptions::shuffle_seed): a
// different placement per seed, the same for the same seed. Errors as
// PlanArenaGreedyBySize; DeadlineExceeded or Cancelled when `limits` stop
// it first (its time grows with the buffers stacked under each other: a
// clique of k buffers costs about k^2 heap steps; 28,226 buffers of a
// training graph's schedule, 141 million co-live pairs, take ~10 s).
absl::StatusOr<ArenaPlan> PlanArenaLowestFirst(absl::Span<const ArenaBuffer> buffers, int64_t alignment,
                                               OffsetRank rank, uint64_t shuffle_seed = 0,
                                               const ArenaLimits& limits = {});

// PlanArenaLowestFirst in parts, for placing one instance many times under
// different rankings: the blocks (an anchor with its anchored buffers, or a
// free buffer of non-zero extent, as AnchoredBlocks lists them) and their
// sections are set up once.
class LowestFirstPlacer {
 public:
  // An anchored block and the sections it lives in: [lo, hi).
  struct Block : AnchoredBlock {
    int lo = 0;
    int hi = 0;
  };

  // Errors as PlanArenaGreedyBySize. `buffers` must outlive the placer.
  static absl::StatusOr<LowestFirstPlacer> Create(absl::Span<const ArenaBuffer> buffers, int64_t alignment);

  const std::vector<Block>& blocks() const { return blocks_; }
  absl::Span<const ArenaBuffer> buffers() const { return buffers_; }
  int64_t alignment() const { return alignment_; }

  // The blocks' indices, highest rank first under `rank`, ties by index
  // (the order PlanArenaLowestFirst places ties in).
  std::vector<size_t> Ranking(OffsetRank rank) const;

  // The lowest-first placement with ties between blocks broken by their
  // position in `ranked` (a permutation of the block indices; earlier
  // first). InvalidArgument when `ranked` is no such permutation;
  // DeadlineExceeded or Cancelled as PlanArenaLowestFirst.
  absl::StatusOr<ArenaPlan> Place(absl::Span<const size_t> ranked, const ArenaLimits& limits = {}) const;

 private:
  LowestFirstPlacer() = default;

  absl::Span<const ArenaBuffer> buffers_;
  int64_t alignment_ = 1;
  std::vector<Block> blocks_;
  int sections_ = 1;
  int64_t total_extent_ = 0;  // the blocks' aligned extents
};

// A local perturbation of `ranked` (a permutation of the placer's blocks)
// for improving `plan` (a placement of them): the blocks that share a
// section with the block ending highest in `plan`, or lie within its
// length of sections on either side, swap places as neighbours among
// themselves (in rank order, one swap in `odds`, drawn from `random`); the
// others keep their positions. Placing the result mostly keeps the other
// regions of time as they were and redoes the one that sets the arena.
void ShuffleNearTop(const LowestFirstPlacer& placer, const ArenaPlan& plan, int odds, std::mt19937_64& random,
                    std::vector<size_t>* ranked);

}  // namespace serenity

#endif  // SERENITY_CORE_ARENA_LOWEST_FIRST_H_
