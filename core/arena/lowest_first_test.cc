#include "core/arena/lowest_first.h"

#include <atomic>
#include <chrono>
#include <random>
#include <vector>

#include "core/arena/arena_verifier.h"
#include "core/arena/offset_search.h"
#include "gtest/gtest.h"
#include "tests/testing/arena_instances.h"

namespace serenity {
namespace {

constexpr OffsetRank kRanks[] = {OffsetRank::kWidthAreaTotal, OffsetRank::kTotalAreaWidth, OffsetRank::kTotalWidthArea};

TEST(LowestFirstTest, ValidOnRandomInstancesWithGroups) {
  std::mt19937 rng(17);
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<ArenaBuffer> buffers = testing::RandomSmallArenaInstance(1 + trial % 9, 0, rng);
    if (trial % 4 == 0 && buffers.size() >= 3) {  // buffer 0 anchors the next two
      buffers[1].anchor = 0;
      buffers[1].offset_from_anchor = buffers[0].size;
      buffers[2].anchor = 0;
      buffers[2].offset_from_anchor = buffers[0].size + buffers[1].size + 3;
    }
    const int64_t alignment = trial % 3 == 0 ? 8 : 1;
    for (OffsetRank rank : kRanks) {
      absl::StatusOr<ArenaPlan> plan = PlanArenaLowestFirst(buffers, alignment, rank);
      ASSERT_TRUE(plan.ok()) << plan.status();
      ASSERT_TRUE(VerifyArena(buffers, *plan).ok()) << "trial " << trial << ": " << VerifyArena(buffers, *plan);
      EXPECT_GE(plan->size_bytes, ArenaLowerBound(buffers));
    }
  }
}

// It is the search's first descent: where that search (with room enough
// that it never backtracks) packs, the arena is the same size.
TEST(LowestFirstTest, SameOffsetsAsTheSearchsFirstDescent) {
  std::mt19937 rng(23);
  int compared = 0;
  for (int trial = 0; trial < 200; ++trial) {
    // Distinct steps of starts and ends keep sections and ranks alike.
    const std::vector<ArenaBuffer> buffers = testing::RandomSmallArenaInstance(2 + trial % 7, 1, rng);
    for (OffsetRank rank : kRanks) {
      absl::StatusOr<ArenaPlan> plan = PlanArenaLowestFirst(buffers, 1, rank);
      ASSERT_TRUE(plan.ok());
      std::vector<int64_t> offsets;
      OffsetSearchOptions options;
      options.rank = rank;
      options.max_nodes = static_cast<int64_t>(buffers.size()) + 1;  // no backtracking
      if (PackByLowestOffsets(buffers, 1, int64_t{1} << 40, options, &offsets) != PackingResult::kPacked) continue;
      int64_t size = 0;
      for (size_t i = 0; i < buffers.size(); ++i) size = std::max(size, offsets[i] + buffers[i].size);
      EXPECT_EQ(plan->size_bytes, size) << "trial " << trial;
      ++compared;
    }
  }
  EXPECT_GT(compared, 300);
}

// Thousands of buffers shaped like a schedule's (one made per step, most
// read soon, some kept long): valid, near the bound, and well below the
// greedy placement by size (measured: 1.067x against 1.189x).
TEST(LowestFirstTest, ThousandsOfBuffersNearTheBound) {
  std::mt19937 rng(3);
  std::vector<ArenaBuffer> buffers;
  for (int i = 0; i < 20000; ++i) {
    const int first = static_cast<int>(rng() % 20000);
    const int length = rng() % 50 == 0 ? static_cast<int>(rng() % 2000) : static_cast<int>(rng() % 4);
    buffers.push_back({64 * static_cast<int64_t>(1 + rng() % 1000), first, first + length});
  }
  absl::StatusOr<ArenaPlan> plan = PlanArenaLowestFirst(buffers, 64, OffsetRank::kTotalAreaWidth);
  ASSERT_TRUE(plan.ok());
  ASSERT_TRUE(VerifyArena(buffers, *plan).ok()) << VerifyArena(buffers, *plan);
  absl::StatusOr<ArenaPlan> greedy = PlanArenaGreedyBySize(buffers, 64);
  ASSERT_TRUE(greedy.ok());
  const int64_t bound = ArenaLowerBound(buffers);
  EXPECT_LE(plan->size_bytes, bound * 108 / 100);
  EXPECT_LT(plan->size_bytes, greedy->size_bytes);
}

// A deadline already past, or a set cancel flag, stops it.
TEST(LowestFirstTest, StopsAtTheDeadlineOrOnCancel) {
  std::vector<ArenaBuffer> buffers;
  for (int i = 0; i < 20000; ++i) buffers.push_back({64, i % 500, i % 500 + 10});
  ArenaLimits limits;
  limits.deadline = std::chrono::steady_clock::now();
  EXPECT_EQ(PlanArenaLowestFirst(buffers, 1, OffsetRank::kTotalAreaWidth, 0, limits).status().code(),
            absl::StatusCode::kDeadlineExceeded);
  const std::atomic<bool> cancelled{true};
  limits = ArenaLimits();
  limits.cancelled = &cancelled;
  EXPECT_EQ(PlanArenaLowestFirst(buffers, 1, OffsetRank::kTotalAreaWidth, 0, limits).status().code(),
            absl::StatusCode::kCancelled);
  EXPECT_TRUE(PlanArenaLowestFirst(buffers, 1, OffsetRank::kTotalAreaWidth).ok());
}

TEST(LowestFirstTest, RefusesBadInput) {
  EXPECT_FALSE(PlanArenaLowestFirst({{-1, 0, 1}}, 1, OffsetRank::kTotalWidthArea).ok());
  EXPECT_FALSE(PlanArenaLowestFirst({{1, 3, 1}}, 1, OffsetRank::kTotalWidthArea).ok());
  EXPECT_FALSE(PlanArenaLowestFirst({{1, 0, 1}}, 0, OffsetRank::kTotalWidthArea).ok());
  ArenaBuffer anchored{4, 0, 1, 5, 0};
  EXPECT_FALSE(PlanArenaLowestFirst({anchored}, 1, OffsetRank::kTotalWidthArea).ok());
}

}  // namespace
}  // namespace serenity
