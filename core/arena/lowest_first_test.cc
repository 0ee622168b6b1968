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

// Lowest-first placement by its definition, in cubic time: repeatedly the
// unplaced block (AnchoredBlocks) whose lowest offset (the highest end of
// the placed blocks it shares a step with, rounded up to `alignment`) is
// the least, ties by position in `ranked`, goes there; its members at
// their offsets from it. Buffers of no block sit at 0.
std::vector<int64_t> LowestFirstByDefinition(absl::Span<const ArenaBuffer> buffers, int64_t alignment,
                                             const std::vector<AnchoredBlock>& blocks,
                                             const std::vector<size_t>& ranked) {
  std::vector<int64_t> block_offset(blocks.size(), -1);
  for (size_t placed = 0; placed < blocks.size(); ++placed) {
    size_t chosen = blocks.size();
    int64_t chosen_low = 0;
    for (size_t b : ranked) {  // earlier in `ranked` first: a tie keeps the first
      if (block_offset[b] >= 0) continue;
      int64_t low = 0;
      for (size_t p = 0; p < blocks.size(); ++p) {
        if (block_offset[p] < 0 || blocks[p].last < blocks[b].first || blocks[b].last < blocks[p].first) continue;
        low = std::max(low, block_offset[p] + blocks[p].extent);
      }
      low = (low + alignment - 1) / alignment * alignment;
      if (chosen == blocks.size() || low < chosen_low) chosen = b, chosen_low = low;
    }
    block_offset[chosen] = chosen_low;
  }
  std::vector<int64_t> offsets(buffers.size(), 0);
  for (size_t b = 0; b < blocks.size(); ++b) offsets[blocks[b].head] = block_offset[b];
  for (size_t i = 0; i < buffers.size(); ++i) {
    if (buffers[i].anchor >= 0)
      offsets[i] = offsets[static_cast<size_t>(buffers[i].anchor)] + buffers[i].offset_from_anchor;
  }
  return offsets;
}

// The placer set up once places as the definition says, under a ranking
// and under its shuffles, and as many times as asked; PlanArenaLowestFirst
// places as the placer under the same ranking.
TEST(LowestFirstTest, PlacerPlacesAsTheDefinitionSays) {
  std::mt19937 rng(29);
  for (int trial = 0; trial < 100; ++trial) {
    std::vector<ArenaBuffer> buffers = testing::RandomSmallArenaInstance(2 + trial % 9, trial % 2, rng);
    if (trial % 5 == 0 && buffers.size() >= 2) {  // buffer 0 anchors buffer 1
      buffers[1].anchor = 0;
      buffers[1].offset_from_anchor = 2;
    }
    const int64_t alignment = trial % 3 == 0 ? 4 : 1;
    absl::StatusOr<LowestFirstPlacer> placer = LowestFirstPlacer::Create(buffers, alignment);
    ASSERT_TRUE(placer.ok());
    // The placer's blocks are AnchoredBlocks', in the same order.
    const std::vector<AnchoredBlock> blocks = AnchoredBlocks(buffers);
    ASSERT_EQ(placer->blocks().size(), blocks.size());
    for (size_t b = 0; b < blocks.size(); ++b) ASSERT_EQ(placer->blocks()[b].head, blocks[b].head);
    for (OffsetRank rank : kRanks) {
      for (uint64_t seed : {uint64_t{0}, uint64_t{7}}) {
        std::vector<size_t> ranked = placer->Ranking(rank);
        if (seed != 0) {
          std::mt19937_64 random(seed);
          ShuffleNeighbours(&ranked, random);
        }
        const std::vector<int64_t> by_definition = LowestFirstByDefinition(buffers, alignment, blocks, ranked);
        const absl::StatusOr<ArenaPlan> wrapped = PlanArenaLowestFirst(buffers, alignment, rank, seed);
        ASSERT_TRUE(wrapped.ok());
        for (int again = 0; again < 2; ++again) {
          const absl::StatusOr<ArenaPlan> plan = placer->Place(ranked);
          ASSERT_TRUE(plan.ok());
          EXPECT_EQ(plan->offsets, by_definition) << "trial " << trial;
          EXPECT_EQ(plan->offsets, wrapped->offsets) << "trial " << trial;
          EXPECT_EQ(plan->size_bytes, wrapped->size_bytes);
        }
      }
    }
  }
}

