#include "core/schedule/window_search.h"

#include <algorithm>
#include <atomic>
#include <random>
#include <string>

#include "absl/container/flat_hash_set.h"
#include "core/memory/simulator.h"
#include "core/schedule/baselines.h"
#include "core/util/memory_account.h"
#include "gtest/gtest.h"
#include "tests/testing/orders.h"
#include "tests/testing/plan_verifier.h"
#include "tests/testing/test_graph.h"

namespace serenity {
namespace {

using Clock = std::chrono::steady_clock;

// The memory model of a trial: every switch varied, Concats in place only
// where the graph has Concats.
MemoryModel ModelOf(int trial, bool concats) {
  return MemoryModel{trial % 2 == 1, trial % 3 == 2, trial % 4 >= 2, concats && trial % 5 < 3};
}

int64_t Peak(const Graph& g, const MemoryModel& model, const std::vector<OpId>& order) {
  return testing::NaivePeak(g, order, model.alias_views, model.count_weights, model.in_place, model.concat_in_place);
}

// A trial's graph: a random DAG of `ops` ops, with Concats in every third
// trial and an unused graph input in every seventh, and its memory model.
struct TrialGraph {
  Graph graph;
  MemoryModel model;
};
TrialGraph RandomTrialGraph(int trial, int ops, std::mt19937& rng) {
  const bool concats = trial % 3 == 0;
  GraphSpec spec = testing::RandomDag(ops, rng, concats);
  if (trial % 7 == 0) testing::AddUnusedInput(&spec, "unused", 1 + trial % 50);
  return TrialGraph{*Graph::Build(spec), ModelOf(trial, concats)};
}

// The least peak over every order of the graph, by enumeration.
int64_t BruteForceOptimum(const TrialGraph& t) {
  int64_t optimum = INT64_MAX;
  testing::ForEachTopologicalOrder(
      t.graph, [&](const std::vector<OpId>& order) { optimum = std::min(optimum, Peak(t.graph, t.model, order)); });
  return optimum;
}

// The largest step of `order`'s positions [begin, end).
int64_t PartPeak(const BufferModel& buffers, const std::vector<OpId>& order, size_t begin, size_t end) {
  MemoryTracker tracker(buffers);
  int64_t peak = 0;
  for (size_t i = 0; i < end; ++i) {
    const int64_t step = tracker.Run(order[i]);
    if (i >= begin) peak = std::max(peak, step);
  }
  return peak;
}

// An order split in three: ops already run, the part the windows reorder,
// and ops that run after it (whose readers keep buffers live through it).
struct Split {
  std::vector<OpId> done, part, after;
  std::vector<OpId> Whole() const {
    std::vector<OpId> whole = done;
    whole.insert(whole.end(), part.begin(), part.end());
    whole.insert(whole.end(), after.begin(), after.end());
    return whole;
  }
};
Split SplitOrder(const std::vector<OpId>& order, size_t before, size_t after) {
  after = std::min(after, order.size() - std::min(before, order.size()));
  before = std::min(before, order.size() - after);
  Split split;
  split.done.assign(order.begin(), order.begin() + static_cast<long>(before));
  split.part.assign(order.begin() + static_cast<long>(before), order.end() - static_cast<long>(after));
  split.after.assign(order.end() - static_cast<long>(after), order.end());
  return split;
}

// One window over the whole part, with states enough, is an exact search:
// the peak it leaves over the part is the least over every order of the
// whole graph with the same ops before and after it (by enumeration, peaks
// by the independent simulator), whatever the memory model.
TEST(WindowSearchTest, OneWindowOverTheWholePartIsOptimal) {
  std::mt19937 rng(77);
  WindowSearchOptions options;
  options.window_ops = 64;
  options.states_per_check = 1'000'000;
  for (int trial = 0; trial < 1500; ++trial) {
    const TrialGraph t = RandomTrialGraph(trial, 1 + trial % 9, rng);
    const Graph& g = t.graph;
    const MemoryModel& model = t.model;
    const BufferModel buffers(g, model);
    Split split = SplitOrder(testing::RandomTopologicalOrder(g, rng), trial % 2, trial % 3);
    const size_t begin = split.done.size(), end = begin + split.part.size();
    int64_t optimum = INT64_MAX;
    testing::ForEachTopologicalOrder(g, [&](const std::vector<OpId>& order) {
      if (std::equal(split.done.begin(), split.done.end(), order.begin()) &&
          std::equal(split.after.begin(), split.after.end(), order.begin() + static_cast<long>(end))) {
        optimum = std::min(optimum, PartPeak(buffers, order, begin, end));
      }
    });
    const int64_t before = PartPeak(buffers, split.Whole(), begin, end);
    const int64_t whole_before = Peak(g, model, split.Whole());
    SearchStats stats;
    const bool lowered = LowerPeakByWindows(buffers, split.done, &split.part, 0, SearchOptions(),
                                            Clock::time_point::max(), options, &stats);
    const std::vector<OpId> whole = split.Whole();
    ASSERT_TRUE(IsTopologicalOrder(g, whole)) << "trial " << trial;
    ASSERT_EQ(PartPeak(buffers, whole, begin, end), optimum) << "trial " << trial << " from " << before;
    ASSERT_EQ(lowered, optimum < before) << "trial " << trial;
    ASSERT_LE(Peak(g, model, whole), whole_before) << "trial " << trial;
  }
}

// Windows shorter than the part, with ops before and after it: the order
// stays a valid order of the same ops, the peak never rises, and `true`
// means it fell.
TEST(WindowSearchTest, ShortWindowsNeverRaiseThePeak) {
  std::mt19937 rng(78);
  WindowSearchOptions options;
  options.window_ops = 3;
  options.max_window_ops = 6;
  int lowered_count = 0;
  for (int trial = 0; trial < 600; ++trial) {
    const bool concats = trial % 3 == 0;
    const Graph g = *Graph::Build(testing::RandomDag(12 + trial % 20, rng, concats));
    const MemoryModel model = ModelOf(trial, concats);
    const BufferModel buffers(g, model);
    Split split = SplitOrder(testing::RandomTopologicalOrder(g, rng), trial % 4, (trial / 4) % 5);
    const size_t begin = split.done.size(), end = begin + split.part.size();
    const int64_t before = PartPeak(buffers, split.Whole(), begin, end);
    const int64_t whole_before = Peak(g, model, split.Whole());
    SearchStats stats;
    const bool lowered = LowerPeakByWindows(buffers, split.done, &split.part, 0, SearchOptions(),
                                            Clock::time_point::max(), options, &stats);
    const std::vector<OpId> whole = split.Whole();
    ASSERT_TRUE(IsTopologicalOrder(g, whole)) << "trial " << trial;
    const int64_t after = PartPeak(buffers, whole, begin, end);
    ASSERT_LE(after, before) << "trial " << trial;
    ASSERT_EQ(lowered, after < before) << "trial " << trial;
    ASSERT_LE(Peak(g, model, whole), whole_before) << "trial " << trial;
    lowered_count += lowered;
  }
  EXPECT_GT(lowered_count, 100);
}

// On a layered DAG of 2,000 ops (one segment, too long for one exact
// check), windows lower the peak of Kahn's order.
TEST(WindowSearchTest, LowersTheOrderOfALongLayeredDag) {
  const Graph g = *Graph::Build(testing::LayeredDag(2000, 8));
  const BufferModel buffers(g, MemoryModel());
  std::vector<OpId> order = KahnOrder(g);
  const int64_t before = PeakOf(buffers, order);
  SearchStats stats;
  ASSERT_TRUE(LowerPeakByWindows(buffers, {}, &order, 0, SearchOptions(), Clock::time_point::max(),
                                 WindowSearchOptions(), &stats));
  ASSERT_TRUE(IsTopologicalOrder(g, order));
  const int64_t after = testing::NaivePeak(g, order, false, false, false);
  EXPECT_LT(after, before);
  EXPECT_GE(after, LowerBoundBytes(buffers));
  EXPECT_GT(stats.checks, 0);
}

// The least peak of `window` (a part of `order`'s ops, a convex set) counted
// alone, by enumeration, computed from the buffers' definitions: at the step
// of x, the resident bytes, x's workspace and outputs, every buffer made in
// the window before x and read by a window op at or after x (or a graph
// output), and every buffer made outside the window whose readers in the
// window run both at or before x and at or after x; less x's in-place saving
// when x is the last window reader of one of its in-place inputs.
int64_t BruteForceAlone(const BufferModel& buffers, const std::vector<OpId>& window) {
  const Graph& g = buffers.graph();
  absl::flat_hash_set<OpId> in_window(window.begin(), window.end());
  int64_t best = INT64_MAX;
  std::vector<OpId> order = window;
  std::sort(order.begin(), order.end());
  do {
    std::vector<int> at(g.num_ops(), -1);
    for (size_t i = 0; i < order.size(); ++i) at[order[i]] = static_cast<int>(i);
    bool valid = true;
    for (OpId u : order) {
      for (OpId p : g.op(u).predecessors) valid = valid && (!in_window.contains(p) || at[p] < at[u]);
    }
    if (!valid) continue;
    int64_t peak = 0;
    for (size_t i = 0; i < order.size(); ++i) {
      const OpId x = order[i];
      int64_t step = buffers.resident_bytes() + g.op(x).workspace_bytes;
      for (size_t b = 0; b < buffers.buffers().size(); ++b) {
        const ActivationBuffer& buffer = buffers.buffers()[b];
        int first = INT32_MAX, last = -1;
        for (OpId user : buffer.users) {
          if (at[user] >= 0) {
            first = std::min(first, at[user]);
            last = std::max(last, at[user]);
          }
        }
        const bool made_here = buffer.producer != kNoOp && at[buffer.producer] >= 0;
        const int from = made_here ? at[buffer.producer] : first;
        const int to = buffer.live_to_end ? INT32_MAX : std::max(last, made_here ? at[buffer.producer] : -1);
        if (from <= static_cast<int>(i) && static_cast<int>(i) <= to) step += buffer.bytes;
      }
      for (BufferId b : buffers.in_place_inputs(x)) {
        int last = -1;
        for (OpId user : buffers.buffers()[b].users) last = std::max(last, at[user]);
        if (last == static_cast<int>(i)) {
          step -= buffers.in_place_bytes(x);
          break;
        }
      }
      peak = std::max(peak, step);
    }
    best = std::min(best, peak);
  } while (std::next_permutation(order.begin(), order.end()));
  return best;
}

// A window counted alone: with one window over the whole part and states
// enough, the bound is exactly the brute-force least peak of the part
// counted alone, and never above the whole graph's least peak.
TEST(WindowSearchTest, BoundOfOneWindowIsTheLeastPeakCountedAlone) {
  std::mt19937 rng(79);
  WindowSearchOptions options;
  options.bound_window_ops = 64;
  options.bound_states_per_check = 1'000'000;
  int above_cone = 0;
  for (int trial = 0; trial < 1200; ++trial) {
    const TrialGraph t = RandomTrialGraph(trial, 2 + trial % 8, rng);
    const Graph& g = t.graph;
    const BufferModel buffers(g, t.model);
    const int64_t optimum = BruteForceOptimum(t);
    const std::vector<OpId> start = testing::RandomTopologicalOrder(g, rng);
    const size_t split = trial % 3;
    const std::vector<OpId> done(start.begin(), start.begin() + static_cast<long>(split));
    const std::vector<OpId> part(start.begin() + static_cast<long>(split), start.end());
    SearchStats stats;
    const int64_t bound =
        LowerBoundByWindows(buffers, done, part, 0, SearchOptions(), Clock::time_point::max(), options, &stats);
    ASSERT_LE(bound, optimum) << "trial " << trial;
    ASSERT_EQ(bound, BruteForceAlone(buffers, part)) << "trial " << trial;
    above_cone += bound > LowerBoundBytes(buffers);
  }
  EXPECT_GT(above_cone, 0);
}

// Windows shorter than the part, counted alone, never bound above the whole
// graph's least peak, whatever the memory model (buffers read only after a
// window, or made before it and read after it, must not count in it).
TEST(WindowSearchTest, ShortWindowsBoundNoHigherThanTheOptimum) {
  std::mt19937 rng(80);
  int above_cone = 0;
  for (int trial = 0; trial < 1500; ++trial) {
    const TrialGraph t = RandomTrialGraph(trial, 5 + trial % 6, rng);
    const Graph& g = t.graph;
    const BufferModel buffers(g, t.model);
    const int64_t optimum = BruteForceOptimum(t);
    WindowSearchOptions options;
    options.bound_window_ops = 1 + trial % 3;
    options.bound_max_window_ops = options.bound_window_ops * (1 + trial % 2);
    options.bound_windows = 100;
    options.bound_states_per_check = 1'000'000;
    const Split split = SplitOrder(testing::RandomTopologicalOrder(g, rng), trial % 2, (trial / 2) % 3);
    SearchStats stats;
    const int64_t bound = LowerBoundByWindows(buffers, split.done, split.part, 0, SearchOptions(),
                                              Clock::time_point::max(), options, &stats);
    ASSERT_LE(bound, optimum) << "trial " << trial;
    above_cone += bound > LowerBoundBytes(buffers);
  }
  EXPECT_GT(above_cone, 0);
}

// Windows of a few dozen ops counted alone prove more than the cone bounds
// on a layered DAG of 2,000 ops, and never more than the peak of an order.
TEST(WindowSearchTest, BoundsALongLayeredDagAboveItsConeBound) {
  const Graph g = *Graph::Build(testing::LayeredDag(2000, 8));
  const BufferModel buffers(g, MemoryModel());
  std::vector<OpId> order = KahnOrder(g);
  SearchStats stats;
  LowerPeakByWindows(buffers, {}, &order, 0, SearchOptions(), Clock::time_point::max(), WindowSearchOptions(), &stats);
  const int64_t cone = LowerBoundBytes(buffers);
  const int64_t bound = LowerBoundByWindows(buffers, {}, order, cone, SearchOptions(), Clock::time_point::max(),
                                            WindowSearchOptions(), &stats);
  EXPECT_GT(bound, cone);
  EXPECT_LE(bound, PeakOf(buffers, order));
}

// A job whose memory account refuses the windows' memos, or whose call was
// cancelled, gets its order and bound back unchanged, at once.
TEST(WindowSearchTest, RefusedMemoryOrCancellationLeavesTheOrderAndBound) {
  const Graph g = *Graph::Build(testing::LayeredDag(2000, 8));
  const BufferModel buffers(g, MemoryModel());
  const std::vector<OpId> start = KahnOrder(g);
  const int64_t cone = LowerBoundBytes(buffers);
  MemoryAccount tiny(1024);
  std::atomic<bool> cancelled{true};
  for (const bool by_memory : {true, false}) {
    SearchOptions search;
    if (by_memory) {
      search.memory = &tiny;
    } else {
      search.cancelled = &cancelled;
    }
    std::vector<OpId> order = start;
    SearchStats stats;
    EXPECT_FALSE(
        LowerPeakByWindows(buffers, {}, &order, 0, search, Clock::time_point::max(), WindowSearchOptions(), &stats));
    EXPECT_EQ(order, start);
    EXPECT_EQ(
        LowerBoundByWindows(buffers, {}, start, cone, search, Clock::time_point::max(), WindowSearchOptions(), &stats),
        cone);
    EXPECT_EQ(stats.states, 0);
  }
  EXPECT_EQ(tiny.used(), 0);
}

}  // namespace
}  // namespace serenity
