// Arena packing by depth-first search over buffers, in the manner of
// MiniMalloc (Moffitt, ASPLOS 2023): can every buffer get an aligned offset
// below a capacity C?
//
// Each unplaced buffer has a lowest offset it can take: the highest end of
// the placed buffers whose lifetimes overlap its own. A node tries the
// unplaced buffers at their lowest offsets, lowest first (ties by a static
// rank, OffsetRank). Placements go in non-decreasing (offset, rank) order, so each
// packing is reached one way only. A buffer is not placed at or above the
// lowest end any unplaced buffer could reach (that buffer fits below it
// first), and a buffer whose lifetime no unplaced buffer overlaps has only one
// placement worth trying. A node is cut when some time section cannot hold
// its unplaced bytes above the current offset, or above the least lowest
// offset among its unplaced buffers (which is above every placed buffer
// there). An anchor and the buffers anchored to it (Concat slices) go in as
// one piece, at the lowest aligned offset all of them allow; the search is
// then not exhaustive, so it never reports a capacity impossible.
#ifndef SERENITY_CORE_ARENA_OFFSET_SEARCH_H_
#define SERENITY_CORE_ARENA_OFFSET_SEARCH_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <random>
#include <tuple>
#include <vector>

#include "absl/types/span.h"
#include "core/arena/arena_planner.h"
#include "core/arena/skyline_search.h"

namespace serenity {

// The static rank that breaks ties between buffers at the same lowest offset
// (MiniMalloc's preorderings): larger first, by lifetime, area and the live
// bytes of the busiest section, in the order named.
enum class OffsetRank { kWidthAreaTotal, kTotalAreaWidth, kTotalWidthArea };

// The sort key of a buffer under `rank` (larger first): the live bytes of
// its busiest section (`total`), its lifetime in steps (`width`) and
// size x lifetime (`area`), in the order the rank names.
std::tuple<double, double, double> OffsetRankKey(OffsetRank rank, double total, double width, double area);

// The restarts' perturbation of a ranking: front to back, one neighbour
// swap in five drawn from `random` (so an entry may drift several places).
void ShuffleNeighbours(std::vector<size_t>* ranked, std::mt19937_64& random);

// Limits and variations of one search.
struct OffsetSearchOptions {
  OffsetRank rank = OffsetRank::kTotalWidthArea;
  int64_t max_nodes = 1000000;
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  // Non-zero: the rank is perturbed (one neighbour swap in five, drawn from
  // std::mt19937_64 seeded with it): a different search tree per seed, as
  // restarts need, and the same tree for the same seed anywhere.
  uint64_t shuffle_seed = 0;
  // When set (by another thread), the search stops soon and gives up.
  const std::atomic<bool>* cancel = nullptr;
};

// Looks for offsets (multiples of `alignment`; anchored buffers at their
// anchor's plus offset_from_anchor) with every buffer ending at or below
// `capacity`. kPacked fills `offsets`; kGaveUp when a limit in `options` was
// hit, when anchored buffers were placed with their anchor and no packing
// was found, or when an anchor is malformed (PlanArena's rules) or of size 0
// with members; kImpossible when the search ran out of choices (no packing
// exists).
PackingResult PackByLowestOffsets(absl::Span<const ArenaBuffer> buffers, int64_t alignment, int64_t capacity,
                                  const OffsetSearchOptions& options, std::vector<int64_t>* offsets);

// PackByLowestOffsets around fixed buffers: `fixed` holds one entry per
// buffer, the offset it must keep, or -1 for a buffer the search places
// (empty: none fixed). The fixed buffers are obstacles: each free buffer's
// lowest offset is the lowest aligned one at or above its placed
// neighbours' ends that meets no co-live fixed buffer, and a section's room
// leaves out the fixed bytes live there. Still exhaustive: kImpossible means
// no packing keeps the fixed offsets (kImpossible at once when a fixed
// buffer ends above `capacity`). The fixed buffers are taken as given (the
// caller checks that co-live ones do not overlap). kGaveUp when `fixed` has
// another length, an entry below -1, or any buffer is anchored.
PackingResult PackAroundFixed(absl::Span<const ArenaBuffer> buffers, absl::Span<const int64_t> fixed, int64_t alignment,
                              int64_t capacity, const OffsetSearchOptions& options, std::vector<int64_t>* offsets);

}  // namespace serenity

#endif  // SERENITY_CORE_ARENA_OFFSET_SEARCH_H_
