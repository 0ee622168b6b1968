// Planning a bare arena instance in which some buffers are pinned at given
// offsets (MiniMalloc's CSV with an `offset` column, arena_csv.h): the
// others are placed around them.
#ifndef SERENITY_CORE_ARENA_PINNED_ARENA_H_
#define SERENITY_CORE_ARENA_PINNED_ARENA_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/arena/arena_planner.h"
#include "core/arena/instance_search.h"

namespace serenity {

// Like PlanArenaInstance, with `pinned` holding one entry per buffer: the
// offset the buffer must have, or -1 for a buffer the planner places (an
// empty span: none pinned, exactly PlanArenaInstance). Pinned buffers keep
// their offsets; the free ones get offsets, multiples of `alignment`, where
// they meet no co-live buffer. First greedy best-fit placements of the free
// buffers around the pinned ones (by size, lifetime, size times lifetime,
// start; the smallest kept), then, within `options`, SearchBelowPlan's
// chains with the pinned buffers fixed (PackAroundFixed), towards the
// larger of the aligned lower bound and the highest pinned end.
// InvalidArgument, naming the buffers, when `pinned` has another length than
// `buffers`, a pinned offset is below -1 or not a multiple of `alignment`,
// a pinned buffer ends past 2^62, any buffer is anchored, or two pinned
// buffers of non-zero size share a step and overlap in memory; errors of
// PlanArenaInstance otherwise. ResourceExhausted when the buffers share more
// than kMaxArenaSearchCells pairs of steps (the placement lists them).
absl::StatusOr<ArenaPlan> PlanArenaInstanceWithPinned(absl::Span<const ArenaBuffer> buffers,
                                                      absl::Span<const int64_t> pinned, int64_t alignment,
                                                      const InstanceSearchOptions& options,
                                                      const ArenaLimits& limits = {});

}  // namespace serenity

#endif  // SERENITY_CORE_ARENA_PINNED_ARENA_H_
