#include "core/arena/defragment.h"

#include <algorithm>
#include <fstream>
#include <iterator>
#include <random>
#include <string>

#include "core/arena/arena_csv.h"
#include "core/arena/arena_planner.h"
#include "gtest/gtest.h"
#include "tests/testing/arena_instances.h"

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
    absl::StatusOr<ArenaInstance> instance = testing::ReadChallengingInstance(name);
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

// Anchored buffers (Concat slices) move with their anchor: wherever the
// plan succeeds it verifies, and at every step each member live together
// with its anchor sits at the anchor's offset plus its own.
TEST(DefragmentTest, AnchoredBuffersMoveWithTheirAnchor) {
  std::mt19937 rng(6);
  int with_moves = 0;
  for (int trial = 0; trial < 500; ++trial) {
    const int steps = 1 + static_cast<int>(rng() % 20);
    std::vector<ArenaBuffer> buffers;
    for (int i = 0, n = 1 + static_cast<int>(rng() % 25); i < n; ++i) {
      const int32_t a = static_cast<int32_t>(rng() % steps), b = static_cast<int32_t>(rng() % steps);
      buffers.push_back({static_cast<int64_t>(1 + rng() % 1000), std::min(a, b), std::max(a, b)});
      if (rng() % 4 == 0) {  // one or two slices after it, live from their own start to its end
        const int32_t anchor = static_cast<int32_t>(buffers.size()) - 1;
        int64_t offset = buffers.back().size;
        for (int k = 1 + static_cast<int>(rng() % 2); k > 0; --k) {
          const int64_t size = 1 + static_cast<int64_t>(rng() % 500);
          const int32_t start = std::min<int32_t>(buffers[anchor].last_step, static_cast<int32_t>(rng() % steps));
          buffers.push_back({size, start, buffers[anchor].last_step, anchor, offset});
          offset += size;
        }
      }
    }
    const int64_t alignment = trial % 2 == 0 ? 1 : 64;
    const int64_t capacity = AlignedLowerBound(buffers, alignment) + static_cast<int64_t>(rng() % 600);
    absl::StatusOr<MovingArenaPlan> plan = PlanArenaWithMoves(buffers, alignment, capacity);
    if (!plan.ok()) {
      ASSERT_EQ(plan.status().code(), absl::StatusCode::kFailedPrecondition) << plan.status();
      continue;
    }
    EXPECT_LE(plan->plan.size_bytes, capacity);
    absl::Status verified = VerifyMovingArena(buffers, *plan);
    ASSERT_TRUE(verified.ok()) << verified << " trial " << trial;
    std::vector<int64_t> at = plan->plan.offsets;
    size_t next = 0;
    for (int32_t t = 0; t < steps; ++t) {
      for (; next < plan->moves.size() && plan->moves[next].before_step == t; ++next) {
        at[plan->moves[next].buffer] = plan->moves[next].to_offset;
      }
      for (size_t i = 0; i < buffers.size(); ++i) {
        const ArenaBuffer& b = buffers[i];
        if (b.anchor < 0 || b.first_step > t || t > b.last_step) continue;
        const ArenaBuffer& anchor = buffers[b.anchor];
        if (anchor.first_step > t || t > anchor.last_step) continue;
        ASSERT_EQ(at[i], at[b.anchor] + b.offset_from_anchor) << "trial " << trial << " step " << t;
      }
    }
    with_moves += plan->moves.empty() ? 0 : 1;
  }
  EXPECT_GT(with_moves, 10);
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
