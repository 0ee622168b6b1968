#include "core/schedule/budget_search.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <random>

#include "absl/strings/str_cat.h"
#include "common/thread_pool.h"
#include "core/memory/simulator.h"
#include "core/onnx/onnx_import.h"
#include "core/schedule/baselines.h"
#include "core/schedule/partition.h"
#include "core/schedule/signature_dp.h"
#include "gtest/gtest.h"
#include "tests/testing/orders.h"
#include "tests/testing/plan_verifier.h"
#include "tests/testing/test_graph.h"

namespace serenity {
namespace {

// The smallest peak over every topological order, by enumeration.
int64_t BruteForceOptimum(const BufferModel& buffers) {
  int64_t best = INT64_MAX;
  testing::ForEachTopologicalOrder(
      buffers.graph(), [&](const std::vector<OpId>& order) { best = std::min(best, PeakOf(buffers, order)); });
  return best;
}

MinimizeResult Minimize(const BufferModel& buffers) {
  std::vector<OpId> start = KahnOrder(buffers.graph());
  return MinimizePeak(buffers, start, LowerBoundBytes(buffers), SearchOptions());
}

// Two chains of `length` ops from one input, joined at the end: one segment
// of 2 * length + 1 ops. Tensor sizes from `rng`.
GraphSpec TwoChains(int length, std::mt19937& rng, std::vector<int64_t>* a_bytes, std::vector<int64_t>* b_bytes) {
  GraphSpec spec;
  const auto tensor = [&](const std::string& name, int64_t bytes) {
    TensorSpec t;
    t.name = name;
    t.bytes = bytes;
    t.has_bytes = true;
    spec.tensors.push_back(t);
  };
  tensor("x", 1000);
  for (const char side : {'a', 'b'}) {
    std::vector<int64_t>* bytes = side == 'a' ? a_bytes : b_bytes;
    bytes->assign(1, 0);
    for (int i = 1; i <= length; ++i) {
      bytes->push_back(100 * (1 + static_cast<int64_t>(rng() % 50)));
      tensor(absl::StrCat(std::string(1, side), i), bytes->back());
      OpSpec op;
      op.name = absl::StrCat("op_", std::string(1, side), i);
      op.type = "Relu";
      op.inputs = {i == 1 ? std::string("x") : absl::StrCat(std::string(1, side), i - 1)};
      op.outputs = {absl::StrCat(std::string(1, side), i)};
      spec.ops.push_back(op);
    }
  }
  tensor("y", 8);
  OpSpec join;
  join.name = "join";
  join.type = "Add";
  join.inputs = {absl::StrCat("a", length), absl::StrCat("b", length)};
  join.outputs = {"y"};
  spec.ops.push_back(join);
  spec.inputs = {"x"};
  spec.outputs = {"y"};
  return spec;
}

// A segment long enough for the windows (window_search.h) still gets the
// exact search's proof: two random chains of 800 ops each (1,600 on a pool
// of two threads, where the windows run as its tasks), whose least peak a
// dynamic program over (ops run in one chain, in the other) gives.
TEST(BudgetSearchTest, LongSegmentOfTwoChainsIsProvenOptimal) {
  std::mt19937 rng(7);
  ThreadPool pool(2);
  for (int trial = 0; trial < 4; ++trial) {
    const int length = trial < 3 ? 800 : 1600;
    Executor* executor = trial < 3 ? nullptr : &pool;
    std::vector<int64_t> a, b;
    const Graph g = *Graph::Build(TwoChains(length, rng, &a, &b));
    const BufferModel buffers(g, MemoryModel());
    // Bytes live after i ops of chain a and j of chain b, and the least
    // largest step over the ways there.
    const auto live = [&](int i, int j) { return (i == 0 || j == 0 ? 1000 : 0) + a[i] + b[j]; };
    std::vector<std::vector<int64_t>> best(length + 1, std::vector<int64_t>(length + 1, INT64_MAX));
    best[0][0] = 0;
    for (int i = 0; i <= length; ++i) {
      for (int j = 0; j <= length; ++j) {
        if (i > 0) best[i][j] = std::min(best[i][j], std::max(best[i - 1][j], live(i - 1, j) + a[i]));
        if (j > 0) best[i][j] = std::min(best[i][j], std::max(best[i][j - 1], live(i, j - 1) + b[j]));
      }
    }
    const int64_t optimum = std::max(best[length][length], live(length, length) + 8);
    const MinimizeResult result = MinimizePeak(buffers, GreedyOrder(buffers), 0, SearchOptions(), 0, executor);
    ASSERT_TRUE(IsTopologicalOrder(g, result.order));
    EXPECT_EQ(result.peak_bytes, optimum) << "trial " << trial;
    EXPECT_EQ(PeakOf(buffers, result.order), result.peak_bytes);
    EXPECT_TRUE(result.optimal) << "trial " << trial;
  }
}

// The search and the DP equal brute force on thousands of random small DAGs, under
// every memory-model switch, and its order really has the reported peak.
TEST(BudgetSearchTest, EqualsBruteForceOnRandomDags) {
  std::mt19937 rng(2024);
  for (int trial = 0; trial < 2000; ++trial) {
    Graph g = *Graph::Build(testing::RandomDag(1 + trial % 10, rng));
    const MemoryModel model{trial % 2 == 1, trial % 3 == 2, trial % 4 >= 2};
    BufferModel buffers(g, model);
    MinimizeResult result = Minimize(buffers);
    ASSERT_TRUE(IsTopologicalOrder(g, result.order)) << "trial " << trial;
    ASSERT_EQ(result.peak_bytes,
              testing::NaivePeak(g, result.order, model.alias_views, model.count_weights, model.in_place));
    ASSERT_TRUE(result.optimal);
    ASSERT_EQ(result.peak_bytes, BruteForceOptimum(buffers)) << "trial " << trial;
    ASSERT_EQ(result.lower_bound_bytes, result.peak_bytes);
    MinimizeResult dp = SignatureDp(buffers, SearchOptions());
    ASSERT_TRUE(dp.optimal);
    ASSERT_TRUE(IsTopologicalOrder(g, dp.order));
    ASSERT_EQ(dp.peak_bytes, result.peak_bytes) << "trial " << trial;
    ASSERT_EQ(PeakOf(buffers, dp.order), dp.peak_bytes);
    // The budgeted DP finds the optimum at the optimum and nothing below it.
    ASSERT_EQ(SignatureDp(buffers, SearchOptions(), result.peak_bytes).peak_bytes, result.peak_bytes);
    ASSERT_TRUE(SignatureDp(buffers, SearchOptions(), result.peak_bytes - 1).order.empty());
  }
}

// With only_below, the search minimises as without it when the optimum is
// below that, and otherwise stops with a valid order and a bound of at
// least only_below (so the caller knows no order goes below it).
TEST(BudgetSearchTest, OnlyBelowMinimisesBelowItOrProvesNoneIs) {
  std::mt19937 rng(2026);
  int below = 0, not_below = 0;
  for (int trial = 0; trial < 600; ++trial) {
    Graph g = *Graph::Build(testing::RandomDag(2 + trial % 10, rng));
    const MemoryModel model{trial % 2 == 1, trial % 3 == 2, trial % 4 >= 2};
    BufferModel buffers(g, model);
    const int64_t optimum = BruteForceOptimum(buffers);
    const std::vector<OpId> start = testing::RandomTopologicalOrder(g, rng);
    SearchOptions options;
    options.only_below = optimum + static_cast<int64_t>(rng() % 5) - 2;  // around the optimum
    if (options.only_below < 1) options.only_below = 1;
    // No lower bound from the caller: the search's own bounds and checks.
    MinimizeResult result = MinimizePeak(buffers, start, /*lower_bound=*/0, options);
    ASSERT_TRUE(IsTopologicalOrder(g, result.order)) << "trial " << trial;
    ASSERT_EQ(PeakOf(buffers, result.order), result.peak_bytes);
    ASSERT_LE(result.lower_bound_bytes, optimum) << "trial " << trial;
    if (optimum < options.only_below) {
      ++below;
      ASSERT_EQ(result.peak_bytes, optimum) << "trial " << trial;
      ASSERT_TRUE(result.optimal);
    } else {
      ++not_below;
      ASSERT_GE(result.lower_bound_bytes, options.only_below) << "trial " << trial;
    }
  }
  EXPECT_GT(below, 100);
  EXPECT_GT(not_below, 100);
}

// Once the bound reaches only_below nothing more runs. Below the bounds
// the search starts from, no check at all; just above them, the first
// round (the check at the bound) refutes it, and no window of the long
// segment (which would look for an order all the same) nor any other check
// follows. (Which bounds the search computes depends on only_below: the
// pair bounds only when they could matter, so the start is found by
// raising only_below past each bound that needed no check.)
TEST(BudgetSearchTest, OnlyBelowTheBoundStopsBeforeTheWindows) {
  const Graph g = *Graph::Build(testing::LayeredDag(1600, 8));
  const BufferModel buffers(g, MemoryModel{});
  SearchOptions options;
  options.time_limit_seconds = 20;
  options.only_below = 1;
  MinimizeResult result;
  for (int attempt = 0; attempt < 4; ++attempt) {
    result = MinimizePeak(buffers, KahnOrder(g), /*lower_bound=*/0, options);
    EXPECT_TRUE(IsTopologicalOrder(g, result.order));
    ASSERT_GE(result.lower_bound_bytes, options.only_below);
    if (result.stats.checks > 0) break;
    options.only_below = result.lower_bound_bytes + 1;
  }
  EXPECT_EQ(result.stats.checks, 1);
}

// Without only_below a long segment goes to the windows before any check
// of the whole segment: on this layered DAG they prove the optimum, so no
// such check runs (the check at the bound used to come first and, on
// longer DAGs, run out its time without settling anything).
TEST(BudgetSearchTest, LongSegmentsGoToTheWindowsBeforeAnyCheck) {
  const Graph g = *Graph::Build(testing::LayeredDag(1600, 8));
  const BufferModel buffers(g, MemoryModel{});
  SearchOptions options;
  options.time_limit_seconds = 20;
  const MinimizeResult result = MinimizePeak(buffers, KahnOrder(g), /*lower_bound=*/0, options);
  EXPECT_TRUE(IsTopologicalOrder(g, result.order));
  EXPECT_EQ(result.peak_bytes, PeakOf(buffers, result.order));
  EXPECT_TRUE(result.optimal);
  EXPECT_GT(result.stats.checks, 0);  // the windows'
  EXPECT_EQ(result.stats.segment_checks, 0);
}

// The same with Concats laid out in place (and the other switches varied):
// slices that live until the output's last reader change what is optimal.
TEST(BudgetSearchTest, EqualsBruteForceWithConcatsInPlace) {
  std::mt19937 rng(2025);
  int differs = 0;
  for (int trial = 0; trial < 800; ++trial) {
    Graph g = *Graph::Build(testing::RandomDag(1 + trial % 10, rng, /*concats=*/true));
    const MemoryModel model{trial % 2 == 1, trial % 3 == 2, trial % 4 >= 2, true};
    BufferModel buffers(g, model);
    MinimizeResult result = Minimize(buffers);
    ASSERT_TRUE(IsTopologicalOrder(g, result.order)) << "trial " << trial;
    ASSERT_EQ(result.peak_bytes, testing::NaivePeak(g, result.order, model.alias_views, model.count_weights,
                                                    model.in_place, model.concat_in_place));
    ASSERT_TRUE(result.optimal);
    const int64_t optimum = BruteForceOptimum(buffers);
    ASSERT_EQ(result.peak_bytes, optimum) << "trial " << trial;
    ASSERT_EQ(result.lower_bound_bytes, result.peak_bytes);
    MinimizeResult dp = SignatureDp(buffers, SearchOptions());
    ASSERT_EQ(dp.peak_bytes, optimum) << "trial " << trial;
    ASSERT_EQ(PeakOf(buffers, dp.order), dp.peak_bytes);
    MemoryModel copying = model;
    copying.concat_in_place = false;
    differs += BruteForceOptimum(BufferModel(g, copying)) != optimum;
  }
  EXPECT_GT(differs, 50);
}

// Every combination of the pruning rules reaches the same optimum; the
// rules only change how many states are explored.
TEST(BudgetSearchTest, PruningRulesKeepTheOptimum) {
  std::mt19937 rng(31);
  int64_t states_with = 0, states_without = 0, states_without_sets = 0;
  for (int trial = 0; trial < 500; ++trial) {
    Graph g = *Graph::Build(testing::RandomDag(4 + trial % 9, rng));
    BufferModel buffers(g, MemoryModel{trial % 2 == 0, false, trial % 3 == 0});
    const int64_t optimum = BruteForceOptimum(buffers);
    for (int rules = 0; rules < 8; ++rules) {
      SearchOptions options;
      options.forced_transitions = (rules & 1) != 0;
      options.forced_pairs = (rules & 2) != 0;
      options.forced_sets = (rules & 4) != 0;
      MinimizeResult result = MinimizePeak(buffers, KahnOrder(g), LowerBoundBytes(buffers), options);
      ASSERT_TRUE(result.optimal);
      ASSERT_EQ(result.peak_bytes, optimum) << "trial " << trial << " rules " << rules;
      if (rules == 7) states_with += result.stats.states;
      if (rules == 3) states_without_sets += result.stats.states;
      if (rules == 0) states_without += result.stats.states;
    }
  }
  EXPECT_LT(states_with, states_without);
  EXPECT_LT(states_with, states_without_sets);
}

// Relaxed mode ("seemingly good" transitions) is not exact: its orders are
// valid and never below the optimum, a check never claims a budget is
// infeasible, and a plan is optimal only when its peak is the optimum. It
// finds the optimum on most small graphs (a test that it is a heuristic
// worth having, not a promise).
TEST(BudgetSearchTest, RelaxedModeIsHonest) {
  std::mt19937 rng(77);
  int at_optimum = 0, optimal_claims = 0;  // printed for the record
  const int trials = 400;
  for (int trial = 0; trial < trials; ++trial) {
    Graph g = *Graph::Build(testing::RandomDag(4 + trial % 9, rng));
    BufferModel buffers(g, MemoryModel{trial % 2 == 0, false, trial % 3 == 0});
    const int64_t optimum = BruteForceOptimum(buffers);
    SearchOptions options;
    options.seemingly_good = true;
    MinimizeResult result = MinimizePeak(buffers, KahnOrder(g), LowerBoundBytes(buffers), options);
    ASSERT_TRUE(IsTopologicalOrder(g, result.order)) << "trial " << trial;
    ASSERT_EQ(result.peak_bytes, PeakOf(buffers, result.order));
    ASSERT_GE(result.peak_bytes, optimum) << "trial " << trial;
    ASSERT_LE(result.lower_bound_bytes, optimum) << "trial " << trial;
    if (result.optimal) {
      ASSERT_EQ(result.peak_bytes, optimum) << "trial " << trial;
      ++optimal_claims;
    }
    at_optimum += result.peak_bytes == optimum;
    BudgetSearch search(buffers, options);
    SearchStats stats;
    std::vector<OpId> order;
    int64_t next = 0;
    ASSERT_NE(search.Check(optimum - 1, std::chrono::steady_clock::time_point::max(), &order, &next, &stats),
              Feasibility::kInfeasible);
  }
  EXPECT_GT(at_optimum, trials * 3 / 4);
  std::printf("relaxed: optimum on %d of %d graphs, claimed optimal on %d\n", at_optimum, trials, optimal_claims);
}

TEST(BudgetSearchTest, FeasibilityFlipsAtTheOptimum) {
  std::mt19937 rng(99);
  for (int trial = 0; trial < 300; ++trial) {
    Graph g = *Graph::Build(testing::RandomDag(3 + trial % 8, rng));
    BufferModel buffers(g, {});
    const int64_t optimum = BruteForceOptimum(buffers);
    BudgetSearch search(buffers, SearchOptions());
    SearchStats stats;
    std::vector<OpId> order;
    int64_t next = 0;
    const auto forever = std::chrono::steady_clock::time_point::max();
    ASSERT_EQ(search.Check(optimum, forever, &order, &next, &stats), Feasibility::kFeasible);
    ASSERT_LE(PeakOf(buffers, order), optimum);
    ASSERT_EQ(search.Check(optimum - 1, forever, &order, &next, &stats), Feasibility::kInfeasible);
    // The budget to try next is never above the optimum.
    ASSERT_LE(next, optimum);
    ASSERT_GT(next, optimum - 1);
  }
}

// A node that keeps fewer candidates finds the later ones by scanning the
// ready ops: the same search. With 1 or 2 kept (the scan from the second or
// third branch on) and the default, every check of random graphs, with and
// without a preferred order, exact and relaxed, gives the same answer,
// order, next budget and number of states.
TEST(BudgetSearchTest, KeptCandidatesChangeNothingButMemory) {
  std::mt19937 rng(4242);
  const auto forever = std::chrono::steady_clock::time_point::max();
  int scanned = 0;  // checks that expanded more than one state (a proxy: the
                    // scan needs a node that tries a second candidate)
  for (int trial = 0; trial < 200; ++trial) {
    Graph g = *Graph::Build(testing::RandomDag(6 + trial % 26, rng, trial % 3 == 1));
    BufferModel buffers(g, MemoryModel{false, trial % 4 == 3, false, trial % 3 == 1});
    Subproblem part;
    if (trial % 2 == 0) part.preferred = testing::RandomTopologicalOrder(g, rng);
    const int64_t kahn = PeakOf(buffers, KahnOrder(g));
    const int64_t bound = LowerBoundBytes(buffers);
    std::vector<int64_t> budgets = {kahn, kahn - 1, bound, bound + (kahn - bound) / 2, bound + (kahn - bound) / 4};
    SearchOptions options;
    options.seemingly_good = trial % 5 == 4;
    struct Run {
      Feasibility answer;
      std::vector<OpId> order;
      int64_t next = 0;
      int64_t states = 0;
    };
    std::vector<std::vector<Run>> runs;
    for (const int kept : {64, 2, 1}) {
      options.kept_candidates = kept;
      BudgetSearch search(buffers, options, part);
      std::vector<Run> these;
      for (int64_t budget : budgets) {
        Run run;
        SearchStats stats;
        run.answer = search.Check(budget, forever, &run.order, &run.next, &stats);
        run.states = stats.states;
        these.push_back(run);
      }
      runs.push_back(std::move(these));
    }
    for (size_t b = 0; b < budgets.size(); ++b) {
      if (runs[0][b].states > 1) ++scanned;
      for (size_t k = 1; k < runs.size(); ++k) {
        EXPECT_EQ(runs[k][b].answer, runs[0][b].answer) << "trial " << trial << " budget " << budgets[b];
        EXPECT_EQ(runs[k][b].order, runs[0][b].order) << "trial " << trial << " budget " << budgets[b];
        EXPECT_EQ(runs[k][b].states, runs[0][b].states) << "trial " << trial << " budget " << budgets[b];
        if (runs[0][b].answer == Feasibility::kInfeasible) {
          EXPECT_EQ(runs[k][b].next, runs[0][b].next) << "trial " << trial << " budget " << budgets[b];
        }
      }
    }
  }
  EXPECT_GT(scanned, 100);
}

// A check whose budget the preferred order fits follows it without
// backtracking: every state it expands is on the way to the order it finds
// (forced transitions only move ops that keep some completion within the
// budget). Without the preferred order the same checks backtrack on some of
// these graphs.
TEST(BudgetSearchTest, APreferredOrderThatFitsIsFollowedWithoutBacktracking) {
  std::mt19937 rng(7);
  int backtracked_without = 0;
  for (int trial = 0; trial < 300; ++trial) {
    Graph g = *Graph::Build(testing::RandomDag(8 + trial % 24, rng, trial % 2 == 1));
    BufferModel buffers(g, {});
    Subproblem part;
    part.preferred = testing::RandomTopologicalOrder(g, rng);
    const int64_t budget = PeakOf(buffers, part.preferred);
    const auto forever = std::chrono::steady_clock::time_point::max();
    for (const bool preferred : {true, false}) {
      BudgetSearch search(buffers, SearchOptions(), preferred ? part : Subproblem());
      SearchStats stats;
      std::vector<OpId> order;
      int64_t next = 0;
      ASSERT_EQ(search.Check(budget, forever, &order, &next, &stats), Feasibility::kFeasible);
      ASSERT_TRUE(IsTopologicalOrder(g, order));
      ASSERT_LE(PeakOf(buffers, order), budget);
      if (preferred) {
        ASSERT_LE(stats.states, g.num_ops()) << "trial " << trial;
      } else if (stats.states > g.num_ops()) {
        ++backtracked_without;
      }
    }
  }
  EXPECT_GT(backtracked_without, 0);
}

// One search asked many budgets in a row, up and down: a check below a
// feasible one reuses the memo of the sets that failed there, and every
// answer still equals brute force, under every memory-model switch.
TEST(BudgetSearchTest, ChecksInAnyOrderAgreeWithBruteForce) {
  std::mt19937 rng(321);
  const auto forever = std::chrono::steady_clock::time_point::max();
  for (int trial = 0; trial < 300; ++trial) {
    Graph g = *Graph::Build(testing::RandomDag(3 + trial % 8, rng, /*concats=*/trial % 5 == 0));
    const MemoryModel model{trial % 2 == 1, trial % 3 == 2, trial % 4 >= 2, trial % 5 == 0};
    BufferModel buffers(g, model);
    const int64_t optimum = BruteForceOptimum(buffers);
    const int64_t kahn = PeakOf(buffers, KahnOrder(g));
    BudgetSearch search(buffers, SearchOptions());
    std::uniform_int_distribution<int64_t> pick(optimum - optimum / 4 - 1, kahn + 1);
    // Descend as MinimizePeak does, then jump around.
    std::vector<int64_t> budgets;
    for (int64_t b = kahn - 1; b >= optimum - 1 && budgets.size() < 12; b -= 1 + (kahn - optimum) / 5) {
      budgets.push_back(b);
    }
    budgets.push_back(optimum);
    budgets.push_back(optimum - 1);
    for (int i = 0; i < 8; ++i) budgets.push_back(pick(rng));
    for (int64_t budget : budgets) {
      SearchStats stats;
      std::vector<OpId> order;
      int64_t next = 0;
      const Feasibility answer = search.Check(budget, forever, &order, &next, &stats);
      if (budget >= optimum) {
        ASSERT_EQ(answer, Feasibility::kFeasible) << "trial " << trial << " budget " << budget;
        ASSERT_TRUE(IsTopologicalOrder(g, order));
        ASSERT_LE(PeakOf(buffers, order), budget);
      } else {
        ASSERT_EQ(answer, Feasibility::kInfeasible) << "trial " << trial << " budget " << budget;
        ASSERT_GT(next, budget);
        ASSERT_LE(next, optimum);  // every budget below `next` fails: none may fit
      }
    }
  }
}

TEST(BudgetSearchTest, ALimitStillReturnsAValidOrderAndAnHonestBound) {
  std::mt19937 rng(5);
  int unproven = 0;
  for (int trial = 0; trial < 50; ++trial) {
    Graph g = *Graph::Build(testing::RandomDag(60, rng));
    BufferModel buffers(g, {});
    SearchOptions limits;
    limits.max_states = 1;  // stops at the first check that needs to remember a state
    std::vector<OpId> start = KahnOrder(g);
    MinimizeResult result = MinimizePeak(buffers, start, LowerBoundBytes(buffers), limits);
    ASSERT_TRUE(IsTopologicalOrder(g, result.order));
    ASSERT_EQ(result.peak_bytes, PeakOf(buffers, result.order));
    ASSERT_LE(result.peak_bytes, PeakOf(buffers, start));
    ASSERT_LE(result.lower_bound_bytes, result.peak_bytes);
    MinimizeResult full = Minimize(buffers);
    ASSERT_LE(result.lower_bound_bytes, full.peak_bytes);  // the bound is real
    if (!result.optimal) {
      ++unproven;
      EXPECT_TRUE(result.stats.hit_limit);
    } else {
      EXPECT_EQ(result.peak_bytes, full.peak_bytes);
    }
  }
  EXPECT_GT(unproven, 0);  // the limit did bite somewhere
}

// The memo is charged to the memory account before it grows: a tiny
// account stops the search as the state cap does (a valid order, an honest
// bound, hit_memory_limit) with nothing left charged; a generous one gives
// the same answer as none.
TEST(BudgetSearchTest, MemoryAccountStopsTheSearchLikeTheStateCap) {
  std::mt19937 rng(5);
  int stopped = 0;
  for (int trial = 0; trial < 30; ++trial) {
    Graph g = *Graph::Build(testing::RandomDag(60, rng));
    BufferModel buffers(g, {});
    const std::vector<OpId> start = KahnOrder(g);
    const MinimizeResult full = Minimize(buffers);
    MemoryAccount tiny(1024);  // less than an empty memo
    SearchOptions limits;
    limits.memory = &tiny;
    const MinimizeResult result = MinimizePeak(buffers, start, LowerBoundBytes(buffers), limits);
    ASSERT_TRUE(IsTopologicalOrder(g, result.order));
    ASSERT_EQ(result.peak_bytes, PeakOf(buffers, result.order));
    ASSERT_LE(result.lower_bound_bytes, full.peak_bytes);
    EXPECT_LE(tiny.peak(), 1024);
    EXPECT_EQ(tiny.used(), 0);
    if (!result.optimal) {
      ++stopped;
      EXPECT_TRUE(result.stats.hit_memory_limit);
    }
    MemoryAccount generous(int64_t{1} << 32);
    limits.memory = &generous;
    const MinimizeResult same = MinimizePeak(buffers, start, LowerBoundBytes(buffers), limits);
    EXPECT_EQ(same.order, full.order);
    EXPECT_EQ(same.optimal, full.optimal);
    EXPECT_FALSE(same.stats.hit_memory_limit);
    EXPECT_EQ(generous.used(), 0);
    if (same.stats.states > 0) {
      EXPECT_GT(generous.peak(), 0);
    }
  }
  EXPECT_GT(stopped, 0);
}

// Proven optima of shared models (../shared/bench/README.md).
TEST(BudgetSearchTest, MatchesProvenOptimaOfSharedCells) {
  const std::pair<const char*, int64_t> cells[] = {{"darts_v2_cifar10_normal_cell", 1769472},
                                                   {"darts_v2_imagenet_normal_cell", 1806336},
                                                   {"nasnet_a_cifar10_normal_cell", 2211840},
                                                   {"nasnet_a_cifar10_reduce_cell", 2211840},
                                                   {"amoebanet_a_cifar10_normal_cell", 1327104},
                                                   {"amoebanet_a_cifar10_reduce_cell", 1327104},
                                                   {"nasnet_a_cifar10", 1695744},
                                                   {"darts_v2_cifar10", 1345536},
                                                   {"tv_inception_v3", 6083072},
                                                   {"randwire_ws_cifar10_stage1", 1118208}};
  for (const auto& [name, optimum] : cells) {
    SCOPED_TRACE(name);
    absl::StatusOr<Graph> g =
        ImportOnnxModel(testing::ReadFile(std::string(SERENITY_SHARED_DIR "/bench/models/") + name + ".onnx"), {});
    ASSERT_TRUE(g.ok());
    BufferModel buffers(*g, {});
    MinimizeResult result = Minimize(buffers);
    EXPECT_TRUE(result.optimal);
    EXPECT_EQ(result.peak_bytes, optimum);
    EXPECT_EQ(testing::NaivePeak(*g, result.order, false, false), optimum);
  }
}

// A segment's search started from the state before it (positions and the
// live bytes there, as MinimizePeak's segments are) answers every check as
// the search given the done ops one by one: the same answer, order, next
// budget and states, on random DAGs under the memory-model switches.
TEST(BudgetSearchTest, APartStartedFromPositionsAnswersAsOneGivenTheDoneOps) {
  std::mt19937 rng(77);
  int segments_checked = 0;
  for (int trial = 0; trial < 400; ++trial) {
    Graph g = *Graph::Build(testing::RandomDag(5 + trial % 30, rng, /*concats=*/trial % 2 == 1));
    const MemoryModel model{trial % 3 == 1, trial % 5 == 2, trial % 4 >= 2, trial % 7 == 0};
    BufferModel buffers(g, model);
    std::vector<OpId> all;
    std::vector<std::vector<OpId>> segments = SplitAtCutPoints(g);
    for (const std::vector<OpId>& segment : segments) all.insert(all.end(), segment.begin(), segment.end());
    std::vector<int32_t> position(g.num_ops());
    for (size_t i = 0; i < all.size(); ++i) position[all[i]] = static_cast<int32_t>(i);
    const std::vector<int64_t> live = LiveBytesAlong(buffers, all);
    size_t before = 0;
    for (const std::vector<OpId>& segment : segments) {
      Subproblem listed;
      listed.done.assign(all.begin(), all.begin() + static_cast<long>(before));
      listed.ops = segment;
      Subproblem positioned;
      positioned.ops = segment;
      positioned.position = &position;
      positioned.live_after_done = live[before];
      BudgetSearch a(buffers, SearchOptions(), listed);
      BudgetSearch b(buffers, SearchOptions(), positioned);
      // The segment's steps in its own order, and budgets around them
      // (descending, so the memo is reused as MinimizePeak reuses it).
      // Both parts start from LiveBytesAlong's count (b from live[before],
      // a from the count along its done ops); a count too high fails the
      // budgets at and above the segment's peak found here.
      MemoryTracker tracker(buffers);
      for (size_t i = 0; i < before; ++i) tracker.Run(all[i]);
      MemoryTracker after_done = tracker;
      int64_t peak = 0;
      for (OpId u : segment) peak = std::max(peak, tracker.Run(u));
      for (int64_t budget : {peak + 1, peak, peak - 1, peak * 3 / 4, peak / 2, peak / 4}) {
        std::vector<OpId> order_a, order_b;
        int64_t next_a = -1, next_b = -1;
        SearchStats stats_a, stats_b;
        const Feasibility answer_a =
            a.Check(budget, std::chrono::steady_clock::time_point::max(), &order_a, &next_a, &stats_a);
        const Feasibility answer_b =
            b.Check(budget, std::chrono::steady_clock::time_point::max(), &order_b, &next_b, &stats_b);
        ASSERT_EQ(answer_a, answer_b) << "trial " << trial << " budget " << budget;
        ASSERT_EQ(order_a, order_b) << "trial " << trial << " budget " << budget;
        ASSERT_EQ(next_a, next_b) << "trial " << trial << " budget " << budget;
        ASSERT_EQ(stats_a.states, stats_b.states) << "trial " << trial << " budget " << budget;
        // The segment's own order fits its peak; a found order fits the
        // budget by the model's replay.
        if (budget >= peak) {
          EXPECT_EQ(answer_b, Feasibility::kFeasible) << "trial " << trial;
        }
        if (answer_b == Feasibility::kFeasible) {
          MemoryTracker replay = after_done;
          for (OpId u : order_b) ASSERT_LE(replay.Run(u), budget) << "trial " << trial;
        }
        ++segments_checked;
      }
      before += segment.size();
    }
  }
  EXPECT_GT(segments_checked, 2000);
}

// Runs the tasks one after another and sets `cancelled` after the first,
// as a caller that goes away while a round of checks runs.
class CancelAfterFirstTask : public Executor {
 public:
  explicit CancelAfterFirstTask(std::atomic<bool>* cancelled) : cancelled_(cancelled) {}
  void RunAll(std::vector<std::function<void()>>& tasks) override {
    for (std::function<void()>& task : tasks) {
      task();
      ++tasks_run_;
      cancelled_->store(true);
    }
  }
  int tasks_run() const { return tasks_run_; }

