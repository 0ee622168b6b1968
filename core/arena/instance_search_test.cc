#include "core/arena/instance_search.h"

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "common/thread_pool.h"
#include "core/arena/arena_verifier.h"
#include "core/arena/lowest_first.h"
#include "gtest/gtest.h"
#include "tests/testing/arena_instances.h"

namespace serenity {
namespace {

constexpr double kUnlimited = std::numeric_limits<double>::infinity();

// On small instances the searches end (they pack, or prove a capacity
// impossible and raise the floor), so the chains reach the optimum: on one
// chain here, and on two chains of a pool.
TEST(InstanceSearchTest, SmallInstancesReachTheOptimum) {
  std::mt19937 rng(17);
  ThreadPool pool(2);
  for (int trial = 0; trial < 150; ++trial) {
    const std::vector<ArenaBuffer> buffers = testing::RandomSmallArenaInstance(2 + trial % 6, 0, rng);
    const int64_t alignment = trial % 3 == 0 ? 4 : 1;
    const int64_t optimum = testing::BruteForceArena(buffers, alignment);
    InstanceSearchOptions options;
    options.seconds = kUnlimited;
    options.max_restarts = 30;
    if (trial % 2 == 1) {
      options.chains = 2;
      options.executor = &pool;
    }
    absl::StatusOr<ArenaPlan> plan = PlanArenaInstance(buffers, alignment, options);
    ASSERT_TRUE(plan.ok()) << plan.status();
    ASSERT_TRUE(VerifyArena(buffers, *plan).ok()) << "trial " << trial << ": " << VerifyArena(buffers, *plan);
    EXPECT_EQ(plan->size_bytes, optimum) << "trial " << trial;
  }
}

// On a hard instance the restarts improve on PlanArena's one pass (one
// chain and limits instead of a clock: the same result on every machine).
TEST(InstanceSearchTest, RestartsImproveOnAHardInstance) {
  absl::StatusOr<ArenaInstance> instance = testing::ReadChallengingInstance("D");
  ASSERT_TRUE(instance.ok()) << instance.status();
  absl::StatusOr<ArenaPlan> planned = PlanArena(instance->buffers, 1);
  ASSERT_TRUE(planned.ok()) << planned.status();
  InstanceSearchOptions options;
  options.seconds = kUnlimited;
  options.static_nodes = 5000;
  options.max_restarts = 40;
  absl::StatusOr<ArenaPlan> plan = PlanArenaInstance(instance->buffers, 1, options);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(VerifyArena(instance->buffers, *plan).ok()) << VerifyArena(instance->buffers, *plan);
  EXPECT_LT(plan->size_bytes, planned->size_bytes);
  EXPECT_GE(plan->size_bytes, ArenaLowerBound(instance->buffers));
  absl::StatusOr<ArenaPlan> again = PlanArenaInstance(instance->buffers, 1, options);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->offsets, plan->offsets);
}

// A chain that packs at the bound stops the others: two chains on a pool
// end with challenging_F at its bound (TWA packs it; TAW alone does not
// within these nodes, and is cancelled).
TEST(InstanceSearchTest, ChainsOnAPoolStopAtTheBound) {
  absl::StatusOr<ArenaInstance> instance = testing::ReadChallengingInstance("F");
  ASSERT_TRUE(instance.ok()) << instance.status();
  ThreadPool pool(2);
  InstanceSearchOptions options;
  options.seconds = kUnlimited;
  options.chains = 2;
  options.executor = &pool;
  options.max_restarts = 0;
  absl::StatusOr<ArenaPlan> plan = PlanArenaInstance(instance->buffers, 1, options);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(VerifyArena(instance->buffers, *plan).ok()) << VerifyArena(instance->buffers, *plan);
  EXPECT_EQ(plan->size_bytes, ArenaLowerBound(instance->buffers));
}

// Concat slices (anchors) are placed with their anchor: valid plans, never
// larger than PlanArena's; bad input gets PlanArena's errors.
TEST(InstanceSearchTest, AnchoredBuffersAndErrors) {
  std::vector<ArenaBuffer> buffers = {{64, 0, 3}, {32, 1, 2, 0, 64}, {32, 1, 2, 0, 96}, {96, 2, 4}, {128, 3, 5}};
  absl::StatusOr<ArenaPlan> planned = PlanArena(buffers, 16);
  absl::StatusOr<ArenaPlan> plan = PlanArenaInstance(buffers, 16, PlanArenaSearch());
  ASSERT_TRUE(planned.ok() && plan.ok());
  EXPECT_TRUE(VerifyArena(buffers, *plan).ok()) << VerifyArena(buffers, *plan);
  EXPECT_LE(plan->size_bytes, planned->size_bytes);
  buffers[3].last_step = 1;
  EXPECT_EQ(PlanArenaInstance(buffers, 16, InstanceSearchOptions()).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(PlanArenaInstance(buffers, 0, InstanceSearchOptions()).status().code(), absl::StatusCode::kInvalidArgument);
}

// A bare instance of thousands of buffers starts from lowest-first
// placements: valid, never above PlanArenaFast's, at the bound here (a
// schedule-like instance), on two chains; with no time at all the fast
// placement still gives a valid plan. PlanArenaSearch (every plan's arena)
// keeps PlanArena's start.
TEST(InstanceSearchTest, LargeInstancesStartLowestFirst) {
  std::mt19937 rng(5);
  std::vector<ArenaBuffer> buffers;
  for (int i = 0; i < 5000; ++i) {
    const int first = static_cast<int>(rng() % 5000);
    buffers.push_back({64 * static_cast<int64_t>(1 + rng() % 100), first, first + static_cast<int>(rng() % 3)});
  }
  ThreadPool pool(2);
  InstanceSearchOptions options;
  options.chains = 2;
  options.executor = &pool;
  options.seconds = 5;
  absl::StatusOr<ArenaPlan> fast = PlanArenaFast(buffers, 64);
  ASSERT_TRUE(fast.ok());
  absl::StatusOr<ArenaPlan> plan = PlanArenaInstance(buffers, 64, options);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_TRUE(VerifyArena(buffers, *plan).ok()) << VerifyArena(buffers, *plan);
  EXPECT_LE(plan->size_bytes, fast->size_bytes);
  EXPECT_EQ(plan->size_bytes, AlignedArenaLowerBound(buffers, 64));
  // One chain on the calling thread: restarts and climbs in turn.
  options.chains = 1;
  options.executor = nullptr;
  options.seconds = 1;
  plan = PlanArenaInstance(buffers, 64, options);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_TRUE(VerifyArena(buffers, *plan).ok()) << VerifyArena(buffers, *plan);
  EXPECT_LE(plan->size_bytes, fast->size_bytes);
  options.seconds = 0;
  plan = PlanArenaInstance(buffers, 64, options);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(VerifyArena(buffers, *plan).ok());
  EXPECT_FALSE(PlanArenaSearch().lowest_first_when_large);
}

// An instance like bench/make_arena_instances.py's random ones (most
// buffers short, a few live long; sizes log-uniform) that the first
// placements leave above the bound: the restarts and climbs run, every
// plan they keep is valid, and the result is never above the placements
// made without climbing (TAW and TWA unshuffled, the restarts).
TEST(InstanceSearchTest, LargeInstancesRestartAndClimbBelowTheFirstPlacements) {
  std::mt19937 rng(9);
  std::vector<ArenaBuffer> buffers;
  for (int i = 0; i < 20000; ++i) {
    const int kind = static_cast<int>(rng() % 100);
    const int length = kind < 85   ? 1 + static_cast<int>(rng() % 3)
                       : kind < 99 ? 8 + static_cast<int>(rng() % 500)
                                   : 512 + static_cast<int>(rng() % 8000);
    const double size = std::exp(std::uniform_real_distribution<double>(std::log(64.0), std::log(1 << 20))(rng));
    buffers.push_back({static_cast<int64_t>(size) / 64 * 64 + 64, i, i + length - 1});
  }
  // The placements the chain makes first and restarts with (placement p:
  // TAW shuffled with seed p + 1 for even p from 2), each on its own.
  int64_t restarts = std::numeric_limits<int64_t>::max();
  for (uint64_t p = 0; p <= 12; p += 2) {
    absl::StatusOr<ArenaPlan> plan = PlanArenaLowestFirst(buffers, 1, OffsetRank::kTotalAreaWidth, p == 0 ? 0 : p + 1);
    ASSERT_TRUE(plan.ok());
    restarts = std::min(restarts, plan->size_bytes);
  }
  absl::StatusOr<ArenaPlan> twa = PlanArenaLowestFirst(buffers, 1, OffsetRank::kTotalWidthArea);
  ASSERT_TRUE(twa.ok());
  restarts = std::min(restarts, twa->size_bytes);
  ASSERT_GT(restarts, AlignedArenaLowerBound(buffers, 1));  // something left to improve
  // One chain on the calling thread: after the first two placements, 12
  // restarts and climbs in turn (time to spare for slow builds, and the
  // same placements on every machine); no searches by offsets after them.
  InstanceSearchOptions options;
  options.seconds = 600;
  options.max_restarts = 12;
  options.static_nodes = 0;
  absl::StatusOr<ArenaPlan> plan = PlanArenaInstance(buffers, 1, options);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_TRUE(VerifyArena(buffers, *plan).ok()) << VerifyArena(buffers, *plan);
  EXPECT_LE(plan->size_bytes, restarts);
  // The same placements, fewer of them: never a smaller arena (a climb
  // keeps only plans no larger than the best).
  for (int64_t fewer : {3, 7}) {
    options.max_restarts = fewer;
    absl::StatusOr<ArenaPlan> shorter = PlanArenaInstance(buffers, 1, options);
    ASSERT_TRUE(shorter.ok()) << shorter.status();
    EXPECT_GE(shorter->size_bytes, plan->size_bytes) << fewer << " placements";
  }
}

// Every plan's arena (PlanArenaSearch) on schedule-like instances that
// neither the greedy placements nor the searches at the bound pack at the
// bound (a layered DAG's: each buffer read by some of the next 16 ops): it
// climbs from the lowest-first placements, so it is never above the best of
// them under the three ranks, where the greedy placements are; and it is
// the same arena every time (no clock). 800 blocks (the climbs after the
// searches by offsets) and 1,200 (before them).
TEST(InstanceSearchTest, PlanArenasClimbFromLowestFirstPlacements) {
  for (int n : {800, 1200}) {
    std::mt19937 rng(n);
    std::vector<ArenaBuffer> buffers;
    for (int i = 0; i < n; ++i) {
      int last = i;  // each of the next 16 ops reads it with odds 1 in 8
      for (int step = i + 1; step <= i + 16; ++step) {
        if (rng() % 8 == 0) last = step;
      }
      buffers.push_back({64 * static_cast<int64_t>(16 + rng() % 48), i, last});
    }
    int64_t lowest_first = std::numeric_limits<int64_t>::max();
    for (OffsetRank rank : {OffsetRank::kTotalAreaWidth, OffsetRank::kTotalWidthArea, OffsetRank::kWidthAreaTotal}) {
      absl::StatusOr<ArenaPlan> placed = PlanArenaLowestFirst(buffers, 64, rank);
      ASSERT_TRUE(placed.ok()) << placed.status();
      lowest_first = std::min(lowest_first, placed->size_bytes);
    }
    absl::StatusOr<ArenaPlan> greedy = PlanArena(buffers, 64, /*skyline_nodes=*/0);
    ASSERT_TRUE(greedy.ok()) << greedy.status();
    ASSERT_GT(greedy->size_bytes, lowest_first) << n;  // the climbs have something to give
    absl::StatusOr<ArenaPlan> plan = PlanArenaInstance(buffers, 64, PlanArenaSearch());
    ASSERT_TRUE(plan.ok()) << plan.status();
    ASSERT_TRUE(VerifyArena(buffers, *plan).ok()) << VerifyArena(buffers, *plan);
    EXPECT_LE(plan->size_bytes, lowest_first) << n;
    absl::StatusOr<ArenaPlan> again = PlanArenaInstance(buffers, 64, PlanArenaSearch());
    ASSERT_TRUE(again.ok()) << again.status();
    EXPECT_EQ(again->offsets, plan->offsets) << n;
  }
}

// Buffers too large to place (their bytes past PlanArena's bound) are an
// error before anything adds them up, on every path of a plan's arena:
// fewer than 1,000 buffers (PlanArena first) and more (the climbs first,
// from PlanArenaFast). Under UBSan an overflowing sum fails here.
TEST(InstanceSearchTest, PlanArenasRefuseBuffersTooLargeBeforeAddingThem) {
  for (int n : {2, 1200}) {
    std::vector<ArenaBuffer> buffers;
    for (int i = 0; i + 1 < n; ++i) buffers.push_back({1, i, i + 1});
    buffers.push_back({std::numeric_limits<int64_t>::max() - 1, 0, 1});
    for (int64_t alignment : {1, 64}) {
      absl::StatusOr<ArenaPlan> plan = PlanArenaInstance(buffers, alignment, PlanArenaSearch());
      EXPECT_EQ(plan.status().code(), absl::StatusCode::kOutOfRange) << n << " " << plan.status();
    }
  }
}

}  // namespace
}  // namespace serenity
