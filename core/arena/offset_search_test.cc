#include "core/arena/offset_search.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <iterator>
#include <numeric>
#include <random>
#include <string>

#include "core/arena/arena_csv.h"
#include "core/arena/arena_verifier.h"
#include "gtest/gtest.h"
#include "tests/testing/arena_instances.h"

namespace serenity {
namespace {

using testing::BruteForceArena;
using testing::RandomSmallArenaInstance;

// Exact on small instances: packs at the optimum and finds nothing smaller,
// with the static ranks and with shuffled ones.
TEST(OffsetSearchTest, ExactOnSmallRandomInstances) {
  std::mt19937 rng(62);
  const auto never = std::chrono::steady_clock::time_point::max();
  for (int trial = 0; trial < 600; ++trial) {
    const std::vector<ArenaBuffer> buffers = RandomSmallArenaInstance(1 + trial % 7, 0, rng);
    const int64_t alignment = trial % 3 == 0 ? 4 : 1;
    const int64_t optimum = BruteForceArena(buffers, alignment);
    const OffsetRank rank = static_cast<OffsetRank>(trial % 3);
    const uint64_t seed = trial % 2 == 0 ? 0 : static_cast<uint64_t>(trial);
    std::vector<int64_t> offsets;
    ASSERT_EQ(PackByLowestOffsets(buffers, alignment, optimum, {rank, 1 << 20, never, seed}, &offsets),
              PackingResult::kPacked)
        << "trial " << trial;
    ArenaPlan plan{optimum, alignment, offsets};
    ASSERT_TRUE(VerifyArena(buffers, plan).ok()) << VerifyArena(buffers, plan);
    ASSERT_EQ(PackByLowestOffsets(buffers, alignment, optimum - 1, {rank, 1 << 20, never, seed}, &offsets),
              PackingResult::kImpossible)
        << "trial " << trial;
  }
}

// A shuffle seed names one search: the same seed gives the same offsets,
// and some other seed reaches a different packing.
TEST(OffsetSearchTest, ShuffleSeedIsRepeatable) {
  absl::StatusOr<ArenaInstance> instance = testing::ReadChallengingInstance("J");
  ASSERT_TRUE(instance.ok()) << instance.status();
  const int64_t capacity = ArenaLowerBound(instance->buffers) * 11 / 10;
  const auto never = std::chrono::steady_clock::time_point::max();
  std::vector<int64_t> first, again;
  ASSERT_EQ(PackByLowestOffsets(instance->buffers, 1, capacity, {OffsetRank::kTotalWidthArea, 100000, never, 7}, &first),
            PackingResult::kPacked);
  ASSERT_EQ(PackByLowestOffsets(instance->buffers, 1, capacity, {OffsetRank::kTotalWidthArea, 100000, never, 7}, &again),
            PackingResult::kPacked);
  EXPECT_EQ(first, again);
  bool differs = false;
  for (uint64_t seed = 8; seed < 12 && !differs; ++seed) {
    ASSERT_EQ(PackByLowestOffsets(instance->buffers, 1, capacity, {OffsetRank::kTotalWidthArea, 100000, never, seed},
                                  &again),
              PackingResult::kPacked);
    differs = again != first;
  }
  EXPECT_TRUE(differs);
}

// Two of MiniMalloc's hard instances pack at their lower bound within a
// node budget (measured: challenging_F in a few thousand nodes under TWA,
// challenging_K under WAT); a tiny budget gives up honestly.
TEST(OffsetSearchTest, PacksHardInstancesAtTheBound) {
  for (const auto& [name, rank] : {std::make_pair("F", OffsetRank::kTotalWidthArea),
                                   std::make_pair("K", OffsetRank::kWidthAreaTotal)}) {
    absl::StatusOr<ArenaInstance> instance = testing::ReadChallengingInstance(name);
    ASSERT_TRUE(instance.ok()) << instance.status();
    const int64_t bound = ArenaLowerBound(instance->buffers);
    std::vector<int64_t> offsets;
    ASSERT_EQ(PackByLowestOffsets(instance->buffers, 1, bound, {rank, 200000}, &offsets), PackingResult::kPacked) << name;
    ArenaPlan plan{bound, 1, offsets};
    EXPECT_TRUE(VerifyArena(instance->buffers, plan).ok()) << VerifyArena(instance->buffers, plan);
    EXPECT_EQ(PackByLowestOffsets(instance->buffers, 1, bound, {rank, 10}, &offsets), PackingResult::kGaveUp) << name;
  }
}

// A set cancel flag stops the search at once, as a limit does.
TEST(OffsetSearchTest, CancelFlagGivesUp) {
  absl::StatusOr<ArenaInstance> instance = testing::ReadChallengingInstance("F");
  ASSERT_TRUE(instance.ok()) << instance.status();
  const std::atomic<bool> cancelled{true};
  OffsetSearchOptions options;
  options.cancel = &cancelled;
  std::vector<int64_t> offsets;
  EXPECT_EQ(PackByLowestOffsets(instance->buffers, 1, ArenaLowerBound(instance->buffers), options, &offsets),
            PackingResult::kGaveUp);
}

}  // namespace
}  // namespace serenity
