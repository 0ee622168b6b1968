#include "core/arena/offset_search.h"

#include <algorithm>
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

// Exact on small instances: packs at the optimum and finds nothing smaller.
TEST(OffsetSearchTest, ExactOnSmallRandomInstances) {
  std::mt19937 rng(62);
  for (int trial = 0; trial < 400; ++trial) {
    const std::vector<ArenaBuffer> buffers = RandomSmallArenaInstance(1 + trial % 7, 0, rng);
    const int64_t alignment = trial % 3 == 0 ? 4 : 1;
    const int64_t optimum = BruteForceArena(buffers, alignment);
    const OffsetRank rank = static_cast<OffsetRank>(trial % 3);
    std::vector<int64_t> offsets;
    ASSERT_EQ(PackByLowestOffsets(buffers, alignment, optimum, 1 << 20, rank, &offsets), PackingResult::kPacked)
        << "trial " << trial;
    ArenaPlan plan{optimum, alignment, offsets};
    ASSERT_TRUE(VerifyArena(buffers, plan).ok()) << VerifyArena(buffers, plan);
    ASSERT_EQ(PackByLowestOffsets(buffers, alignment, optimum - 1, 1 << 20, rank, &offsets), PackingResult::kImpossible)
        << "trial " << trial;
  }
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
    ASSERT_EQ(PackByLowestOffsets(instance->buffers, 1, bound, 200000, rank, &offsets), PackingResult::kPacked) << name;
    ArenaPlan plan{bound, 1, offsets};
    EXPECT_TRUE(VerifyArena(instance->buffers, plan).ok()) << VerifyArena(instance->buffers, plan);
    EXPECT_EQ(PackByLowestOffsets(instance->buffers, 1, bound, 10, rank, &offsets), PackingResult::kGaveUp) << name;
  }
}

}  // namespace
}  // namespace serenity
