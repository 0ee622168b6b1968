#include "core/memory/closure_bound.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <vector>

#include "core/memory/simulator.h"
#include "gtest/gtest.h"
#include "tests/testing/orders.h"
#include "tests/testing/test_graph.h"

namespace serenity {
namespace {

// Every op's bound is at most its step bytes in every order (brute force over
// all topological orders), at least StepLowerBounds, and their maximum is
// sometimes strictly larger than StepLowerBounds' and equal to the optimum.
TEST(ClosureBoundTest, BoundsEveryOrderAndBeatsTheConeBound) {
  std::mt19937 rng(29);
  int stronger = 0, tight = 0;
  for (int trial = 0; trial < 300; ++trial) {
    Graph g = *Graph::Build(testing::RandomDag(2 + trial % 8, rng));
    const Reachability reach(g);
    for (int switches = 0; switches < 8; ++switches) {
      BufferModel buffers(g, MemoryModel{(switches & 1) != 0, (switches & 2) != 0, (switches & 4) != 0});
      const std::vector<int64_t> closure = ClosureStepLowerBounds(buffers, reach);
      const std::vector<int64_t> cone = StepLowerBounds(buffers, reach);
      for (OpId u = 0; u < g.num_ops(); ++u) ASSERT_GE(closure[u], cone[u]) << "trial " << trial;
      int64_t best = INT64_MAX;
      testing::ForEachTopologicalOrder(g, [&](const std::vector<OpId>& order) {
        MemoryTracker tracker(buffers);
        int64_t peak = 0;
        for (OpId u : order) {
          const int64_t step = tracker.Run(u);
          peak = std::max(peak, step);
          ASSERT_LE(closure[u], step) << "trial " << trial << " switches " << switches << " op " << u;
        }
        best = std::min(best, peak);
      });
      const int64_t bound = *std::max_element(closure.begin(), closure.end());
      ASSERT_LE(bound, best);
      stronger += bound > *std::max_element(cone.begin(), cone.end());
      tight += bound == best;
    }
  }
  EXPECT_GT(stronger, 0);
  EXPECT_GT(tight, 0);
}

// In a segment without bitsets (Reachability with max_segment_ops 1) an
// op's ancestors and descendants come from a walk over its edges: the same
// bounds as with the bitsets, under every switch, with and without Concats.
TEST(ClosureBoundTest, SegmentsWithoutBitsetsGetTheSameBounds) {
  std::mt19937 rng(61);
  int raised = 0;  // ops whose bound is above their cone bound
  for (int trial = 0; trial < 200; ++trial) {
    Graph g = *Graph::Build(testing::RandomDag(3 + trial % 12, rng, /*concats=*/trial % 2 == 0));
    const Reachability with_bits(g);
    const Reachability without_bits(g, /*max_segment_ops=*/1);
    for (int switches = 0; switches < 8; ++switches) {
      BufferModel buffers(g, MemoryModel{(switches & 1) != 0, (switches & 2) != 0, (switches & 4) != 0,
                                         trial % 2 == 0 && switches % 2 == 0});
      const std::vector<int64_t> expected = ClosureStepLowerBounds(buffers, with_bits);
      const std::vector<int64_t> walked = ClosureStepLowerBounds(buffers, without_bits);
      EXPECT_EQ(walked, expected) << "trial " << trial << " switches " << switches;
      const std::vector<int64_t> cone = StepLowerBounds(buffers, without_bits);
      for (OpId u = 0; u < g.num_ops(); ++u) raised += walked[u] > cone[u];
    }
  }
  EXPECT_GT(raised, 0);
}

// The last step's bound is at most every order's peak, under every switch,
// with and without Concats, and sometimes above every per-op bound.
TEST(ClosureBoundTest, FinalStepBoundsEveryOrder) {
  std::mt19937 rng(32);
  int above = 0;
  for (int trial = 0; trial < 300; ++trial) {
    Graph g = *Graph::Build(testing::RandomDag(2 + trial % 8, rng, /*concats=*/trial % 2 == 0));
    const Reachability reach(g);
    for (int switches = 0; switches < 16; ++switches) {
      const MemoryModel model{(switches & 1) != 0, (switches & 2) != 0, (switches & 4) != 0, (switches & 8) != 0};
      BufferModel buffers(g, model);
      const int64_t final_bound = FinalStepLowerBound(buffers);
      const std::vector<int64_t> cone = StepLowerBounds(buffers, reach);
      above += final_bound > *std::max_element(cone.begin(), cone.end());
      testing::ForEachTopologicalOrder(g, [&](const std::vector<OpId>& order) {
        ASSERT_LE(final_bound, PeakOf(buffers, order)) << "trial " << trial << " switches " << switches;
      });
    }
  }
  EXPECT_GT(above, 0);
}

// With Concats laid out in place: still below every order's step bytes.
TEST(ClosureBoundTest, BoundsEveryOrderWithConcatsInPlace) {
  std::mt19937 rng(30);
  for (int trial = 0; trial < 200; ++trial) {
    Graph g = *Graph::Build(testing::RandomDag(2 + trial % 8, rng, /*concats=*/true));
    const Reachability reach(g);
    BufferModel buffers(g, MemoryModel{trial % 2 == 0, trial % 3 == 0, trial % 4 >= 2, true});
    const std::vector<int64_t> closure = ClosureStepLowerBounds(buffers, reach);
    testing::ForEachTopologicalOrder(g, [&](const std::vector<OpId>& order) {
      MemoryTracker tracker(buffers);
      for (OpId u : order) ASSERT_LE(closure[u], tracker.Run(u)) << "trial " << trial << " op " << u;
    });
  }
}

}  // namespace
}  // namespace serenity