// Sizes near 2^62 in all leave no room to pack a rank beside each lowest
// offset: the queue then keeps pairs, and places the same. Lowest-first
// placement does not change when every size doubles, so an instance with
// sizes times 2^56 (pairs) has the offsets of the small one (packed)
// times 2^56.
TEST(LowestFirstTest, HugeSizesPlaceAsSmallOnesScaled) {
  std::mt19937 rng(31);
  constexpr int64_t kScale = int64_t{1} << 56;
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<ArenaBuffer> small, huge;
    for (int i = 0; i < 8; ++i) {
      const int first = static_cast<int>(rng() % 6);
      const int last = first + static_cast<int>(rng() % 4);
      const int64_t size = 2 + static_cast<int64_t>(rng() % 7);  // 8 buffers: 2^60 to 2^62 bytes in all
      small.push_back({size, first, last});
      huge.push_back({size * kScale, first, last});
    }
    for (OffsetRank rank : kRanks) {
      const absl::StatusOr<ArenaPlan> plan = PlanArenaLowestFirst(small, 1, rank, trial % 2 == 0 ? 0 : 3);
      const absl::StatusOr<ArenaPlan> scaled = PlanArenaLowestFirst(huge, 1, rank, trial % 2 == 0 ? 0 : 3);
      ASSERT_TRUE(plan.ok());
      ASSERT_TRUE(scaled.ok()) << scaled.status();
      ASSERT_TRUE(VerifyArena(huge, *scaled).ok()) << VerifyArena(huge, *scaled);
      for (size_t i = 0; i < small.size(); ++i) {
        EXPECT_EQ(scaled->offsets[i], plan->offsets[i] * kScale) << "trial " << trial << " buffer " << i;
      }
    }
  }
}

// ShuffleNearTop moves only blocks within the top block's length of
// sections from it, keeps a permutation, and with odds 1 swaps every such
// neighbour pair (so the near blocks do move).
TEST(LowestFirstTest, ShuffleNearTopMovesOnlyBlocksNearTheTop) {
  // Three regions of time, each of ten buffers: buffers 0-9 in steps
  // 0-10 and 20-29 in steps 200-210 live two steps each; 10-19 all live
  // in steps 100-109 and stack up to the top.
  std::vector<ArenaBuffer> buffers;
  for (int region = 0; region < 3; ++region) {
    for (int i = 0; i < 10; ++i) {
      const int first = 100 * region + i;
      buffers.push_back(region == 1 ? ArenaBuffer{1000, 100, 109} : ArenaBuffer{10, first, first + 1});
    }
  }
  absl::StatusOr<LowestFirstPlacer> placer = LowestFirstPlacer::Create(buffers, 1);
  ASSERT_TRUE(placer.ok());
  std::vector<size_t> ranked = placer->Ranking(OffsetRank::kTotalWidthArea);
  const absl::StatusOr<ArenaPlan> plan = placer->Place(ranked);
  ASSERT_TRUE(plan.ok());
  const std::vector<LowestFirstPlacer::Block>& blocks = placer->blocks();
  for (int odds : {1, 3}) {
    std::mt19937_64 random(11);
    std::vector<size_t> shuffled = ranked;
    ShuffleNearTop(*placer, *plan, odds, random, &shuffled);
    std::vector<size_t> sorted = shuffled;
    std::sort(sorted.begin(), sorted.end());
    for (size_t k = 0; k < sorted.size(); ++k) ASSERT_EQ(sorted[k], k);
    int moved = 0;
    for (size_t r = 0; r < ranked.size(); ++r) {
      const int64_t head = static_cast<int64_t>(blocks[ranked[r]].head);
      if (head < 10 || head >= 20) {
        EXPECT_EQ(shuffled[r], ranked[r]) << "odds " << odds << ": a block far from the top moved";
      } else if (shuffled[r] != ranked[r]) {
        ++moved;
      }
    }
    if (odds == 1) {
      EXPECT_EQ(moved, 10);  // each swap moves the first of the near blocks one on
    }
    EXPECT_GT(moved, 0);
  }
}

TEST(LowestFirstTest, PlacerRefusesAnotherRanking) {
  const std::vector<ArenaBuffer> buffers = {{4, 0, 1}, {4, 1, 2}, {4, 2, 3}};
  absl::StatusOr<LowestFirstPlacer> placer = LowestFirstPlacer::Create(buffers, 1);
  ASSERT_TRUE(placer.ok());
  EXPECT_TRUE(placer->Place(std::vector<size_t>{2, 0, 1}).ok());
  EXPECT_EQ(placer->Place(std::vector<size_t>{0, 1}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(placer->Place(std::vector<size_t>{0, 1, 1}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(placer->Place(std::vector<size_t>{0, 1, 3}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(placer->Place(std::vector<size_t>{0, 1, 2, 0}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(LowestFirstPlacer::Create(buffers, 0).ok());
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
