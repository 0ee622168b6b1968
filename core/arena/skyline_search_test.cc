#include "core/arena/skyline_search.h"

#include <algorithm>
#include <chrono>
#include <numeric>
#include <random>

#include "core/arena/arena_verifier.h"
#include "gtest/gtest.h"

namespace serenity {
namespace {

// The optimal arena size by brute force: first-fit placement (lowest aligned
// offset clear of every co-live buffer) over every order of the buffers.
int64_t BruteForceArena(const std::vector<ArenaBuffer>& buffers, int64_t alignment) {
  std::vector<size_t> order(buffers.size());
  std::iota(order.begin(), order.end(), 0);
  int64_t best = INT64_MAX;
  do {
    std::vector<int64_t> offsets(buffers.size(), -1);
    int64_t size = 0;
    for (size_t i : order) {
      int64_t offset = 0;
      for (bool moved = true; moved;) {
        moved = false;
        for (size_t j = 0; j < buffers.size(); ++j) {
          if (offsets[j] < 0 || buffers[j].last_step < buffers[i].first_step ||
              buffers[i].last_step < buffers[j].first_step) {
            continue;
          }
          if (offset < offsets[j] + buffers[j].size && offsets[j] < offset + buffers[i].size) {
            offset = (offsets[j] + buffers[j].size + alignment - 1) / alignment * alignment;
            moved = true;
          }
        }
      }
      offsets[i] = offset;
      size = std::max(size, offset + buffers[i].size);
    }
    best = std::min(best, size);
  } while (std::next_permutation(order.begin(), order.end()));
  return best;
}

// Exact on small instances: packs at the optimum and proves nothing smaller.
TEST(SkylineSearchTest, ExactOnSmallRandomInstances) {
  std::mt19937 rng(61);
  for (int trial = 0; trial < 400; ++trial) {
    std::vector<ArenaBuffer> buffers;
    const int n = 1 + trial % 7;
    for (int i = 0; i < n; ++i) {
      int first = std::uniform_int_distribution<int>(0, 6)(rng);
      int last = first + std::uniform_int_distribution<int>(0, 4)(rng);
      buffers.push_back({std::uniform_int_distribution<int64_t>(1, 12)(rng), first, last});
    }
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