namespace serenity {
namespace {

// Past its deadline the closure bound stops and says so: every op keeps its
// cone bound, which is still a bound. With time it is not cut.
TEST(ClosureBoundTest, StopsAtItsDeadlineWithTheConeBounds) {
  std::mt19937 rng(31);
  Graph g = *Graph::Build(testing::RandomDag(12, rng));
  const Reachability reach(g);
  BufferModel buffers(g, MemoryModel{});
  bool cut = false;
  const std::vector<int64_t> past =
      ClosureStepLowerBounds(buffers, reach, std::chrono::steady_clock::now() - std::chrono::seconds(1), &cut);
  EXPECT_TRUE(cut);
  EXPECT_EQ(past, StepLowerBounds(buffers, reach));
  cut = false;
  const std::vector<int64_t> timely =
      ClosureStepLowerBounds(buffers, reach, std::chrono::steady_clock::now() + std::chrono::hours(1), &cut);
  EXPECT_FALSE(cut);
  EXPECT_EQ(timely, ClosureStepLowerBounds(buffers, reach));
}

}  // namespace
}  // namespace serenity

namespace serenity {
namespace {

// Given the step bytes of an order, the closure bound skips the ops that
// cannot raise the largest bound found so far (or the floor): the largest
// entry is the same as without them (or the floor), every entry is still a
// bound and at least the cone bound, and some entries stay at the cone
// bound (max-flows saved).
TEST(ClosureBoundTest, StepsOfAnOrderKeepTheLargestBound) {
  std::mt19937 rng(33);
  int skipped = 0;
  for (int trial = 0; trial < 300; ++trial) {
    GraphSpec spec = testing::RandomDag(4 + trial % 40, rng, /*concats=*/trial % 3 == 0);
    Graph g = *Graph::Build(std::move(spec));
    const Reachability reach(g);
    BufferModel buffers(g, MemoryModel{trial % 2 == 0, trial % 5 == 0, trial % 7 == 0});
    const std::vector<OpId> order = testing::RandomTopologicalOrder(g, rng);
    std::vector<int64_t> steps(g.num_ops());
    MemoryTracker tracker(buffers);
    for (OpId u : order) steps[u] = tracker.Run(u);
    const std::vector<int64_t> full = ClosureStepLowerBounds(buffers, reach);
    const int64_t full_largest = *std::max_element(full.begin(), full.end());
    // Half the trials with a floor: up to twice the largest bound.
    const int64_t floor = trial % 2 == 0 ? 0 : std::uniform_int_distribution<int64_t>(0, 2 * full_largest)(rng);
    const std::vector<int64_t> lazy =
        ClosureStepLowerBounds(buffers, reach, std::chrono::steady_clock::time_point::max(), nullptr, steps, floor);
    const std::vector<int64_t> cone = StepLowerBounds(buffers, reach);
    for (OpId u = 0; u < g.num_ops(); ++u) {
      ASSERT_GE(lazy[u], cone[u]);
      ASSERT_LE(lazy[u], full[u]);
      ASSERT_LE(lazy[u], steps[u]) << "trial " << trial << " op " << u;
      skipped += lazy[u] < full[u];
    }
    const int64_t lazy_largest = *std::max_element(lazy.begin(), lazy.end());
    ASSERT_EQ(std::max(lazy_largest, floor), std::max(full_largest, floor)) << "trial " << trial;
  }
  EXPECT_GT(skipped, 0);
}

}  // namespace
}  // namespace serenity