 private:
  std::atomic<bool>* cancelled_;
  int tasks_run_ = 0;
};

// A chain of `blocks` diamonds, each a segment: the block's input feeds two
// branches (8 bytes, then 1) joined into the next block's input.
Graph ChainOfDiamonds(int blocks) {
  testing::TestGraph g;
  g.Input("x0", 4);
  for (int i = 0; i < blocks; ++i) {
    const std::string x = absl::StrCat("x", i), k = absl::StrCat("_", i);
    g.Op("a1" + k, "Op", {x}, {{"a1" + k, 8}})
        .Op("a2" + k, "Op", {"a1" + k}, {{"a2" + k, 1}})
        .Op("b1" + k, "Op", {x}, {{"b1" + k, 8}})
        .Op("b2" + k, "Op", {"b1" + k}, {{"b2" + k, 1}})
        .Op("j" + k, "Op", {"a2" + k, "b2" + k}, {{absl::StrCat("x", i + 1), 4}});
  }
  g.Output(absl::StrCat("x", blocks));
  return g.Build();
}

// A round of thousands of small checks stops when the caller goes away (or
// the time is up) instead of running them all: one check runs, every
// segment keeps at least its start order, and the bound stays honest.
TEST(BudgetSearchTest, ARoundOfManySegmentsStopsWhenCancelled) {
  constexpr int kBlocks = 2000;
  Graph g = ChainOfDiamonds(kBlocks);
  BufferModel buffers(g, {});
  // Each block both branches' first ops first: 4 + 8 + 8 = 20 bytes, where
  // running one branch through first needs 13.
  std::vector<OpId> start;
  for (int i = 0; i < kBlocks; ++i) {
    for (int k : {0, 2, 1, 3, 4}) start.push_back(static_cast<OpId>(5 * i + k));
  }
  ASSERT_TRUE(IsTopologicalOrder(g, start));
  ASSERT_EQ(PeakOf(buffers, start), 20);
  std::atomic<bool> cancelled{false};
  CancelAfterFirstTask executor(&cancelled);
  SearchOptions options;
  options.cancelled = &cancelled;
  const MinimizeResult result = MinimizePeak(buffers, start, /*lower_bound=*/0, options, 0, &executor);
  EXPECT_EQ(result.stats.checks, 1);
  EXPECT_GE(executor.tasks_run(), kBlocks);  // the round had a check for every segment
  ASSERT_TRUE(IsTopologicalOrder(g, result.order));
  EXPECT_EQ(result.peak_bytes, PeakOf(buffers, result.order));
  EXPECT_EQ(result.peak_bytes, 20);  // only the first segment was searched
  EXPECT_FALSE(result.optimal);
  EXPECT_LE(result.lower_bound_bytes, 13);

  // Uncancelled, every segment gets its 13 and the proof.
  const MinimizeResult full = MinimizePeak(buffers, start, /*lower_bound=*/0, SearchOptions());
  EXPECT_EQ(full.peak_bytes, 13);
  EXPECT_TRUE(full.optimal);
}

}  // namespace
}  // namespace serenity
