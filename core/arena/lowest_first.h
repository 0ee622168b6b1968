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

}  // namespace serenity

#endif  // SERENITY_CORE_ARENA_LOWEST_FIRST_H_