namespace serenity {
namespace {

// The pair bound against its definition, by brute force: every topological
// order gives, for each op, the set run before it and the bytes at its step;
// for two ops that run in either order, the least bytes at u's step with v
// run before it (or not) follow. Under every memory-model switch the bound
// is at most that definition and at most the optimum; without the in-place
// saving (which the closure counts as possible) and unread graph inputs it
// equals the definition; it is sometimes above every closure bound; and
// given the steps of any order, it skips pairs and is the same.
TEST(ClosureBoundTest, PairBoundMeetsItsDefinitionAndBoundsEveryOrder) {
  std::mt19937 rng(34);
  int stronger = 0, pairs_seen = 0, exact_checks = 0;
  for (int trial = 0; trial < 300; ++trial) {
    Graph g = *Graph::Build(testing::RandomDag(3 + trial % 7, rng, /*concats=*/trial % 3 == 0));
    const Reachability reach(g);
    const int n = g.num_ops();
    // A graph input no op reads is live at the first step only, which the
    // closure does not count: the bound is then below its definition.
    bool exact = true;
    for (const Tensor& t : g.tensors()) exact = exact && !(t.producer == kNoOp && !t.is_weight && t.consumers.empty());
    for (int switches = 0; switches < 16; ++switches) {
      const MemoryModel model{(switches & 1) != 0, (switches & 2) != 0, (switches & 4) != 0, (switches & 8) != 0};
      BufferModel buffers(g, model);
      std::vector<std::map<uint32_t, int64_t>> step_after(n);  // op -> (ops run before, as bits) -> its step
      std::vector<std::vector<bool>> before(n, std::vector<bool>(n, false));
      int64_t optimum = INT64_MAX;
      testing::ForEachTopologicalOrder(g, [&](const std::vector<OpId>& order) {
        MemoryTracker tracker(buffers);
        uint32_t ran = 0;
        int64_t peak = 0;
        for (size_t i = 0; i < order.size(); ++i) {
          const int64_t step = tracker.Run(order[i]);
          step_after[order[i]][ran] = step;
          peak = std::max(peak, step);
          ran |= 1u << order[i];
          for (size_t j = i + 1; j < order.size(); ++j) before[order[i]][order[j]] = true;
        }
        optimum = std::min(optimum, peak);
      });
      const auto least = [&](OpId x, OpId y, bool y_ran) {
        int64_t least_bytes = INT64_MAX;
        for (const auto& [ran, step] : step_after[x]) {
          if (((ran >> y) & 1) == (y_ran ? 1u : 0u)) least_bytes = std::min(least_bytes, step);
        }
        return least_bytes;
      };
      int64_t expected = 0;
      for (OpId u = 0; u < n; ++u) {
        for (OpId v = u + 1; v < n; ++v) {
          if (!before[u][v] || !before[v][u]) continue;  // one order only
          ++pairs_seen;
          const int64_t v_first = std::max(least(u, v, true), least(v, u, false));
          const int64_t u_first = std::max(least(v, u, true), least(u, v, false));
          expected = std::max(expected, std::min(v_first, u_first));
        }
      }
      std::vector<OpId> all(n);
      for (OpId u = 0; u < n; ++u) all[u] = u;
      const int64_t pair = PairBounds(buffers, reach).Of(all);
      // The steps of any order skip pairs that cannot raise it: the same.
      std::vector<int64_t> steps(n);
      {
        MemoryTracker tracker(buffers);
        for (OpId u : testing::RandomTopologicalOrder(g, rng)) steps[u] = tracker.Run(u);
      }
      ASSERT_EQ(PairBounds(buffers, reach).Of(all, 0, std::chrono::steady_clock::time_point::max(), nullptr, steps),
                pair)
          << "trial " << trial << " switches " << switches;
      ASSERT_LE(pair, expected) << "trial " << trial << " switches " << switches;
      ASSERT_LE(pair, optimum) << "trial " << trial << " switches " << switches;
      if (exact && !model.in_place) {
        ASSERT_EQ(pair, expected) << "trial " << trial << " switches " << switches;
        ++exact_checks;
      }
      const std::vector<int64_t> closure = ClosureStepLowerBounds(buffers, reach);
      stronger += pair > *std::max_element(closure.begin(), closure.end());
    }
  }
  EXPECT_GT(pairs_seen, 1000);
  EXPECT_GT(exact_checks, 500);
  EXPECT_GT(stronger, 0);
}

// Past its deadline the pair bound stops, says so, and is still a bound
// (`known` here: no pair done); with time it is not cut. A spent work
// budget stops it too, but is no cut: it is shared by the object's calls,
// so a fresh object gives the same bound again.
TEST(ClosureBoundTest, PairBoundStopsAtItsDeadline) {
  std::mt19937 rng(35);
  Graph g = *Graph::Build(testing::RandomDag(12, rng));
  const Reachability reach(g);
  BufferModel buffers(g, MemoryModel{});
  std::vector<OpId> all(g.num_ops());
  for (OpId u = 0; u < g.num_ops(); ++u) all[u] = u;
  bool cut = false;
  EXPECT_EQ(PairBounds(buffers, reach).Of(all, 7, std::chrono::steady_clock::now() - std::chrono::seconds(1), &cut), 7);
  EXPECT_TRUE(cut);
  cut = false;
  PairBounds pairs(buffers, reach);
  const int64_t timely = pairs.Of(all, 0, std::chrono::steady_clock::now() + std::chrono::hours(1), &cut);
  EXPECT_FALSE(cut);
  EXPECT_EQ(timely, PairBounds(buffers, reach).Of(all));
  EXPECT_EQ(pairs.Of(all), timely);  // the same object again: still a bound
}

}  // namespace
}  // namespace serenity
