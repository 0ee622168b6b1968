// Exact-in-spirit arena packing by depth-first search over skylines: can
// every buffer get an aligned offset below a capacity C?
//
// The search keeps, for every time section, the height below which memory is
// settled. It always works at the leftmost lowest section that still has
// unplaced buffers live: either a buffer live there whose whole lifetime is at
// that height is placed on it, or nothing will start at that height there and
// the section is raised to the next height a buffer could rest on. Buffers
// pushed down as far as they go form such a sequence, so the search misses
// no packing whose buffers all rest on others or on zero. It prunes every
// section whose unplaced buffers no longer fit under C above their floor:
// the least height any of them can still be placed at (an unplaced buffer
// goes no lower than the highest section of its lifetime). Without
// MiniMalloc's dominance rules it still gives up on most of that benchmark's
// hard instances; it is used for a bounded try at the lower bound.
#ifndef SERENITY_CORE_ARENA_SKYLINE_SEARCH_H_
#define SERENITY_CORE_ARENA_SKYLINE_SEARCH_H_

#include <chrono>
#include <cstdint>
#include <optional>
#include <vector>

#include "absl/types/span.h"
#include "core/arena/arena_planner.h"

namespace serenity {

enum class PackingResult { kPacked, kImpossible, kGaveUp };

// Which buffers the search tries first where several could go.
enum class SkylineOrder { kSizeFirst, kLifetimeFirst };

// Looks for offsets (multiples of `alignment`) with every buffer ending at or
// below `capacity`, exploring at most `max_nodes` search nodes and stopping
// at `deadline`. kPacked fills `offsets`; kImpossible means no such packing
// exists (among packings whose buffers rest on others or on zero, which every
// optimum can be turned into); kGaveUp, a limit was hit first. Anchored
// buffers go in with their anchor, each at its offset from it above what is
// settled in its sections; with anchors the search is sound but not
// complete, so it never answers kImpossible.
PackingResult PackWithinCapacity(
    absl::Span<const ArenaBuffer> buffers, int64_t alignment, int64_t capacity, int64_t max_nodes, SkylineOrder order,
    std::vector<int64_t>* offsets,
    std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max());

}  // namespace serenity

#endif  // SERENITY_CORE_ARENA_SKYLINE_SEARCH_H_
