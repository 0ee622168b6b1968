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
  ASSERT_EQ(
      PackByLowestOffsets(instance->buffers, 1, capacity, {OffsetRank::kTotalWidthArea, 100000, never, 7}, &first),
      PackingResult::kPacked);
  ASSERT_EQ(
      PackByLowestOffsets(instance->buffers, 1, capacity, {OffsetRank::kTotalWidthArea, 100000, never, 7}, &again),
      PackingResult::kPacked);
  EXPECT_EQ(first, again);
  bool differs = false;
  for (uint64_t seed = 8; seed < 12 && !differs; ++seed) {
    ASSERT_EQ(
        PackByLowestOffsets(instance->buffers, 1, capacity, {OffsetRank::kTotalWidthArea, 100000, never, seed}, &again),
        PackingResult::kPacked);
    differs = again != first;
  }
  EXPECT_TRUE(differs);
}

// Two of MiniMalloc's hard instances pack at their lower bound within a
// node budget (measured: challenging_F in a few thousand nodes under TWA,
// challenging_K under WAT); a tiny budget gives up honestly.
TEST(OffsetSearchTest, PacksHardInstancesAtTheBound) {
  for (const auto& [name, rank] :
       {std::make_pair("F", OffsetRank::kTotalWidthArea), std::make_pair("K", OffsetRank::kWidthAreaTotal)}) {
    absl::StatusOr<ArenaInstance> instance = testing::ReadChallengingInstance(name);
    ASSERT_TRUE(instance.ok()) << instance.status();
    const int64_t bound = ArenaLowerBound(instance->buffers);
    std::vector<int64_t> offsets;
    ASSERT_EQ(PackByLowestOffsets(instance->buffers, 1, bound, {rank, 200000}, &offsets), PackingResult::kPacked)
        << name;
    ArenaPlan plan{bound, 1, offsets};
    EXPECT_TRUE(VerifyArena(instance->buffers, plan).ok()) << VerifyArena(instance->buffers, plan);
    EXPECT_EQ(PackByLowestOffsets(instance->buffers, 1, bound, {rank, 10}, &offsets), PackingResult::kGaveUp) << name;
  }
}

// Anchored buffers go with their anchor: every packing found is valid, and
// a search that finds none gives up rather than claim none exists (placing
// groups whole is not exhaustive). At a generous capacity it packs.
TEST(OffsetSearchTest, GroupsArePlacedWholeAndNeverRefuted) {
  std::mt19937 rng(8);
  const auto never = std::chrono::steady_clock::time_point::max();
  int packed = 0;
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<ArenaBuffer> buffers = RandomSmallArenaInstance(3 + trial % 5, 1, rng);
    // Buffer 0 anchors the next one or two, stacked right above it.
    int64_t offset = buffers[0].size;
    for (size_t m = 1; m <= 1 + static_cast<size_t>(trial % 2) && m < buffers.size(); ++m) {
      buffers[m].anchor = 0;
      buffers[m].offset_from_anchor = offset;
      offset += buffers[m].size;
    }
    const int64_t alignment = trial % 3 == 0 ? 4 : 1;
    const int64_t bound = ArenaLowerBound(buffers);
    int64_t total = 0;
    for (const ArenaBuffer& b : buffers) total += AlignUp(b.size, alignment) + b.offset_from_anchor;
    std::vector<int64_t> capacities = {bound, bound + bound / 4, total};
    capacities.erase(std::unique(capacities.begin(), capacities.end()), capacities.end());
    for (int64_t capacity : capacities) {
      std::vector<int64_t> offsets;
      const PackingResult result =
          PackByLowestOffsets(buffers, alignment, capacity,
                              {OffsetRank(trial % 3), 1 << 16, never, static_cast<uint64_t>(trial % 2)}, &offsets);
      ASSERT_NE(result, PackingResult::kImpossible) << "trial " << trial;
      if (result != PackingResult::kPacked) continue;
      ArenaPlan plan{0, alignment, offsets};
      for (size_t i = 0; i < buffers.size(); ++i)
        plan.size_bytes = std::max(plan.size_bytes, offsets[i] + buffers[i].size);
      ASSERT_LE(plan.size_bytes, capacity) << "trial " << trial;
      ASSERT_TRUE(VerifyArena(buffers, plan).ok()) << "trial " << trial << ": " << VerifyArena(buffers, plan);
      packed += capacity == total;
    }
  }
  EXPECT_EQ(packed, 300);
}

