#include "core/schedule/time_search.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/memory/simulator.h"
#include "core/schedule/baselines.h"
#include "gtest/gtest.h"
#include "tests/testing/orders.h"
#include "tests/testing/test_graph.h"

namespace serenity {
namespace {

constexpr double kNone = std::numeric_limits<double>::infinity();

// The least peak of any order with every op at its least-workspace
// alternative (layout conversions left out): budgets are drawn around it.
int64_t LeastWorkspacePeak(const Graph& graph, const MemoryModel& model) {
  const Graph least = graph.WithWorkspaces(WorkspacesOf(graph, LeastWorkspaceChoices(graph)));
  const BufferModel least_buffers(least, model);
  int64_t floor = std::numeric_limits<int64_t>::max();
  testing::ForEachTopologicalOrder(least, [&](const std::vector<OpId>& order) {
    floor = std::min(floor, Simulate(least_buffers, order)->peak_bytes);
  });
  return floor;
}

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
    const int64_t floor = LeastWorkspacePeak(graph, model);
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

// The peak of `order` with `choice`, its workspaces, conversions and (when
// the model counts weights) resident weights computed on their own
// (testing::CostOfChoice).
int64_t PeakWithChoice(const Graph& graph, const MemoryModel& model, const std::vector<OpId>& order,
                       const std::vector<int>& choice) {
  const testing::ChoiceCost cost = testing::CostOfChoice(graph, choice);
  MemoryModel without_weights = model;
  without_weights.count_weights = false;
  return Simulate(BufferModel(graph.WithWorkspaces(cost.workspace), without_weights), order)->peak_bytes +
         (model.count_weights ? cost.weight_bytes : 0);
}

// The least time of the choices for a fixed order whose steps fit the
// budget (each choice simulated with its conversions and weights), by brute
// force.
double BruteForceLeastTimeForOrder(const Graph& graph, const MemoryModel& model, const std::vector<OpId>& order,
                                   int64_t budget) {
  const int n = graph.num_ops();
  std::vector<int> choice(n, 0);
  double best = kNone;
  std::function<void(int)> choose = [&](int u) {
    if (u == n) {
      const testing::ChoiceCost cost = testing::CostOfChoice(graph, choice);
      if (PeakWithChoice(graph, model, order, choice) <= budget) best = std::min(best, cost.time);
      return;
    }
    const int alternatives = std::max<int>(1, static_cast<int>(graph.op(u).alternatives.size()));
    for (choice[u] = 0; choice[u] < alternatives; ++choice[u]) choose(u + 1);
  };
  choose(0);
  return best;
}

// What the brute-force comparisons count: budgets some choice fits, none
// fits, and the start order's choice fits.
struct Tally {
  int feasible = 0;
  int infeasible = 0;
  int order_feasible = 0;
};

// The fixed-order choice (on the file order), the search and the
// primitives' side on `graph` within `budget` against brute force over
// every order and every choice, conversions and weights computed on their
// own (testing::CostOfChoice). Returns the search's result (proven).
TimeSearchResult CheckAgainstBruteForce(const Graph& graph, const MemoryModel& model, int64_t budget,
                                        const std::string& trial, Tally* tally) {
  SCOPED_TRACE(trial);
  const BufferModel buffers(graph, model);
  const std::vector<OpId> start = FileOrder(graph);
  const double order_expected = BruteForceLeastTimeForOrder(graph, model, start, budget);
  const std::optional<PrimitiveSelection> from_start = SelectForOrder(buffers, start, budget);
  EXPECT_EQ(from_start.has_value(), order_expected != kNone);
  if (from_start.has_value() && order_expected != kNone) {
    ++tally->order_feasible;
    EXPECT_NEAR(from_start->time_us, order_expected, 1e-6);
    const testing::ChoiceCost cost = testing::CostOfChoice(graph, from_start->choice);
    EXPECT_EQ(from_start->workspace_bytes, cost.workspace);
    EXPECT_NEAR(from_start->time_us, cost.time, 1e-6);
    EXPECT_LE(PeakWithChoice(graph, model, start, from_start->choice), budget);
  }
  const TimeSearchResult result = MinimizeTime(buffers, start, budget, SearchOptions());
  const double expected =
      testing::BruteForceLeastTime(graph, model.alias_views, model.in_place, budget, model.count_weights);
  EXPECT_TRUE(result.proven);
  if (expected == kNone) {
    EXPECT_FALSE(result.feasible);
    ++tally->infeasible;
    return result;
  }
  EXPECT_TRUE(result.feasible) << "brute force found " << expected;
  if (!result.feasible) return result;
  ++tally->feasible;
  EXPECT_NEAR(result.selection.time_us, expected, 1e-6);
  EXPECT_NEAR(result.lower_bound_us, expected, 1e-6);
  EXPECT_TRUE(IsTopologicalOrder(graph, result.selection.order));
  if (!IsTopologicalOrder(graph, result.selection.order)) return result;
  const testing::ChoiceCost cost = testing::CostOfChoice(graph, result.selection.choice);
  EXPECT_EQ(result.selection.workspace_bytes, cost.workspace);
  EXPECT_NEAR(result.selection.time_us, cost.time, 1e-6);
  EXPECT_LE(PeakWithChoice(graph, model, result.selection.order, result.selection.choice), budget);
  if (std::optional<PrimitiveSelection> downgraded = DowngradeUntilFits(buffers, budget, SearchOptions())) {
    EXPECT_EQ(downgraded->workspace_bytes, testing::CostOfChoice(graph, downgraded->choice).workspace);
    EXPECT_LE(PeakWithChoice(graph, model, downgraded->order, downgraded->choice), budget);
    EXPECT_GE(downgraded->time_us, expected - 1e-6);
  }
  return result;
}

// With layouts (layout_conversions.h).
TEST(TimeSearchTest, EqualsBruteForceWithLayouts) {
  std::mt19937 rng(1919);
  Tally tally;
  int converting = 0;
  for (int trial = 0; trial < 600; ++trial) {
    GraphSpec spec = testing::RandomDag(3 + trial % 5, rng);
    testing::AddRandomAlternatives(&spec, rng, trial % 2 == 0 ? 0 : 4, 1, 3, 50, 121);
    testing::AddRandomLayouts(&spec, rng);
    if (trial % 3 == 1) testing::AddUnusedInput(&spec, "unused", 1 + static_cast<int64_t>(rng() % 150));
    const Graph graph = *Graph::Build(std::move(spec));
    MemoryModel model;
    model.in_place = trial % 4 == 1;
    model.alias_views = trial % 4 == 2;
    const int64_t budget = LeastWorkspacePeak(graph, model) - 5 + static_cast<int64_t>(rng() % 200);
    const TimeSearchResult result =
        CheckAgainstBruteForce(graph, model, budget, "trial " + std::to_string(trial), &tally);
    if (!result.feasible) continue;
    double own = 0;
    for (OpId u = 0; u < graph.num_ops(); ++u) own += TimeOf(graph.op(u), result.selection.choice[u]);
    if (result.selection.time_us > own + 1e-9) ++converting;
  }
  EXPECT_GT(tally.infeasible, 10);
  EXPECT_GT(tally.feasible, 300);
  EXPECT_GT(tally.order_feasible, 300);
  // Some optima pay for a conversion (and so the conversions are searched,
  // not avoided).
  EXPECT_GT(converting, 20);
}

// With transformed weights counted (primitive_weights.h); layouts on every
// third graph.
TEST(TimeSearchTest, EqualsBruteForceWithWeights) {
  std::mt19937 rng(2019);
  Tally tally;
  int transformed = 0, slower_for_weights = 0;
  for (int trial = 0; trial < 600; ++trial) {
    GraphSpec spec = testing::RandomDag(3 + trial % 5, rng);
    testing::AddRandomAlternatives(&spec, rng, trial % 2 == 0 ? 0 : 4, 1, 3, 50, 121);
    testing::AddRandomWeights(&spec, rng);
    if (trial % 3 == 2) testing::AddRandomLayouts(&spec, rng);
    const Graph graph = *Graph::Build(std::move(spec));
    MemoryModel model;
    model.count_weights = true;
    model.in_place = trial % 4 == 1;
    model.alias_views = trial % 4 == 2;
    const int64_t budget = LeastWorkspacePeak(graph, model) - 40 + static_cast<int64_t>(rng() % 240);
    const TimeSearchResult result =
        CheckAgainstBruteForce(graph, model, budget, "trial " + std::to_string(trial), &tally);
    if (!result.feasible) continue;
    if (testing::CostOfChoice(graph, result.selection.choice).weight_bytes != graph.weight_bytes()) ++transformed;
    // Where the weights-blind optimum is faster, the weights made the
    // difference.
    if (testing::BruteForceLeastTime(graph, model.alias_views, model.in_place, budget - graph.weight_bytes()) <
        result.selection.time_us - 1e-6) {
      ++slower_for_weights;
    }
  }
  EXPECT_GT(tally.infeasible, 10);
  EXPECT_GT(tally.feasible, 300);
  EXPECT_GT(tally.order_feasible, 200);
  // Some optima keep transformed weights, and some are slower because of
  // them.
  EXPECT_GT(transformed, 50);
  EXPECT_GT(slower_for_weights, 20);
}

// The primitives' side steps weights down too: Winograd's weights (400
// bytes for the 100 given) put the step of `grow` (no alternatives) over
// the budget, not conv's own, and direct fits.
TEST(TimeSearchTest, DowngradeStepsWeightsDown) {
  testing::TestGraph t;
  t.Input("x", 10)
      .Weight("w", 100)
      .Op("conv", "Conv", {"x", "w"}, {{"y", 10}})
      .Op("grow", "Resize", {"y"}, {{"z", 300}})
      .Output("z");
  GraphSpec spec = t.spec();
  spec.ops[0].alternatives = {{"direct", 100, 0, "", 0}, {"winograd", 10, 0, "", 400}};
  const Graph graph = *Graph::Build(std::move(spec));
  MemoryModel model;
  model.count_weights = true;
  const std::optional<PrimitiveSelection> downgraded =
      DowngradeUntilFits(BufferModel(graph, model), 450, SearchOptions());
  ASSERT_TRUE(downgraded.has_value());
  EXPECT_EQ(graph.op(0).alternatives[downgraded->choice[0]].name, "direct");
}

// Smaller transformed weights under an unlimited budget: the budget less
// the (negative) least extra must not wrap around.
TEST(TimeSearchTest, SmallerWeightsFitAnUnlimitedBudget) {
  testing::TestGraph t;
  t.Input("x", 10).Weight("w", 100).Op("conv", "Conv", {"x", "w"}, {{"y", 10}}).Output("y");
  GraphSpec spec = t.spec();
  spec.ops[0].alternatives = {{"small", 5, 0, "", 50}, {"plain", 10, 0, "", 0}};
  const Graph graph = *Graph::Build(std::move(spec));
  MemoryModel model;
  model.count_weights = true;
  const BufferModel buffers(graph, model);
  for (int64_t budget :
       {int64_t{1000}, std::numeric_limits<int64_t>::max() - 10, std::numeric_limits<int64_t>::max()}) {
    SCOPED_TRACE(budget);
    const TimeSearchResult result = MinimizeTime(buffers, {0}, budget, SearchOptions());
    ASSERT_TRUE(result.feasible);
    EXPECT_EQ(result.selection.time_us, 5);
    EXPECT_EQ(SelectForOrder(buffers, {0}, budget)->time_us, 5);
  }
}

// By hand: x (1 MiB) -> a -> y (1 MiB) -> b. a runs in layout B (2 us) or
// A (1 us); b reads B only, and converting y from A to B takes 10 us: a runs
// in B. (EqualsBruteForceWithLayouts catches an op forced to a layout that
// costs later: this graph's start plans are already optimal.)
TEST(TimeSearchTest, ConversionsCountInTimeAndWorkspace) {
  constexpr int64_t kMiB = 1 << 20;
  testing::TestGraph t;
  t.Input("x", kMiB).Op("a", "Conv", {"x"}, {{"y", kMiB}}).Op("b", "Conv", {"y"}, {{"z", 10}}).Output("z");
  GraphSpec spec = t.spec();
  spec.ops[0].alternatives = {{"slow_b", 2, 0, "B", 0}, {"fast_a", 1, 0, "A", 0}};
  spec.ops[1].alternatives = {{"only_b", 5, 0, "B", 0}};
  spec.layout_transforms = {{"A", "B", 10, 0}, {"B", "A", 10, 0}};
  const Graph graph = *Graph::Build(std::move(spec));
  const BufferModel buffers(graph, MemoryModel());
  const TimeSearchResult result = MinimizeTime(buffers, {0, 1}, 4 * kMiB, SearchOptions());
  ASSERT_TRUE(result.feasible);
  EXPECT_TRUE(result.proven);
  EXPECT_EQ(result.selection.time_us, 7);
  EXPECT_EQ(graph.op(0).alternatives[result.selection.choice[0]].name, "slow_b");
  // For the order alone, the same; past its deadline the fixed-order choice
  // keeps the fastest state only (fast_a, then a conversion: 16 us).
  EXPECT_EQ(SelectForOrder(buffers, {0, 1}, 4 * kMiB)->time_us, 7);
  const std::optional<PrimitiveSelection> late =
      SelectForOrder(buffers, {0, 1}, 4 * kMiB, std::chrono::steady_clock::time_point::min());
  ASSERT_TRUE(late.has_value());
  EXPECT_EQ(late->time_us, 16);
  // The other way round, the conversion is cheaper than the slow kernel.
  GraphSpec cheap = t.spec();
  cheap.ops[0].alternatives = {{"slow_b", 20, 0, "B", 0}, {"fast_a", 1, 0, "A", 0}};
  cheap.ops[1].alternatives = {{"only_b", 5, 0, "B", 0}};
  cheap.layout_transforms = {{"A", "B", 10, 3 * kMiB}, {"B", "A", 10, 0}};
  const Graph converting = *Graph::Build(std::move(cheap));
  const BufferModel converting_buffers(converting, MemoryModel());
  const TimeSearchResult converted = MinimizeTime(converting_buffers, {0, 1}, 5 * kMiB, SearchOptions());
  ASSERT_TRUE(converted.feasible);
  EXPECT_EQ(converted.selection.time_us, 16);
  // b's step: y (1 MiB), its converted copy (3 MiB) and z.
  EXPECT_EQ(converted.selection.workspace_bytes[1], 3 * kMiB);
  // Within 4 MiB the copy does not fit beside y: the slow kernel.
  const TimeSearchResult tight = MinimizeTime(converting_buffers, {0, 1}, 4 * kMiB, SearchOptions());
  ASSERT_TRUE(tight.feasible);
  EXPECT_EQ(tight.selection.time_us, 25);
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
