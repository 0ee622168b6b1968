#include "core/arena/instance_search.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <functional>
#include <iterator>
#include <limits>
#include <mutex>
#include <random>
#include <utility>
#include <vector>

#include "core/arena/lowest_first.h"
#include "core/arena/offset_search.h"
#include "core/util/deadline.h"

namespace serenity {
namespace {

using Clock = std::chrono::steady_clock;

// Each static-rank attempt at the bound may take this share of the time
// (measured: TWA packs challenging_A, C, E, F, G, I and K, the slowest, E,
// in about 45 ms; TAW packs B and H in under 30 ms; bench/RESULTS.md).
constexpr double kStaticShare = 0.12;
// Nodes per restart (5-15 ms on challenging_D and J), and the capacity each
// restart aims at: a quarter of the way from the best arena to the floor.
// Whether a restart packs depends little on how close its capacity is to
// the best arena (challenging_D: packings found at 1,038,336 by a search
// that gives up at 1,044,504), so the aim does not move closer after
// failures; measured against halving the step (bench/RESULTS.md).
constexpr int64_t kRestartNodes = 1000;
constexpr int kGapDivisor = 4;
// Above this many buffers an instance is large: the lowest-first placements
// (lowest_first.h) come first, and PlanArena's placements run only when
// their estimated time fits the instance's time (at 10^5 random buffers one
// placement scans for about 25 s; bench/arena_scaling.sh).
constexpr size_t kLargeInstance = 1000;
constexpr int kArenaPlacements = 10;  // PlanArena's orders times fits
// Each climb swaps one in kClimbSwapOdds of the blocks near the top (at
// 10^6 random buffers, from a restart at 1.012x, one climb at one in 20
// reached 1.006x; at one in 5 most climbs ended 2-3% higher).
constexpr int kClimbSwapOdds = 20;
// A plan's arena (PlanArenaSearch) climbs from lowest-first placements with
// no clock: as many placements (three ranks, then climbs, at most
// kMaxClimbs) as kPlacementWork / (blocks + co-live pairs / 32) allows. A
// placement costs about 1.5 us per unit of that (measured: 1.4 ms for a
// 1,000-op layered DAG's arena, 35 ms at 20,000 ops, 442 ms for a 5,000-op
// training graph's 7,058 buffers and 8.8 million co-live pairs), so at most
// ~0.3 s; a 1,000-op layered DAG's arena went from 1.24x its bound to 1.07x.
constexpr int64_t kPlacementWork = 200000;
constexpr double kSecondsPerWork = 1.5e-6;
constexpr int64_t kMaxClimbs = 64;

// Whether PlanArena's greedy placements, all kArenaPlacements of them, fit
// by their estimate in the time left before `deadline`.
bool GreedyPlacementsFit(absl::Span<const ArenaBuffer> buffers, Clock::time_point deadline) {
  const double seconds_left = std::chrono::duration<double>(deadline - std::min(deadline, Clock::now())).count();
  return kArenaPlacements * EstimatePlacementSeconds(buffers) <= seconds_left;
}

// A large instance's start: PlanArenaFast's placement, then lowest-first
// placements (lowest_first.h), on `chains` tasks on `executor`, first
// under the two ranks that did best on large instances (TAW and TWA; WAT
// ended 2-5% above them at 10^5 and 10^6 buffers), then restarts under
// shuffled ranks (their results scatter by a few percent) and climbs from
// the best plan found (placements under its ranking shuffled near its top),
// each chain going on while its last placement's time fits before
// `deadline` (a placement still running then is dropped; none starts once
// it is past); the instance is set up once (LowestFirstPlacer) for all of
// them. Before them, PlanArena's placements when their estimated time fits
// the instance's time. The smallest plan.
absl::StatusOr<ArenaPlan> PlanLargeInstance(absl::Span<const ArenaBuffer> buffers, int64_t alignment,
                                            const InstanceSearchOptions& options, const ArenaLimits& limits,
                                            Clock::time_point deadline, ArenaCut* cut) {
  const int64_t bound = AlignedArenaLowerBound(buffers, alignment);
  absl::StatusOr<ArenaPlan> fast = PlanArenaFast(buffers, alignment);  // n log n: always affordable
  if (!fast.ok() || fast->size_bytes <= bound) return fast;
  ArenaPlan best = *std::move(fast);
  const int chains = std::max(1, options.chains);
  Executor* executor = chains > 1 ? options.executor : nullptr;
  ArenaLimits placement_limits = limits;
  placement_limits.deadline = std::min(deadline, limits.deadline);
  // PlanArena's placements first, when ten of them fit the instance's time:
  // they often reach the bound at once (they were the start before the
  // lowest-first placements).
  if (GreedyPlacementsFit(buffers, placement_limits.deadline)) {
    // Within the instance's time: a cut by its own clock is no cut.
    ArenaCut placed_cut;
    absl::StatusOr<ArenaPlan> placed = PlanArena(
        buffers, alignment, options.start_with_searches ? kDefaultSkylineNodes : 0, placement_limits, &placed_cut);
    if (!placed.ok()) return placed;
    if (placed->size_bytes < best.size_bytes) best = *std::move(placed);
    if (!placed_cut.reason.empty() &&
        (Clock::now() >= limits.deadline ||
         (limits.cancelled != nullptr && limits.cancelled->load(std::memory_order_relaxed)) ||
         placed_cut.reason == "memory_limit")) {
      *cut = placed_cut;
    }
    if (best.size_bytes <= bound) return best;
  }
  // The setup costs seconds at 10^6 buffers: none of it past the deadline.
  if (Clock::now() >= placement_limits.deadline) return best;  // PlanArenaFast's (or PlanArena's) plan
  absl::StatusOr<LowestFirstPlacer> placer = LowestFirstPlacer::Create(buffers, alignment);
  if (!placer.ok()) return placer.status();
  // Placement p (counting from 0, chain p % chains making it): first TAW
  // and TWA unshuffled; then, with a finite time, each chain goes on on its
  // own while its last placement's time fits before the deadline, even
  // placements restarting under TAW shuffled with seed p + 1 (TWA's
  // shuffles ended 1.024-1.045x at 10^6 random buffers where TAW's ended
  // 1.011-1.033x) and odd ones climbing from the best plan of all chains
  // (its ranking shuffled near the top, ShuffleNearTop, kept when no
  // larger); at most options.max_restarts of them per chain. The first
  // max(chains, 2) placements always run.
  const OffsetRank ranks[] = {OffsetRank::kTotalAreaWidth, OffsetRank::kTotalWidthArea};
  std::vector<std::vector<size_t>> base(2);  // the rankings under ranks[0] and ranks[1], once
  {
    std::vector<std::function<void()>> tasks;
    for (size_t r = 0; r < 2; ++r) tasks.push_back([&, r] { base[r] = placer->Ranking(ranks[r]); });
    RunAll(executor, tasks);
  }
  const int64_t first_round = std::max(chains, 2);
  std::atomic<bool> reached{false}, stopped{false};
  std::mutex mu;  // guards the three below
  ArenaPlan shared_plan;
  std::vector<size_t> shared_ranked;
  absl::Status error;
  std::vector<std::function<void()>> tasks;
  for (int c = 0; c < chains; ++c) {
    tasks.push_back([&, c] {
      Clock::duration last{0};
      int64_t later_placements = 0;
      for (int64_t p = c;; p += chains) {
        const bool later = p >= first_round;
        const Clock::time_point begin = Clock::now();
        if (later && (!std::isfinite(options.seconds) || reached.load() || stopped.load() ||
                      begin + last > placement_limits.deadline || later_placements++ >= options.max_restarts)) {
          return;
        }
        if (begin >= placement_limits.deadline) {
          stopped.store(true);
          return;
        }
        std::mt19937_64 random(static_cast<uint64_t>(p + 1));
        std::vector<size_t> ranked;
        bool climbing = false;
        if (later && p % 2 == 1) {
          std::lock_guard<std::mutex> lock(mu);
          if (!shared_ranked.empty()) {
            ranked = shared_ranked;
            ShuffleNearTop(*placer, shared_plan, kClimbSwapOdds, random, &ranked);
            climbing = true;
          }
        }
        if (!climbing) {
          ranked = base[p == 1 ? 1 : 0];
          if (p >= 2) ShuffleNeighbours(&ranked, random);  // as the search's restarts
        }
        absl::StatusOr<ArenaPlan> plan = placer->Place(ranked, placement_limits);
        if (absl::IsDeadlineExceeded(plan.status()) || absl::IsCancelled(plan.status())) {
          stopped.store(true);
          return;
        }
        std::lock_guard<std::mutex> lock(mu);
        if (!plan.ok()) {
          error = plan.status();
          stopped.store(true);
          return;
        }
        // A climb keeps an equal plan too, so the ranking drifts.
        if (shared_ranked.empty() || plan->size_bytes < shared_plan.size_bytes ||
            (climbing && plan->size_bytes == shared_plan.size_bytes)) {
          shared_plan = *std::move(plan);
          shared_ranked = std::move(ranked);
        }
        if (shared_plan.size_bytes <= bound) reached.store(true);
        last = Clock::now() - begin;
      }
    });
  }
  RunAll(executor, tasks);
  if (!error.ok()) return error;
  if (!shared_ranked.empty() && shared_plan.size_bytes < best.size_bytes) best = std::move(shared_plan);
  return best;
}

// The blocks a search places one per node (lone buffers of non-zero size
// and anchors; fixed buffers are not placed).
int64_t SearchBlocks(absl::Span<const ArenaBuffer> buffers, absl::Span<const int64_t> fixed) {
  int64_t blocks = 0;
  for (size_t i = 0; i < buffers.size(); ++i) {
    blocks += buffers[i].anchor < 0 && buffers[i].size > 0 && (fixed.empty() || fixed[i] < 0);
  }
  return blocks;
}

// `plan` or a smaller one: lowest-first placements (lowest_first.h) under
// the three ranks, then climbs from the best of them (ShuffleNearTop, the
// random draws seeded alike every time), as many in all as kPlacementWork
// allows, stopping at `bound`. Within `limits`: a placement cut by
// the deadline or a cancellation ends them, and `cut` says so.
ArenaPlan ClimbFromLowestFirst(absl::Span<const ArenaBuffer> buffers, int64_t alignment, ArenaPlan plan, int64_t bound,
                               const ArenaLimits& limits, ArenaCut* cut) {
  const int64_t work = std::max<int64_t>(1, SearchBlocks(buffers, {}) + CountCoLivePairs(buffers) / 32);
  int64_t placements = kPlacementWork / work;
  if (limits.deadline != Clock::time_point::max()) {  // and those that fit the time left
    const double seconds = std::chrono::duration<double>(limits.deadline - Clock::now()).count();
    placements = std::min(placements, static_cast<int64_t>(std::max(0.0, seconds) / (kSecondsPerWork * work)));
  }
  if (placements == 0) return plan;
  absl::StatusOr<LowestFirstPlacer> placer = LowestFirstPlacer::Create(buffers, alignment);
  if (!placer.ok()) return plan;  // PlanArena placed these buffers: not expected
  ArenaPlan best;
  std::vector<size_t> best_ranked;
  // Places `ranked`; false when the climbs should end (the bound reached,
  // or cut).
  const auto place = [&](std::vector<size_t> ranked, bool climbing) {
    absl::StatusOr<ArenaPlan> placed = placer->Place(ranked, limits);
    if (!placed.ok()) {
      cut->reason = absl::IsCancelled(placed.status()) ? "cancelled" : "time_limit";
      cut->used = "greedy placement";
      return false;
    }
    // A climb keeps an equal plan too, so the ranking drifts.
    if (best_ranked.empty() || placed->size_bytes < best.size_bytes ||
        (climbing && placed->size_bytes == best.size_bytes)) {
      best = *std::move(placed);
      best_ranked = std::move(ranked);
    }
    return best.size_bytes > bound;
  };
  bool going = true;
  int64_t placed = 0;
  for (OffsetRank rank : {OffsetRank::kTotalAreaWidth, OffsetRank::kTotalWidthArea, OffsetRank::kWidthAreaTotal}) {
    if (going && placed++ < placements) going = place(placer->Ranking(rank), false);
  }
  const int64_t climbs = std::min(kMaxClimbs, placements - std::min<int64_t>(placements, 3));
  std::mt19937_64 random(1);
  for (int64_t c = 0; c < climbs && going; ++c) {
    std::vector<size_t> ranked = best_ranked;
    ShuffleNearTop(*placer, best, kClimbSwapOdds, random, &ranked);
    going = place(std::move(ranked), true);
  }
  return !best_ranked.empty() && best.size_bytes < plan.size_bytes ? std::move(best) : std::move(plan);
}

// The best plan of all chains, and a lower bound on the optimum (raised
// when a search proves a capacity impossible).
class SharedBest {
 public:
  SharedBest(absl::Span<const ArenaBuffer> buffers, ArenaPlan plan, int64_t bound)
      : buffers_(buffers), plan_(std::move(plan)), floor_(bound) {
    done_ = plan_.size_bytes <= floor_;
  }