// Around fixed buffers the search is still exact on small instances: it
// packs at the optimum (keeping every fixed offset, no overlap) and proves
// the size below it impossible. The fixed offsets come from a random
// packing, gaps included, so the free buffers must go around them.
TEST(OffsetSearchTest, ExactAroundFixedBuffers) {
  std::mt19937 rng(29);
  const auto never = std::chrono::steady_clock::time_point::max();
  int below_fixed = 0;
  for (int trial = 0; trial < 600; ++trial) {
    const std::vector<ArenaBuffer> buffers = RandomSmallArenaInstance(2 + trial % 6, 0, rng);
    const int64_t alignment = trial % 3 == 0 ? 4 : 1;
    // A valid packing with random gaps: first-fit in input order, each
    // buffer raised by a random aligned amount first.
    std::vector<int64_t> packing(buffers.size(), -1);
    for (size_t i = 0; i < buffers.size(); ++i) {
      int64_t offset = alignment * std::uniform_int_distribution<int64_t>(0, 6)(rng);
      for (bool moved = true; moved;) {
        moved = false;
        for (size_t j = 0; j < i; ++j) {
          if (buffers[j].last_step < buffers[i].first_step || buffers[i].last_step < buffers[j].first_step) continue;
          if (offset < packing[j] + buffers[j].size && packing[j] < offset + buffers[i].size) {
            offset = AlignUp(packing[j] + buffers[j].size, alignment);
            moved = true;
          }
        }
      }
      packing[i] = offset;
    }
    std::vector<int64_t> fixed(buffers.size(), -1);
    for (size_t i = 0; i < buffers.size(); ++i) {
      if (rng() % 3 == 0) fixed[i] = packing[i];
    }
    const int64_t optimum = BruteForceArena(buffers, alignment, fixed);
    const OffsetRank rank = static_cast<OffsetRank>(trial % 3);
    const uint64_t seed = trial % 2 == 0 ? 0 : static_cast<uint64_t>(trial);
    std::vector<int64_t> offsets;
    ASSERT_EQ(PackAroundFixed(buffers, fixed, alignment, optimum, {rank, 1 << 20, never, seed}, &offsets),
              PackingResult::kPacked)
        << "trial " << trial;
    ArenaPlan plan{optimum, alignment, offsets};
    ASSERT_TRUE(VerifyArena(buffers, plan).ok()) << "trial " << trial << ": " << VerifyArena(buffers, plan);
    for (size_t i = 0; i < buffers.size(); ++i) {
      if (fixed[i] >= 0) {
        ASSERT_EQ(offsets[i], fixed[i]) << "trial " << trial << " buffer " << i;
      }
      if (fixed[i] < 0 && buffers[i].size > 0) {
        for (size_t j = 0; j < buffers.size(); ++j) {
          below_fixed += fixed[j] > offsets[i] && buffers[j].first_step <= buffers[i].last_step &&
                         buffers[i].first_step <= buffers[j].last_step;
        }
      }
    }
    ASSERT_EQ(PackAroundFixed(buffers, fixed, alignment, optimum - 1, {rank, 1 << 20, never, seed}, &offsets),
              PackingResult::kImpossible)
        << "trial " << trial;
  }
  EXPECT_GT(below_fixed, 50);  // free buffers did go under fixed ones
}

// A fixed buffer above the capacity makes it impossible at once; a bad
// `fixed` (wrong length, anchored buffers) gives up.
TEST(OffsetSearchTest, FixedBeyondCapacityIsImpossible) {
  const std::vector<ArenaBuffer> buffers = {{10, 0, 1}, {10, 2, 3}};
  std::vector<int64_t> offsets;
  EXPECT_EQ(PackAroundFixed(buffers, {20, -1}, 1, 29, {}, &offsets), PackingResult::kImpossible);
  ASSERT_EQ(PackAroundFixed(buffers, {20, -1}, 1, 30, {}, &offsets), PackingResult::kPacked);
  EXPECT_EQ(offsets, (std::vector<int64_t>{20, 0}));
  EXPECT_EQ(PackAroundFixed(buffers, {20}, 1, 30, {}, &offsets), PackingResult::kGaveUp);
  std::vector<ArenaBuffer> anchored = buffers;
  anchored[1].anchor = 0;
  EXPECT_EQ(PackAroundFixed(anchored, {20, -1}, 1, 30, {}, &offsets), PackingResult::kGaveUp);
}

// A deadline that has passed gives up before the search places anything,
// with fixed buffers or without: the setup around many long-lived fixed
// buffers can itself take a while, so it does not start past the deadline.
TEST(OffsetSearchTest, PassedDeadlineGivesUpBeforeSearching) {
  const std::vector<ArenaBuffer> buffers = {{10, 0, 1}, {10, 2, 3}};
  OffsetSearchOptions passed;
  passed.deadline = std::chrono::steady_clock::now() - std::chrono::seconds(1);
  std::vector<int64_t> offsets;
  EXPECT_EQ(PackAroundFixed(buffers, {20, -1}, 1, 30, passed, &offsets), PackingResult::kGaveUp);
  EXPECT_EQ(PackByLowestOffsets(buffers, 1, 10, passed, &offsets), PackingResult::kGaveUp);
  // The same searches with time pack.
  EXPECT_EQ(PackAroundFixed(buffers, {20, -1}, 1, 30, {}, &offsets), PackingResult::kPacked);
  EXPECT_EQ(PackByLowestOffsets(buffers, 1, 10, {}, &offsets), PackingResult::kPacked);
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
