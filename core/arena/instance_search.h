// Planning a bare arena instance, where the arena is the whole job
// (`serenity-client arena`, MiniMalloc's benchmark): PlanArena first, then,
// for a fixed time, searches by lowest offsets (offset_search.h) in
// independent chains on the caller's executor. Each chain first tries one
// static rank at the lower bound; then it restarts with shuffled ranks and a
// small node budget at capacities below the best arena found so far (by any
// chain), stepping closer to that arena after repeated failures. The search
// is heavy-tailed: many short randomised restarts find packings that one long
// search does not.
#ifndef SERENITY_CORE_ARENA_INSTANCE_SEARCH_H_
#define SERENITY_CORE_ARENA_INSTANCE_SEARCH_H_

#include <chrono>
#include <cstdint>
#include <limits>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/arena/arena_planner.h"
#include "core/util/executor.h"

namespace serenity {

struct InstanceSearchOptions {
  // Wall-clock time for everything after PlanArena. Infinite: the limits
  // below decide, and the result is repeatable.
  double seconds = 0.9;
  // Concurrent chains, run as tasks on `executor` (null: one after another
  // on the calling thread, so use one chain).
  int chains = 1;
  Executor* executor = nullptr;
  // Nodes of each static-rank attempt at the bound (0: none), and restarts
  // per chain (on a large instance with lowest_first_when_large: each
  // chain's lowest-first placements, restarts and climbs, after the first
  // ones).
  int64_t static_nodes = 1000000;
  int64_t max_restarts = std::numeric_limits<int64_t>::max();
  // Also run PlanArena(buffers, alignment)'s one pass of searches at the
  // bound (SearchAtBound): those by offsets before the restarts, those by
  // skylines after them when the bound is still not reached.
  bool start_with_searches = false;
  // Above 1,000 buffers, start from lowest-first placements
  // (lowest_first.h) instead of PlanArena's when those do not fit the time
  // (bare instances; PlanArenaSearch leaves it off, so every plan's arena
  // is PlanArena's as before).
  bool lowest_first_when_large = true;
};

// What every plan's arena gets (core/planner.cc): PlanArena's greedy
// placements, then, while the bound is missed, its searches by offsets,
// lowest-first placements (lowest_first.h) under the three ranks and climbs
// from the best of them (ShuffleNearTop, seeded; as many placements as
// 200,000 / (blocks + co-live pairs / 32), at most 3 + 64, about 0.3 s at
// most, and no more than the time left fits), up to 16 restarts of 1,000
// nodes on one chain, and its searches by skylines (no clock: the same
// arena on every machine unless a limit cuts it). Above 1,000 blocks only
// the climbs, from PlanArenaFast's placement, and PlanArena's greedy
// placements (kept when smaller, run only when all of them fit the time
// left): no searches at the bound and no restarts.
InstanceSearchOptions PlanArenaSearch();

// A valid plan never larger than PlanArena's greedy placements
// (PlanArena(buffers, alignment, 0)) when they are run (always, but above
// 1,000 buffers with lowest_first_when_large only when ten of them fit the
// time); optimal when it is the lower bound or
// a search proved the capacity just below it impossible. With a finite `seconds` the result depends on the machine's
// speed and load. Errors as PlanArena. Anchored buffers (Concat slices) are
// placed with their anchor as one piece.
// With options.lowest_first_when_large, above 1,000 buffers the start is
// the best of PlanArenaFast's placement and lowest-first placements
// (lowest_first.h: TAW and TWA, then in turn restarts under shuffled TAW
// and climbs from the best plan so far, ShuffleNearTop, each chain going on
// while its last placement's time fits in `seconds`; a placement still
// running at the deadline is dropped), and PlanArena's when ten of its placements are
// estimated to fit in `seconds`. The restarts are skipped when their tables
// would exceed kMaxArenaSearchCells (`cut`: size_limit).
// Within `limits` (arena_planner.h): PlanArena gets them, the restarts stop
// at the deadline or on cancellation, and their tables are charged to the
// account (skipped when it refuses); `cut` (may be null) says what was cut.
absl::StatusOr<ArenaPlan> PlanArenaInstance(absl::Span<const ArenaBuffer> buffers, int64_t alignment,
                                            const InstanceSearchOptions& options, const ArenaLimits& limits = {},
                                            ArenaCut* cut = nullptr);

// PlanArenaInstance's chains alone, from `plan` (a valid plan of `buffers`)
// towards `bound` (a size no plan can beat): the static ranks at the bound,
// then shuffled restarts below the best plan found (none when the buffers
// make more than 1,000 blocks: see PlanArenaSearch), until a plan reaches
// `bound`, a search proves the capacity just below the best impossible, or
// `options.seconds` after `start` (or `limits`) run out. With `fixed` (one
// entry per buffer, an offset to keep or -1; empty: none) the searches
// place the free buffers around the fixed ones (PackAroundFixed), and `plan`
// must keep them. Returns the best plan (`plan` itself when nothing beat
// it); `cut` (may be null) as PlanArenaInstance's.
ArenaPlan SearchBelowPlan(absl::Span<const ArenaBuffer> buffers, absl::Span<const int64_t> fixed, int64_t alignment,
                          ArenaPlan plan, int64_t bound, const InstanceSearchOptions& options,
                          const ArenaLimits& limits, ArenaCut* cut,
                          std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now());

}  // namespace serenity

#endif  // SERENITY_CORE_ARENA_INSTANCE_SEARCH_H_
