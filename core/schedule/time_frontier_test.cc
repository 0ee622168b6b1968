#include "core/schedule/time_frontier.h"

#include <cmath>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/schedule/baselines.h"
#include "gtest/gtest.h"
#include "tests/testing/orders.h"
#include "tests/testing/test_graph.h"

namespace serenity {
namespace {

// The sweep gives exactly the brute-force frontier (every order and every
// choice of every small graph), each point's peak its plan's, and with a
// time cap the points within it, the first the least peak within it.
TEST(TimeFrontierTest, EqualsBruteForceOnSmallGraphs) {
  std::mt19937 rng(23);
  int several = 0, several_with_weights = 0;
  for (int trial = 0; trial < 300; ++trial) {
    GraphSpec spec = testing::RandomDag(3 + trial % 4, rng);
    testing::AddRandomAlternatives(&spec, rng);
    // Every third graph has layouts, every sixth with copies up to 64 times
    // the tensor (above what the alternatives' workspaces alone reach).
    if (trial % 6 == 2) testing::AddRandomLayouts(&spec, rng);
    if (trial % 6 == 5) testing::AddRandomLayouts(&spec, rng, 600000, 64 << 20);
    // Every other graph has an input nobody reads: it dies after the first
    // step whichever op runs it (a forced-op rule once took it for a saving).
    if (trial % 2 == 1) testing::AddUnusedInput(&spec, "unused", 1 + static_cast<int64_t>(rng() % 150));
    // Every fourth counts weights, some transformed (primitive_weights.h).
    const bool weights = trial % 4 == 3;
    if (weights) testing::AddRandomWeights(&spec, rng);
    const Graph graph = *Graph::Build(spec);
    MemoryModel model;
    model.in_place = trial % 3 == 1;
    model.count_weights = weights;
    const BufferModel buffers(graph, model);
    const std::vector<std::pair<int64_t, double>> expected =
        testing::BruteForceTimeFrontier(graph, false, model.in_place, weights);
    const TimeFrontier frontier = SweepTimeFrontier(buffers, FileOrder(graph), SearchOptions());
    ASSERT_TRUE(frontier.proven) << "trial " << trial;
    ASSERT_EQ(frontier.points.size(), expected.size()) << "trial " << trial;
    for (size_t k = 0; k < expected.size(); ++k) {
      EXPECT_EQ(frontier.points[k].peak_bytes, expected[k].first) << "trial " << trial << " point " << k;
      EXPECT_NEAR(frontier.points[k].selection.time_us, expected[k].second, 1e-6) << "trial " << trial;
      EXPECT_TRUE(IsTopologicalOrder(graph, frontier.points[k].selection.order));
    }
    several += expected.size() >= 2;
    several_with_weights += weights && expected.size() >= 2;
    // A cap between the two fastest points' times keeps the fastest only.
    if (expected.size() >= 2) {
      const double cap = (expected[expected.size() - 1].second + expected[expected.size() - 2].second) / 2;
      const TimeFrontier capped = SweepTimeFrontier(buffers, FileOrder(graph), SearchOptions(), cap);
      ASSERT_EQ(capped.points.size(), 1u) << "trial " << trial;
      EXPECT_EQ(capped.points.front().peak_bytes, expected.back().first);
    }
  }
  EXPECT_GT(several, 50);
  EXPECT_GT(several_with_weights, 10);
}

// Weights of 2^62 bytes, one kernel keeping them in a byte: both points,
// with no sum of bytes wrapping around.
TEST(TimeFrontierTest, HugeWeightsKeepBothPoints) {
  constexpr int64_t kHuge = int64_t{1} << 62;
  testing::TestGraph t;
  t.Input("x", 10).Weight("w", kHuge).Op("conv", "Conv", {"x", "w"}, {{"y", 10}}).Output("y");
  GraphSpec spec = t.spec();
  spec.ops[0].alternatives = {{"small", 10, 0, "", 1}, {"fast", 5, 0, "", 0}};
  const Graph graph = *Graph::Build(std::move(spec));
  MemoryModel model;
  model.count_weights = true;
  const TimeFrontier frontier = SweepTimeFrontier(BufferModel(graph, model), {0}, SearchOptions());
  EXPECT_TRUE(frontier.proven);
  ASSERT_EQ(frontier.points.size(), 2u);
  EXPECT_EQ(frontier.points[0].peak_bytes, 21);
  EXPECT_EQ(frontier.points[0].selection.time_us, 10);
  EXPECT_EQ(frontier.points[1].peak_bytes, kHuge + 20);
  EXPECT_EQ(frontier.points[1].selection.time_us, 5);
}

TEST(TimeFrontierTest, ThinningKeepsTheEndsAndSpacesTheRest) {
  std::vector<FrontierPoint> points(10);
  for (int k = 0; k < 10; ++k) points[k].peak_bytes = k;
  const std::vector<FrontierPoint> thin = ThinFrontier(points, 4);
  ASSERT_EQ(thin.size(), 4u);
  EXPECT_EQ(thin[0].peak_bytes, 0);
  EXPECT_EQ(thin[1].peak_bytes, 3);
  EXPECT_EQ(thin[2].peak_bytes, 6);
  EXPECT_EQ(thin[3].peak_bytes, 9);
  EXPECT_EQ(ThinFrontier(points, 16).size(), 10u);
}

}  // namespace
}  // namespace serenity
