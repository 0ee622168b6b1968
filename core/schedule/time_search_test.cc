#include "core/schedule/time_search.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <vector>

#include "core/memory/simulator.h"
#include "core/schedule/baselines.h"
#include "gtest/gtest.h"
#include "tests/testing/orders.h"
#include "tests/testing/test_graph.h"

namespace serenity {
namespace {

constexpr double kNone = std::numeric_limits<double>::infinity();

// The plan found is valid (a topological order whose simulated peak, with
// the chosen workspaces, fits the budget; its time is the sum of its
// choices) and its time is the brute-force optimum; when nothing fits, the
// brute force agrees.
TEST(TimeSearchTest, EqualsBruteForceOnSmallGraphs) {
  std::mt19937 rng(19);
  int feasible = 0, infeasible = 0, below_start = 0, downgrades = 0;
  for (int trial = 0; trial < 1000; ++trial) {
    GraphSpec spec = testing::RandomDag(3 + trial % 5, rng);
    testing::AddRandomAlternatives(&spec, rng, 3, 1, 3, 50, 121);
    // Every other graph has an input nobody reads: it dies after the first
    // step whichever op runs it (a forced-op rule once took it for a saving).
    if (trial % 2 == 1) testing::AddUnusedInput(&spec, "unused", 1 + static_cast<int64_t>(rng() % 150));
    const Graph graph = *Graph::Build(std::move(spec));
    MemoryModel model;
    model.in_place = trial % 4 == 1;
    model.alias_views = trial % 4 == 2;
    const BufferModel buffers(graph, model);
    // Budgets from tight to loose around the least-workspace peak.
    const Graph least = graph.WithWorkspaces(WorkspacesOf(graph, LeastWorkspaceChoices(graph)));
    const BufferModel least_buffers(least, model);
    int64_t floor = std::numeric_limits<int64_t>::max();
    testing::ForEachTopologicalOrder(least, [&](const std::vector<OpId>& order) {
      floor = std::min(floor, Simulate(least_buffers, order)->peak_bytes);
    });
    const int64_t budget = floor - 5 + static_cast<int64_t>(rng() % 140);
    const std::vector<OpId> start = FileOrder(graph);
    const TimeSearchResult result = MinimizeTime(buffers, start, budget, SearchOptions());
    const double expected = testing::BruteForceLeastTime(graph, model.alias_views, model.in_place, budget);
    ASSERT_TRUE(result.proven) << "trial " << trial;
    if (expected == kNone) {
      EXPECT_FALSE(result.feasible) << "trial " << trial;
      ++infeasible;
      continue;
    }
    ASSERT_TRUE(result.feasible) << "trial " << trial << ": brute force found " << expected;
    ++feasible;
    EXPECT_NEAR(result.selection.time_us, expected, 1e-9) << "trial " << trial;
    EXPECT_NEAR(result.lower_bound_us, expected, 1e-9) << "trial " << trial;
    ASSERT_TRUE(IsTopologicalOrder(graph, result.selection.order)) << "trial " << trial;
    double time = 0;
    for (OpId u = 0; u < graph.num_ops(); ++u) {
      const int c = result.selection.choice[u];
      const Op& op = graph.op(u);
      ASSERT_EQ(c < 0, op.alternatives.empty()) << "trial " << trial;
      time += c < 0 ? 0 : op.alternatives[c].time_us;
      EXPECT_EQ(result.selection.workspace_bytes[u], c < 0 ? op.workspace_bytes : op.alternatives[c].workspace_bytes);
    }
    EXPECT_NEAR(time, result.selection.time_us, 1e-9) << "trial " << trial;
    const Graph chosen = graph.WithWorkspaces(result.selection.workspace_bytes);
    EXPECT_LE(Simulate(BufferModel(chosen, model), result.selection.order)->peak_bytes, budget) << "trial " << trial;
    // The primitives' side's plan, when it finds one, fits and is no
    // faster than the optimum.
    if (std::optional<PrimitiveSelection> downgraded = DowngradeUntilFits(buffers, budget, SearchOptions())) {
      ASSERT_TRUE(IsTopologicalOrder(graph, downgraded->order));
      const Graph aimed = graph.WithWorkspaces(downgraded->workspace_bytes);
      EXPECT_LE(Simulate(BufferModel(aimed, model), downgraded->order)->peak_bytes, budget) << "trial " << trial;
      EXPECT_GE(downgraded->time_us, expected - 1e-9) << "trial " << trial;
      ++downgrades;
    }
    std::optional<PrimitiveSelection> from_start = SelectForOrder(buffers, start, budget);
    if (!from_start.has_value() || from_start->time_us > expected + 1e-9) ++below_start;
  }
  // The budgets span infeasible, tight (the file order is not enough) and loose.
  EXPECT_GT(infeasible, 20);
  EXPECT_GT(feasible, 500);
  EXPECT_GT(below_start, 100);
  EXPECT_GT(downgrades, 500);
}

// By hand: two branches from one input, each with a fast primitive that
// needs 60 bytes of workspace and a slow one that needs none. Budget 230:
// the input (100) and a branch output (50) are live when the first branch
// runs (100 + 50 + 60 = 210 fits), and the second branch runs beside the
// input and the first output (100 + 50 + 50 + 60 = 260: too much), unless
// the first output is consumed first. The best order runs a, its reader c,
// then b, so both a and b are fast.
TEST(TimeSearchTest, OrderLetsBothFastPrimitivesFit) {
  const Graph graph = *Graph::Build(testing::TwoBranchesWithKernels());
  const BufferModel buffers(graph, MemoryModel());
  // File order a, b, c, d: b runs beside x, ya: 100 + 50 + 50 + 60 > 230.
  std::optional<PrimitiveSelection> file = SelectForOrder(buffers, {0, 1, 2, 3}, 230);
  ASSERT_TRUE(file.has_value());
  EXPECT_EQ(file->time_us, 40);
  EXPECT_EQ(graph.op(1).alternatives[file->choice[1]].name, "direct");
  const TimeSearchResult result = MinimizeTime(buffers, {0, 1, 2, 3}, 230, SearchOptions());
  ASSERT_TRUE(result.feasible);
  EXPECT_TRUE(result.proven);
  EXPECT_EQ(result.selection.time_us, 20);
  EXPECT_EQ(result.selection.order, (std::vector<OpId>{0, 2, 1, 3}));
  // Budget 160, the least peak (c runs beside x, ya and za): no room for
  // any workspace, both direct.
  const TimeSearchResult tight = MinimizeTime(buffers, {0, 1, 2, 3}, 160, SearchOptions());
  ASSERT_TRUE(tight.feasible);
  EXPECT_TRUE(tight.proven);
  EXPECT_EQ(tight.selection.time_us, 60);
  // Budget 159: nothing fits.
  const TimeSearchResult none = MinimizeTime(buffers, {0, 1, 2, 3}, 159, SearchOptions());
  EXPECT_FALSE(none.feasible);
  EXPECT_TRUE(none.proven);
}

}  // namespace
}  // namespace serenity