  int64_t size() {
    std::lock_guard<std::mutex> lock(mu_);
    return plan_.size_bytes;
  }
  int64_t floor() {
    std::lock_guard<std::mutex> lock(mu_);
    return floor_;
  }
  const std::atomic<bool>* done() const { return &done_; }

  void Offer(std::vector<int64_t> offsets) {
    int64_t size = 0;
    for (size_t i = 0; i < offsets.size(); ++i) size = std::max(size, offsets[i] + buffers_[i].size);
    std::lock_guard<std::mutex> lock(mu_);
    if (size < plan_.size_bytes) {
      plan_.size_bytes = size;
      plan_.offsets = std::move(offsets);
    }
    if (plan_.size_bytes <= floor_) done_ = true;
  }

  // Nothing fits within `capacity`.
  void Refuted(int64_t capacity) {
    std::lock_guard<std::mutex> lock(mu_);
    floor_ = std::max(floor_, capacity + 1);
    if (plan_.size_bytes <= floor_) done_ = true;
  }

  ArenaPlan Take() {
    std::lock_guard<std::mutex> lock(mu_);
    return std::move(plan_);
  }

 private:
  absl::Span<const ArenaBuffer> buffers_;
  std::mutex mu_;
  ArenaPlan plan_;
  int64_t floor_;
  std::atomic<bool> done_{false};
};

// One chain: its static rank(s) at the floor, then shuffled restarts.
void RunChain(absl::Span<const ArenaBuffer> buffers, absl::Span<const int64_t> fixed, int64_t alignment,
              const InstanceSearchOptions& options, int chains, int chain, Clock::time_point end,
              const std::atomic<bool>* cancelled, std::atomic<bool>* stopped, SharedBest* best) {
  const OffsetRank statics[] = {OffsetRank::kTotalWidthArea, OffsetRank::kTotalAreaWidth, OffsetRank::kWidthAreaTotal};
  const int static_attempts = chains == 1 ? 2 : 1;
  for (int a = 0; a < static_attempts && options.static_nodes > 0 && !best->done()->load(); ++a) {
    OffsetSearchOptions search;
    search.rank = statics[(chain + a) % 3];
    search.max_nodes = options.static_nodes;
    search.deadline = std::min(end, TimeAfter(Clock::now(), kStaticShare * options.seconds));
    search.cancel = best->done();
    const int64_t capacity = best->floor();
    std::vector<int64_t> offsets;
    const PackingResult result = PackAroundFixed(buffers, fixed, alignment, capacity, search, &offsets);
    if (result == PackingResult::kPacked) best->Offer(std::move(offsets));
    if (result == PackingResult::kImpossible) best->Refuted(capacity);
  }
  // A restart places one block per node: with more blocks than its nodes
  // it cannot pack.
  const int64_t restarts = SearchBlocks(buffers, fixed) > kRestartNodes ? 0 : options.max_restarts;
  for (int64_t restart = 0; restart < restarts; ++restart) {
    if (best->done()->load()) return;
    if (Clock::now() >= end || (cancelled != nullptr && cancelled->load(std::memory_order_relaxed))) {
      stopped->store(true);
      return;
    }
    const int64_t size = best->size(), floor = best->floor();
    // Around fixed buffers a search packs far more often at the floor, where
    // the sections' room prunes hardest, than a little above it
    // (bench/RESULTS.md): three restarts in four aim there.
    const bool at_floor = !fixed.empty() && restart % 4 != 3;
    const int64_t capacity =
        at_floor ? floor : std::max(floor, size - std::max(alignment, (size - floor) / kGapDivisor));
    OffsetSearchOptions search;
    // Around fixed buffers, all three ranks in turn: on the pinned family
    // (bench/pinned_arena.sh) each instance packed at the floor under one
    // rank only (K under WAT, C and H under TAW, the others under TWA).
    search.rank = fixed.empty()
                      ? ((restart + chain) % 2 == 0 ? OffsetRank::kTotalWidthArea : OffsetRank::kWidthAreaTotal)
                      : statics[(restart + chain) % 3];
    search.max_nodes = kRestartNodes;
    search.deadline = end;
    search.shuffle_seed = (static_cast<uint64_t>(chain) + 1) << 32 | static_cast<uint64_t>(restart + 1);
    search.cancel = best->done();
    std::vector<int64_t> offsets;
    const PackingResult result = PackAroundFixed(buffers, fixed, alignment, capacity, search, &offsets);
    if (result == PackingResult::kPacked) best->Offer(std::move(offsets));
    if (result == PackingResult::kImpossible) best->Refuted(capacity);
  }
}

}  // namespace

InstanceSearchOptions PlanArenaSearch() {
  InstanceSearchOptions options;
  options.seconds = std::numeric_limits<double>::infinity();
  options.static_nodes = 0;
  options.max_restarts = 16;
  options.start_with_searches = true;
  options.lowest_first_when_large = false;
  return options;
}

absl::StatusOr<ArenaPlan> PlanArenaInstance(absl::Span<const ArenaBuffer> buffers, int64_t alignment,
                                            const InstanceSearchOptions& options, const ArenaLimits& limits,
                                            ArenaCut* cut) {
  const Clock::time_point start = Clock::now();
  ArenaCut ignored;
  if (cut == nullptr) cut = &ignored;
  // By default the greedy placements only: the chains' static ranks search
  // further.
  const bool large = options.lowest_first_when_large && buffers.size() > kLargeInstance;
  // A plan's arena above kLargeInstance blocks climbs from lowest-first
  // placements first (ClimbFromLowestFirst, from PlanArenaFast's placement),
  // then keeps PlanArena's greedy placements when smaller: the climbs cost
  // n log n per placement where a greedy placement scans each buffer's
  // co-live ones, and where the time left fits no greedy placement
  // (100,000-op graphs) the climbs still may. Above kLargeInstance blocks
  // the searches at the bound take seconds (5,000 blocks of a layered DAG's
  // plan: 2.5 s, not reaching the bound).
  const bool climbs_first =
      options.start_with_searches && !large && SearchBlocks(buffers, {}) > static_cast<int64_t>(kLargeInstance);
  absl::StatusOr<ArenaPlan> plan;
  int64_t bound = 0;  // AlignedArenaLowerBound, once the buffers are checked (PlanArenaFast, PlanArena)
  if (climbs_first) {
    absl::StatusOr<ArenaPlan> fast = PlanArenaFast(buffers, alignment);
    if (!fast.ok()) return fast;
    bound = AlignedArenaLowerBound(buffers, alignment);
    ArenaCut climb_cut;
    const int64_t fast_size = fast->size_bytes;
    ArenaPlan climbed = ClimbFromLowestFirst(buffers, alignment, *std::move(fast), bound, limits, &climb_cut);
    const char* climbed_used = climbed.size_bytes < fast_size ? "lowest-first placements" : "fast greedy placement";
    if (climbed.size_bytes <= bound) return climbed;
    // PlanArena's placements only when all of them fit the time left, as
    // for a large instance: cut part way they only cost the time (a
    // 100,000-op layered DAG's plan spent most of its arena phase on
    // placements the climbs' plan beat, bench/RESULTS.md). The planner
    // still compares the TFLite-style placement (its first) when that fits.
    if (!GreedyPlacementsFit(buffers, limits.deadline)) {
      *cut = climb_cut;
      if (cut->reason.empty()) cut->reason = "time_limit";
      cut->used = climbed_used;
      return climbed;
    }
    plan = PlanArena(buffers, alignment, /*skyline_nodes=*/0, limits, cut);
    if (!plan.ok()) return plan;
    if (climbed.size_bytes < plan->size_bytes) {
      *plan = std::move(climbed);
      if (!cut->reason.empty()) cut->used = climbed_used;
    }
    if (cut->reason.empty()) *cut = climb_cut;
    // Nothing more: the searches at the bound take seconds here without
    // reaching it (above), so they ran until the phase's deadline, a
    // different arena on every machine, and on the layered DAGs and long
    // graphs of bench/RESULTS.md never gave a smaller one.
    return plan;
  }
  plan = large ? PlanLargeInstance(buffers, alignment, options, limits, TimeAfter(start, options.seconds), cut)
               : PlanArena(buffers, alignment, /*skyline_nodes=*/0, limits, cut);
  if (!plan.ok()) return plan;
  bound = AlignedArenaLowerBound(buffers, alignment);
  if (plan->size_bytes <= bound || !cut->reason.empty()) return plan;
  // With start_with_searches, PlanArena's searches at the bound, cheapest
  // first: by offsets, then the restarts, then by skylines (a failed skyline
  // search costs ten times a failed search by offsets, and the restarts
  // reach the bound where neither does, as on darts_v2_cifar10).
  // (A large instance's start ran them all already.)
  const bool search_at_bound = options.start_with_searches && !large;
  ArenaSearches searches;
  searches.offset_nodes = AtBoundOffsetNodes(buffers.size());
  bool refuted = false;  // a search proved that nothing packs at the bound
  if (search_at_bound) {
    // Up to kLargeInstance blocks, the climbs after the searches by
    // offsets, which reach the bound of most plans' arenas at once.
    *plan = SearchAtBound(buffers, alignment, *std::move(plan), searches, limits, cut, &refuted);
    if (plan->size_bytes <= bound || !cut->reason.empty()) return plan;
    *plan = ClimbFromLowestFirst(buffers, alignment, *std::move(plan), bound, limits, cut);
    if (plan->size_bytes <= bound || !cut->reason.empty()) return plan;
  }
  ArenaPlan best = SearchBelowPlan(buffers, {}, alignment, *std::move(plan), bound, options, limits, cut, start);
  if (search_at_bound && !refuted && best.size_bytes > bound && cut->reason.empty()) {
    searches.offset_nodes = 0;
    searches.skyline_nodes = kDefaultSkylineNodes;
    best = SearchAtBound(buffers, alignment, std::move(best), searches, limits, cut);
  }
  return best;
}

ArenaPlan SearchBelowPlan(absl::Span<const ArenaBuffer> buffers, absl::Span<const int64_t> fixed, int64_t alignment,
                          ArenaPlan plan, int64_t bound, const InstanceSearchOptions& options,
                          const ArenaLimits& limits, ArenaCut* cut, std::chrono::steady_clock::time_point start) {
  ArenaCut ignored;
  if (cut == nullptr) cut = &ignored;
  if (plan.size_bytes <= bound) return plan;
  // The restarts' tables, as PlanArena's searches count them, per chain.
  const int chains = std::max(1, options.chains);
  int64_t cells = 2 * CountCoLivePairs(buffers);
  int64_t fixed_cells = 0;  // a fixed buffer's sections: its interval and band there (32 bytes)
  if (cells <= kMaxArenaSearchCells) {
    const TimeSections sections = SplitIntoSections(buffers);
    for (size_t i = 0; i < sections.spans.size(); ++i) {
      const int64_t span = sections.spans[i].second - sections.spans[i].first;
      cells += span;
      if (!fixed.empty() && fixed[i] >= 0) fixed_cells += span;
    }
    cells += sections.count;
  }
  if (cells > kMaxArenaSearchCells) {  // as PlanArena's searches
    cut->reason = "size_limit";
    cut->used = "greedy placement";
    return plan;
  }
  MemoryCharge charge(limits.memory);
  if (!charge.TryAdd(chains * (8 * cells + 32 * fixed_cells + 64 * static_cast<int64_t>(buffers.size())))) {
    cut->reason = "memory_limit";
    cut->used = "greedy placement";
    return plan;
  }
  const Clock::time_point end = std::min(TimeAfter(start, options.seconds), limits.deadline);
  std::atomic<bool> stopped{false};
  SharedBest best(buffers, std::move(plan), bound);
  std::vector<std::function<void()>> tasks;
  for (int chain = 0; chain < chains; ++chain) {
    tasks.push_back([&, chain] {
      RunChain(buffers, fixed, alignment, options, chains, chain, end, limits.cancelled, &stopped, &best);
    });
  }
  RunAll(options.executor, tasks);
  // A bare instance's own clock ending the restarts is the normal case;
  // the caller's deadline or cancellation is a cut.
  if (stopped.load() && (Clock::now() >= limits.deadline ||
                         (limits.cancelled != nullptr && limits.cancelled->load(std::memory_order_relaxed)))) {
    cut->reason = Clock::now() >= limits.deadline ? "time_limit" : "cancelled";
    cut->used = "greedy placement";
  }
  return best.Take();
}

}  // namespace serenity
