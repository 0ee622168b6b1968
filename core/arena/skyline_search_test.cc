#include "core/arena/skyline_search.h"

#include <algorithm>
#include <chrono>
#include <numeric>
#include <random>

#include "core/arena/arena_verifier.h"
#include "gtest/gtest.h"
#include "tests/testing/arena_instances.h"

namespace serenity {
namespace {

using testing::BruteForceArena;
using testing::RandomSmallArenaInstance;

// Exact on small instances: packs at the optimum and proves nothing smaller.
TEST(SkylineSearchTest, ExactOnSmallRandomInstances) {
  std::mt19937 rng(61);
  for (int trial = 0; trial < 400; ++trial) {
    const std::vector<ArenaBuffer> buffers = RandomSmallArenaInstance(1 + trial % 7, 1, rng);
    const int64_t alignment = trial % 3 == 0 ? 4 : 1;
    const int64_t optimum = BruteForceArena(buffers, alignment);
    for (SkylineOrder order : {SkylineOrder::kSizeFirst, SkylineOrder::kLifetimeFirst}) {
      std::vector<int64_t> offsets;
      ASSERT_EQ(PackWithinCapacity(buffers, alignment, optimum, 1 << 20, order, &offsets), PackingResult::kPacked)
          << "trial " << trial;
      ArenaPlan plan{optimum, alignment, offsets};
      ASSERT_TRUE(VerifyArena(buffers, plan).ok()) << VerifyArena(buffers, plan);
      ASSERT_EQ(PackWithinCapacity(buffers, alignment, optimum - 1, 1 << 20, order, &offsets),
                PackingResult::kImpossible)
          << "trial " << trial;
    }
  }
}

TEST(SkylineSearchTest, GivesUpHonestlyOnANodeLimit) {
  std::mt19937 rng(67);
  std::vector<ArenaBuffer> buffers;
  for (int i = 0; i < 200; ++i) {
    int first = std::uniform_int_distribution<int>(0, 100)(rng);
    buffers.push_back({std::uniform_int_distribution<int64_t>(1, 1000)(rng), first,
                       first + std::uniform_int_distribution<int>(0, 30)(rng)});
  }
  std::vector<int64_t> offsets;
  EXPECT_EQ(PackWithinCapacity(buffers, 1, ArenaLowerBound(buffers), 10, SkylineOrder::kSizeFirst, &offsets),
            PackingResult::kGaveUp);
  // And on a deadline already past, with nodes to spare.
  EXPECT_EQ(PackWithinCapacity(buffers, 1, ArenaLowerBound(buffers), int64_t{1} << 40, SkylineOrder::kSizeFirst,
                               &offsets, std::chrono::steady_clock::now()),
            PackingResult::kGaveUp);
}

}  // namespace
}  // namespace serenity
