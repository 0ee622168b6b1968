#include "core/schedule/summed_footprint.h"

#include <chrono>
#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/schedule/primitive_weights.h"
#include "gtest/gtest.h"
#include "tests/testing/orders.h"
#include "tests/testing/test_graph.h"

namespace serenity {
namespace {

constexpr double kNone = std::numeric_limits<double>::infinity();

// The footprint from the definition, written out again: every tensor not a
// weight, the weights when counted (those the choice keeps: CostOfChoice's,
// an alternative's weight_bytes replacing its op's own), and per op the
// workspace it runs with.
int64_t Footprint(const Graph& graph, const std::vector<int>& choice, bool count_weights) {
  int64_t bytes = count_weights ? testing::CostOfChoice(graph, choice).weight_bytes : 0;
  for (const Tensor& t : graph.tensors()) {
    if (!t.is_weight) bytes += t.bytes;
  }
  for (OpId u = 0; u < graph.num_ops(); ++u) {
    const Op& op = graph.op(u);
    bytes += choice[u] < 0 ? op.workspace_bytes : op.alternatives[choice[u]].workspace_bytes;
  }
  return bytes;
}

// The least time over every choice whose footprint is within `budget`
// (infinity when none is), by enumeration.
double BruteForce(const Graph& graph, int64_t budget, bool count_weights) {
  const int n = graph.num_ops();
  std::vector<int> choice(n, -1);
  double best = kNone;
  std::function<void(int)> visit = [&](int u) {
    if (u == n) {
      if (Footprint(graph, choice, count_weights) > budget) return;
      double time = 0;
      for (OpId v = 0; v < n; ++v) time += choice[v] < 0 ? 0 : graph.op(v).alternatives[choice[v]].time_us;
      best = std::min(best, time);
      return;
    }
    const int count = static_cast<int>(graph.op(u).alternatives.size());
    if (count == 0) {
      visit(u + 1);
      return;
    }
    for (int a = 0; a < count; ++a) {
      choice[u] = a;
      visit(u + 1);
    }
    choice[u] = -1;
  };
  visit(0);
  return best;
}

// The result's own fields agree with its choice.
void CheckConsistent(const Graph& graph, const SummedFootprintChoice& result, bool count_weights, int trial) {
  ASSERT_EQ(result.choice.size(), static_cast<size_t>(graph.num_ops())) << "trial " << trial;
  double time = 0;
  for (OpId u = 0; u < graph.num_ops(); ++u) {
    const Op& op = graph.op(u);
    ASSERT_EQ(result.choice[u] < 0, op.alternatives.empty()) << "trial " << trial;
    if (result.choice[u] >= 0) {
      ASSERT_LT(result.choice[u], static_cast<int>(op.alternatives.size()));
      time += op.alternatives[result.choice[u]].time_us;
    }
  }
  EXPECT_NEAR(result.time_us, time, 1e-9) << "trial " << trial;
  EXPECT_EQ(result.footprint_bytes, Footprint(graph, result.choice, count_weights)) << "trial " << trial;
}

// The knapsack's answer within `budget` against the enumeration: proven,
// consistent (CheckConsistent), and at the least time when some choice
// fits, above the budget when none does. Returns whether one fits.
bool CheckAgainstBruteForce(const Graph& graph, int64_t budget, bool count_weights, int trial) {
  const SummedFootprintChoice result = LeastTimeWithinFootprint(graph, budget, count_weights);
  CheckConsistent(graph, result, count_weights, trial);
  EXPECT_TRUE(result.proven) << "trial " << trial;
  const double expected = BruteForce(graph, budget, count_weights);
  if (std::isinf(expected)) {
    EXPECT_FALSE(result.feasible) << "trial " << trial;
    EXPECT_GT(result.footprint_bytes, budget) << "trial " << trial;
    return false;
  }
  EXPECT_TRUE(result.feasible) << "trial " << trial;
  EXPECT_LE(result.footprint_bytes, budget) << "trial " << trial;
  EXPECT_NEAR(result.time_us, expected, 1e-9) << "trial " << trial;
  return true;
}

TEST(SummedFootprintTest, EqualsBruteForceOnSmallGraphs) {
  std::mt19937 rng(66);
  int feasible = 0, infeasible = 0;
  for (int trial = 0; trial < 600; ++trial) {
    GraphSpec spec = testing::RandomDag(3 + trial % 6, rng);
    testing::AddRandomAlternatives(&spec, rng, 3, 1, 4, 50, 200);
    const Graph graph = *Graph::Build(std::move(spec));
    const bool count_weights = trial % 2 == 0;
    // Budgets around the least footprint, from below it to well above.
    const int64_t base = Footprint(graph, std::vector<int>(graph.num_ops(), -1), count_weights);
    const int64_t budget = base - 150 + static_cast<int64_t>(rng() % 900);
    ++(CheckAgainstBruteForce(graph, budget, count_weights, trial) ? feasible : infeasible);
  }
  EXPECT_GT(feasible, 200);
  EXPECT_GT(infeasible, 50);
}

// With transformed weights (an alternative's weight_bytes replacing its
// op's own weights when they are counted, larger or smaller): the footprint
// and the knapsack's optimum against the enumeration, weights counted and
// not.
TEST(SummedFootprintTest, TransformedWeightsEqualBruteForce) {
  std::mt19937 rng(67);
  int feasible = 0, infeasible = 0, differs = 0;
  for (int trial = 0; trial < 600; ++trial) {
    GraphSpec spec = testing::RandomDag(3 + trial % 6, rng);
    testing::AddRandomAlternatives(&spec, rng, 3, 1, 4, 50, 200);
    testing::AddRandomWeights(&spec, rng, 120);
    const Graph graph = *Graph::Build(std::move(spec));
    const bool count_weights = trial % 2 == 0;
    // The footprint of a random choice, and the weights ChosenGraph keeps.
    std::vector<int> some(graph.num_ops(), -1);
    for (OpId u = 0; u < graph.num_ops(); ++u) {
      const int count = static_cast<int>(graph.op(u).alternatives.size());
      if (count > 0) some[u] = static_cast<int>(rng() % count);
    }
    EXPECT_EQ(SummedFootprintBytes(graph, some, count_weights), Footprint(graph, some, count_weights))
        << "trial " << trial;
    EXPECT_EQ(FixedFootprintBytes(ChosenGraph(graph, some), count_weights) - FixedFootprintBytes(graph, count_weights),
              count_weights ? testing::CostOfChoice(graph, some).weight_bytes - graph.weight_bytes() : 0)
        << "trial " << trial;
    differs += count_weights && SummedFootprintBytes(graph, some, true) !=
                                    SummedFootprintBytes(graph, some, false) + graph.weight_bytes();
    std::vector<int> first(graph.num_ops(), -1);
    for (OpId u = 0; u < graph.num_ops(); ++u) first[u] = graph.op(u).alternatives.empty() ? -1 : 0;
    const int64_t base = Footprint(graph, first, count_weights);
    const int64_t budget = base - 350 + static_cast<int64_t>(rng() % 900);
    ++(CheckAgainstBruteForce(graph, budget, count_weights, trial) ? feasible : infeasible);
  }
  EXPECT_GT(feasible, 200);
  EXPECT_GT(infeasible, 50);
  EXPECT_GT(differs, 50);  // the weights changed the footprint often
}

// Not feasible, the choice of least footprint: with counted weights an
// alternative of more workspace may have the least footprint.
TEST(SummedFootprintTest, LeastFootprintCountsTheWeights) {
  GraphSpec spec;
  for (const char* name : {"x", "w", "y"}) {
    TensorSpec t;
    t.name = name;
    t.shape = {1};
    t.bytes = std::string(name) == "w" ? 90 : 10;
    t.is_weight = std::string(name) == "w";
    spec.tensors.push_back(t);
  }
  spec.inputs = {"x"};
  spec.outputs = {"y"};
  OpSpec conv;
  conv.name = "conv";
  conv.type = "Conv";
  conv.inputs = {"x", "w"};
  conv.outputs = {"y"};
  conv.alternatives = {{"small_workspace", 5, 0, "", 200}, {"small_weights", 9, 20, "", 30}};
  spec.ops = {conv};
  const Graph graph = *Graph::Build(std::move(spec));
  // Fixed 110 bytes (x, y and w). small_workspace: 10 + 10 + 200 = 220;
  // small_weights: 10 + 10 + 30 + 20 = 70.
  EXPECT_EQ(SummedFootprintBytes(graph, {0}, true), 220);
  EXPECT_EQ(SummedFootprintBytes(graph, {1}, true), 70);
  EXPECT_EQ(SummedFootprintBytes(graph, {0}, false), 20);
  const SummedFootprintChoice tight = LeastTimeWithinFootprint(graph, 60, true);
  EXPECT_FALSE(tight.feasible);
  EXPECT_TRUE(tight.proven);
  EXPECT_EQ(tight.choice, std::vector<int>{1});
  const SummedFootprintChoice fits = LeastTimeWithinFootprint(graph, 70, true);
  EXPECT_TRUE(fits.feasible);
  EXPECT_EQ(fits.choice, std::vector<int>{1});
  EXPECT_EQ(LeastTimeWithinFootprint(graph, 220, true).choice, std::vector<int>{0});
  EXPECT_EQ(LeastTimeWithinFootprint(graph, 20, false).choice, std::vector<int>{0});
}

// Two convolutions: winograd (10 us, 60 bytes) or direct (30 us, none).
// Tensors: x 100, ya 50, yb 50, za 10, out 10 = 220 bytes.
TEST(SummedFootprintTest, SmallKnapsackByHand) {
  const Graph graph = *Graph::Build(testing::TwoBranchesWithKernels());
  EXPECT_EQ(FixedFootprintBytes(graph, false), 220);
  auto time_at = [&](int64_t budget) { return LeastTimeWithinFootprint(graph, budget, false); };
  EXPECT_FALSE(time_at(219).feasible);
  EXPECT_EQ(time_at(219).footprint_bytes, 220);  // the least footprint, reported
  EXPECT_DOUBLE_EQ(time_at(220).time_us, 60);    // both direct
  EXPECT_DOUBLE_EQ(time_at(279).time_us, 60);
  EXPECT_DOUBLE_EQ(time_at(280).time_us, 40);  // one winograd
  EXPECT_EQ(time_at(280).footprint_bytes, 280);
  EXPECT_DOUBLE_EQ(time_at(339).time_us, 40);
  EXPECT_DOUBLE_EQ(time_at(340).time_us, 20);  // both
  EXPECT_DOUBLE_EQ(time_at(std::numeric_limits<int64_t>::max()).time_us, 20);
  for (int64_t budget : {220, 280, 340}) EXPECT_TRUE(time_at(budget).proven);
}

// Thinned to a few pairs, or stopped by the deadline: still a choice within
// the budget, never faster than the optimum, and not proven when the limit
// changed anything.
TEST(SummedFootprintTest, LimitsGiveAValidChoiceNotProven) {
  std::mt19937 rng(5);
  int thinned = 0;
  for (int trial = 0; trial < 200; ++trial) {
    GraphSpec spec = testing::RandomDag(8, rng);
    testing::AddRandomAlternatives(&spec, rng, 0, 3, 4, 50, 200);
    const Graph graph = *Graph::Build(std::move(spec));
    const int64_t least = LeastTimeWithinFootprint(graph, 0, false).footprint_bytes;
    const int64_t budget = least + static_cast<int64_t>(rng() % 500);
    const double expected = BruteForce(graph, budget, false);
    SummedFootprintLimits limits;
    limits.max_pairs = 2;
    const SummedFootprintChoice few = LeastTimeWithinFootprint(graph, budget, false, limits);
    CheckConsistent(graph, few, false, trial);
    ASSERT_TRUE(few.feasible) << "trial " << trial;
    EXPECT_LE(few.footprint_bytes, budget);
    EXPECT_GE(few.time_us, expected - 1e-9);
    EXPECT_LE(few.max_pairs_kept, 2);
    if (!few.proven) ++thinned;
    limits.max_pairs = int64_t{1} << 14;
    limits.deadline = std::chrono::steady_clock::now() - std::chrono::seconds(1);
    const SummedFootprintChoice stopped = LeastTimeWithinFootprint(graph, budget, false, limits);
    CheckConsistent(graph, stopped, false, trial);
    EXPECT_FALSE(stopped.proven);
    ASSERT_TRUE(stopped.feasible);
    EXPECT_LE(stopped.footprint_bytes, budget);
  }
  EXPECT_GT(thinned, 100);
}

TEST(SummedFootprintTest, MemoryLimitStopsNotProven) {
  const Graph graph = *Graph::Build(testing::TwoBranchesWithKernels());
  MemoryAccount account(4);  // less than one op's pairs
  SummedFootprintLimits limits;
  limits.memory = &account;
  const SummedFootprintChoice result = LeastTimeWithinFootprint(graph, 340, false, limits);
  EXPECT_FALSE(result.proven);
  EXPECT_TRUE(result.feasible);
  EXPECT_EQ(result.footprint_bytes, 220);  // the least footprint: nothing kept
  EXPECT_EQ(account.used(), 0);
}

}  // namespace
}  // namespace serenity
