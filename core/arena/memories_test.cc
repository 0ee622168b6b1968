#include "core/arena/memories.h"

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace serenity {
namespace {

using ::testing::HasSubstr;

std::vector<std::string> Names(size_t n) {
  std::vector<std::string> names;
  for (size_t i = 0; i < n; ++i) names.push_back(absl::StrCat("t", i));
  return names;
}

// Independent check: every buffer in one memory, aligned, within the
// capacity, no two co-live buffers of one memory overlapping, pins held,
// and the per-memory sums as stated.
void ExpectValid(const std::vector<ArenaBuffer>& buffers, const std::vector<MemorySpace>& memories,
                 const std::vector<BufferPin>& pins, const MemoryAssignment& a) {
  ASSERT_EQ(a.memory.size(), buffers.size());
  ASSERT_EQ(a.offsets.size(), buffers.size());
  ASSERT_EQ(a.uses.size(), memories.size());
  std::vector<int64_t> byte_steps(memories.size(), 0), arena(memories.size(), 0);
  std::vector<int> count(memories.size(), 0);
  for (size_t i = 0; i < buffers.size(); ++i) {
    const int m = a.memory[i];
    ASSERT_GE(m, 0);
    ASSERT_LT(m, static_cast<int>(memories.size()));
    const ArenaBuffer& b = buffers[i];
    EXPECT_EQ(a.offsets[i] % memories[m].alignment, 0) << "buffer " << i;
    EXPECT_GE(a.offsets[i], 0);
    EXPECT_LE(a.offsets[i] + b.size, memories[m].capacity_bytes) << "buffer " << i;
    if (!pins.empty() && pins[i].memory >= 0) {
      EXPECT_EQ(m, pins[i].memory) << "buffer " << i;
      if (pins[i].offset >= 0) {
        EXPECT_EQ(a.offsets[i], pins[i].offset) << "buffer " << i;
      }
    }
    byte_steps[m] += b.size * (b.last_step - b.first_step + 1);
    if (b.size > 0) arena[m] = std::max(arena[m], a.offsets[i] + b.size);
    ++count[m];
    for (size_t j = 0; j < i; ++j) {
      const ArenaBuffer& o = buffers[j];
      if (a.memory[j] != m || b.size == 0 || o.size == 0) continue;
      if (b.first_step > o.last_step || o.first_step > b.last_step) continue;
      EXPECT_TRUE(a.offsets[i] + b.size <= a.offsets[j] || a.offsets[j] + o.size <= a.offsets[i])
          << "buffers " << j << " and " << i << " overlap in memory " << m;
    }
  }
  for (size_t m = 0; m < memories.size(); ++m) {
    EXPECT_EQ(a.uses[m].byte_steps, byte_steps[m]);
    EXPECT_EQ(a.uses[m].arena_bytes, arena[m]);
    EXPECT_EQ(a.uses[m].buffers, count[m]);
    EXPECT_LE(a.uses[m].byte_steps, a.uses[m].byte_steps_bound) << "memory " << m;
  }
}

TEST(MemoriesTest, RandomInstancesArePlacedValidly) {
  std::mt19937 rng(41);
  int placed = 0, refused = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const int n = 1 + trial % 30;
    std::vector<ArenaBuffer> buffers;
    for (int i = 0; i < n; ++i) {
      const int first = static_cast<int>(rng() % 20);
      buffers.push_back({static_cast<int64_t>(rng() % 1000), first, first + static_cast<int>(rng() % 8)});
    }
    std::vector<MemorySpace> memories;
    const int num_memories = 1 + trial % 3;
    for (int m = 0; m < num_memories; ++m) {
      memories.push_back({absl::StrCat("m", m), 500 + static_cast<int64_t>(rng() % 4000), int64_t{1} << (rng() % 4)});
    }
    std::vector<BufferPin> pins(n);
    for (BufferPin& p : pins) {
      if (rng() % 8 == 0) p.memory = static_cast<int>(rng() % num_memories);
    }
    // Now and then one buffer per memory pinned at offset 0 (pins at
    // offsets never overlap then).
    for (int m = 0; m < num_memories && trial % 3 == 0; ++m) {
      const int i = static_cast<int>(rng() % n);
      if (pins[i].memory < 0 && buffers[i].size <= memories[m].capacity_bytes) pins[i] = {m, 0};
    }
    absl::StatusOr<MemoryAssignment> a = AssignMemories(buffers, Names(n), memories, pins);
    if (!a.ok()) {
      EXPECT_EQ(a.status().code(), absl::StatusCode::kFailedPrecondition) << a.status();
      ++refused;
      continue;
    }
    ++placed;
    ExpectValid(buffers, memories, pins, *a);
  }
  EXPECT_GT(placed, 200);
  EXPECT_GT(refused, 0);
}

// A first memory that holds everything gets everything.
TEST(MemoriesTest, EverythingInTheFirstMemoryWhenItFits) {
  const std::vector<ArenaBuffer> buffers = {{100, 0, 3}, {200, 1, 2}, {50, 2, 5}, {300, 4, 6}};
  const std::vector<MemorySpace> memories = {{"sram", 1 << 20, 16}, {"dram", 1 << 30, 64}};
  absl::StatusOr<MemoryAssignment> a = AssignMemories(buffers, Names(4), memories, {});
  ASSERT_TRUE(a.ok()) << a.status();
  ExpectValid(buffers, memories, {}, *a);
  EXPECT_EQ(a->uses[0].buffers, 4);
  EXPECT_EQ(a->uses[1].buffers, 0);
  EXPECT_EQ(a->uses[0].byte_steps, a->uses[0].byte_steps_bound);
}

// The largest size x steps goes first; what it leaves room for beside it
// joins it; the rest goes to the slower memory.
TEST(MemoriesTest, FastMemoryTakesTheLargestByteStepsThatFit) {
  // A: 60 bytes over steps 0-9 (600); B: 50 over 0-4 (250), co-live with A
  // and too large beside it; C: 40 over 5-9 (200), fits beside A.
  const std::vector<ArenaBuffer> buffers = {{60, 0, 9}, {50, 0, 4}, {40, 5, 9}};
  const std::vector<MemorySpace> memories = {{"sram", 100, 1}, {"dram", 1000, 1}};
  absl::StatusOr<MemoryAssignment> a = AssignMemories(buffers, Names(3), memories, {});
  ASSERT_TRUE(a.ok()) << a.status();
  ExpectValid(buffers, memories, {}, *a);
  EXPECT_EQ(a->memory, (std::vector<int>{0, 1, 0}));
  EXPECT_EQ(a->uses[0].byte_steps, 800);
  // At steps 0-4, 110 bytes could come (capacity 100); at 5-9, 100.
  EXPECT_EQ(a->uses[0].byte_steps_bound, 1000);
}

// Buffers that take the memory in turn share it, and a small one lives
// beside both.
TEST(MemoriesTest, BuffersLiveAtDifferentStepsShareTheFastMemory) {
  // A (90, steps 0-1) and B (90, steps 2-3) take the memory in turn; C
  // (10, steps 0-3) fits beside both.
  const std::vector<ArenaBuffer> buffers = {{90, 0, 1}, {90, 2, 3}, {10, 0, 3}};
  const std::vector<MemorySpace> memories = {{"sram", 100, 1}, {"dram", 1000, 1}};
  absl::StatusOr<MemoryAssignment> a = AssignMemories(buffers, Names(3), memories, {});
  ASSERT_TRUE(a.ok()) << a.status();
  ExpectValid(buffers, memories, {}, *a);
  EXPECT_EQ(a->memory, (std::vector<int>{0, 0, 0}));
}

TEST(MemoriesTest, PinsHold) {
  const std::vector<ArenaBuffer> buffers = {{64, 0, 3}, {64, 0, 3}, {32, 1, 2}};
  const std::vector<MemorySpace> memories = {{"sram", 1024, 32}, {"dram", 4096, 64}};
  // Buffer 0 in dram although sram has room; buffer 1 at sram offset 512.
  const std::vector<BufferPin> pins = {{1, -1}, {0, 512}, {-1, -1}};
  absl::StatusOr<MemoryAssignment> a = AssignMemories(buffers, Names(3), memories, pins);
  ASSERT_TRUE(a.ok()) << a.status();
  ExpectValid(buffers, memories, pins, *a);
  EXPECT_EQ(a->memory, (std::vector<int>{1, 0, 0}));
  EXPECT_EQ(a->offsets[1], 512);
}

// Thousands of buffers live together, one pinned at an offset: too many
// co-live pairs for the packer's lists, so the plain lowest-offset
// placement; still valid, pins held.
TEST(MemoriesTest, ManyCoLiveBuffersWithAPinnedOffset) {
  std::vector<ArenaBuffer> buffers;
  for (int i = 0; i < 4500; ++i) buffers.push_back({64, 0, 4500});
  const std::vector<MemorySpace> memories = {{"sram", 4096, 64}, {"dram", 1 << 20, 64}};
  std::vector<BufferPin> pins(buffers.size());
  pins[0] = {1, 64};
  pins[1] = {0, 0};
  absl::StatusOr<MemoryAssignment> a = AssignMemories(buffers, Names(buffers.size()), memories, pins);
  ASSERT_TRUE(a.ok()) << a.status();
  ExpectValid(buffers, memories, pins, *a);
  EXPECT_EQ(a->uses[0].buffers, 64);  // 4096 / 64
}

TEST(MemoriesTest, BadPinsAreRefusedNamingTheBuffer) {
  const std::vector<ArenaBuffer> buffers = {{64, 0, 3}, {64, 1, 2}};
  const std::vector<MemorySpace> memories = {{"sram", 128, 32}, {"dram", 4096, 64}};
  const auto refused = [&](std::vector<BufferPin> pins, const std::string& words) {
    absl::StatusOr<MemoryAssignment> a = AssignMemories(buffers, Names(2), memories, pins);
    ASSERT_FALSE(a.ok());
    EXPECT_EQ(a.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(a.status().message()), HasSubstr(words));
  };
  refused({{0, 96}, {-1, -1}}, "buffer 't0' (64 bytes, steps 0-3) is pinned at offset 96 of 'sram': it ends at 160");
  refused({{0, 16}, {-1, -1}}, "not a non-negative multiple of 'sram''s alignment 32");
  refused({{-1, 0}, {-1, -1}}, "pinned offset but no memory");
  refused({{2, -1}, {-1, -1}}, "pinned to memory 2, not one of the 2");
  refused({{0, 0}, {0, 32}}, "are pinned to overlapping bytes of 'sram'");
  std::vector<ArenaBuffer> anchored = buffers;
  anchored[1].anchor = 0;
  absl::StatusOr<MemoryAssignment> a = AssignMemories(anchored, Names(2), memories, {});
  EXPECT_EQ(a.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(a.status().message()), HasSubstr("laid out in place"));
}

TEST(MemoriesTest, WhatFitsNowhereIsNamed) {
  const std::vector<MemorySpace> memories = {{"sram", 100, 1}, {"dram", 100, 1}};
  // 210 bytes live at step 0: more than both memories together.
  absl::StatusOr<MemoryAssignment> a =
      AssignMemories(std::vector<ArenaBuffer>{{70, 0, 1}, {70, 0, 1}, {70, 0, 0}}, Names(3), memories, {});
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(a.status().message()), HasSubstr("at step 0, 210 bytes are live"));
  EXPECT_THAT(std::string(a.status().message()), HasSubstr("need at least 210 bytes (the largest buffer live there is "
                                                           "buffer 't0' (70 bytes, steps 0-1))"));
  // 180 live at most, but sram takes t0 and the two left for dram share
  // step 1: 120 bytes, more than its 100.
  a = AssignMemories(std::vector<ArenaBuffer>{{60, 0, 1}, {60, 0, 1}, {60, 1, 2}}, Names(3), memories, {});
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(a.status().message()), HasSubstr("fits in no memory: the 2 buffers left for 'dram'"));
  EXPECT_THAT(std::string(a.status().message()), HasSubstr("need 120 bytes, more than its capacity 100"));
  // Found by fuzz_memories (it looped): a pinned buffer larger than its
  // memory beside empty buffers, which fit under any threshold.
  a = AssignMemories(std::vector<ArenaBuffer>{{0, 0, 28}, {15362, 43, 45}, {0, 0, 0}}, Names(3),
                     std::vector<MemorySpace>{{"sram", 12800, 4}, {"dram", 16512, 4}}, {{-1, -1}, {0, -1}, {0, 640}});
  ASSERT_FALSE(a.ok());
  EXPECT_THAT(std::string(a.status().message()), HasSubstr("the 2 buffers pinned to 'sram' need 15362 bytes"));
  // Without the pin: the big buffer goes to dram, the empty ones stay.
  a = AssignMemories(std::vector<ArenaBuffer>{{0, 0, 28}, {15362, 43, 45}, {0, 0, 0}}, Names(3),
                     std::vector<MemorySpace>{{"sram", 12800, 4}, {"dram", 16512, 4}}, {});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->memory, (std::vector<int>{0, 1, 0}));
  // Pins to sram that sram cannot hold together.
  a = AssignMemories(std::vector<ArenaBuffer>{{60, 0, 1}, {60, 0, 1}}, Names(2), memories, {{0, -1}, {0, -1}});
  ASSERT_FALSE(a.ok());
  EXPECT_THAT(std::string(a.status().message()), HasSubstr("the 2 buffers pinned to 'sram' need 120 bytes"));
  EXPECT_THAT(std::string(a.status().message()), HasSubstr("buffer 't1' (60 bytes, steps 0-1) does not fit"));
}

}  // namespace
}  // namespace serenity
