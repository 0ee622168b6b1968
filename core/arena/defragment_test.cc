#include "core/arena/defragment.h"

#include <fstream>
#include <iterator>
#include <random>
#include <string>

#include "core/arena/arena_csv.h"
#include "core/arena/arena_planner.h"
#include "gtest/gtest.h"

namespace serenity {
namespace {

int64_t AlignedLowerBound(const std::vector<ArenaBuffer>& buffers, int64_t alignment) {
  std::vector<ArenaBuffer> aligned = buffers;
  for (ArenaBuffer& b : aligned) b.size = (b.size + alignment - 1) / alignment * alignment;
  return ArenaLowerBound(aligned);
}

// Random instances, capacity at the (aligned) lower bound: compaction always
// fits, the result verifies, and it never exceeds the capacity.
TEST(DefragmentTest, FitsEveryInstanceAtTheLowerBound) {
  std::mt19937 rng(5);
  int with_moves = 0;
  for (int trial = 0; trial < 500; ++trial) {
    const int n = 1 + static_cast<int>(rng() % 30);
    const int steps = 1 + static_cast<int>(rng() % 20);
    std::vector<ArenaBuffer> buffers;
    for (int i = 0; i < n; ++i) {
      const int32_t a = static_cast<int32_t>(rng() % steps), b = static_cast<int32_t>(rng() % steps);
      buffers.push_back({static_cast<int64_t>(1 + rng() % 1000), std::min(a, b), std::max(a, b)});
    }
    const int64_t alignment = trial % 2 == 0 ? 1 : 64;
    const int64_t capacity = AlignedLowerBound(buffers, alignment);
    absl::StatusOr<MovingArenaPlan> plan = PlanArenaWithMoves(buffers, alignment, capacity);
    ASSERT_TRUE(plan.ok()) << plan.status() << " trial " << trial;
    EXPECT_LE(plan->plan.size_bytes, capacity);
    absl::Status verified = VerifyMovingArena(buffers, *plan);
    ASSERT_TRUE(verified.ok()) << verified << " trial " << trial;
    int64_t moved = 0;
    for (const ArenaMove& m : plan->moves) moved += m.bytes;
    EXPECT_EQ(moved, plan->moved_bytes);
    with_moves += plan->moves.empty() ? 0 : 1;
  }
  EXPECT_GT(with_moves, 10);  // the instances do need moves sometimes
}

// MiniMalloc's hard instances, where no static placement we find reaches
// the lower bound: with moves, every one fits at the bound.
TEST(DefragmentTest, FitsThePeakWhereStaticPlacementDoesNot) {
  int needed_moves = 0;
  for (const char* name : {"A", "B", "D", "E", "J", "K"}) {
    const std::string path = std::string(SERENITY_SHARED_DIR "/bench/arena/minimalloc/challenging_") + name + ".csv";
    std::ifstream in(path);
    ASSERT_TRUE(in.good()) << path;
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    absl::StatusOr<ArenaInstance> instance = ParseArenaCsv(text);
    ASSERT_TRUE(instance.ok()) << instance.status();
    const int64_t bound = ArenaLowerBound(instance->buffers);
    absl::StatusOr<ArenaPlan> fixed = PlanArena(instance->buffers, 1, /*skyline_nodes=*/0);
    ASSERT_TRUE(fixed.ok());
    absl::StatusOr<MovingArenaPlan> moving = PlanArenaWithMoves(instance->buffers, 1, bound);
    ASSERT_TRUE(moving.ok()) << name << ": " << moving.status();
    EXPECT_TRUE(VerifyMovingArena(instance->buffers, *moving).ok()) << name;
    EXPECT_LE(moving->plan.size_bytes, bound) << name;
    if (fixed->size_bytes > bound) {
      EXPECT_FALSE(moving->moves.empty()) << name;
      ++needed_moves;
    }
  }
  EXPECT_GT(needed_moves, 0);
}

TEST(DefragmentTest, RefusesACapacityBelowTheLiveBytes) {
  const std::vector<ArenaBuffer> buffers = {{100, 0, 2}, {100, 1, 2}};
  absl::StatusOr<MovingArenaPlan> plan = PlanArenaWithMoves(buffers, 1, 199);
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(plan.status().message().find("step 1"), absl::string_view::npos);
  EXPECT_EQ(PlanArenaWithMoves(buffers, 0, 500).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(DefragmentTest, TheVerifierCatchesBadMoves) {
  const std::vector<ArenaBuffer> buffers = {{100, 0, 1}, {100, 0, 3}, {100, 0, 1}, {200, 2, 3}};
  absl::StatusOr<MovingArenaPlan> plan = PlanArenaWithMoves(buffers, 1, 300);
  ASSERT_TRUE(plan.ok());
  MovingArenaPlan no_moves = *plan;
  no_moves.moves.clear();
  if (!plan->moves.empty()) {
    EXPECT_FALSE(VerifyMovingArena(buffers, no_moves).ok());
  }
  MovingArenaPlan early = *plan;
  early.moves.push_back({0, 0, early.plan.offsets[0], 0, 100});  // before its first step
  EXPECT_FALSE(VerifyMovingArena(buffers, early).ok());
  MovingArenaPlan wrong_source = *plan;
  wrong_source.moves.push_back({1, 3, wrong_source.plan.offsets[1] + 1, 0, 100});
  EXPECT_FALSE(VerifyMovingArena(buffers, wrong_source).ok());
}

}  // namespace
}  // namespace serenity
