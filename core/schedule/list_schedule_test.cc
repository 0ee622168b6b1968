#include "core/schedule/list_schedule.h"

#include <algorithm>
#include <chrono>
#include <random>
#include <tuple>

#include "core/memory/simulator.h"
#include "gtest/gtest.h"
#include "tests/testing/test_graph.h"

namespace serenity {
namespace {

using testing::TestGraph;

// The list schedule as it was first written: every step evaluates
// `key(tracker, op)` of every ready op (kept in the order they became
// ready) and runs the least; past `limits.deadline` it runs the last ready.
template <typename Key>
std::vector<OpId> ScanListSchedule(const BufferModel& buffers, Key key, const ListScheduleLimits& limits = {}) {
  const Graph& graph = buffers.graph();
  std::vector<int> indegree(graph.num_ops());
  std::vector<OpId> ready, order;
  for (OpId u = 0; u < graph.num_ops(); ++u) {
    indegree[u] = static_cast<int>(graph.op(u).predecessors.size());
    if (indegree[u] == 0) ready.push_back(u);
  }
  MemoryTracker tracker(buffers);
  bool choosing = true;
  while (!ready.empty()) {
    if (choosing && order.size() % 64 == 0 && std::chrono::steady_clock::now() >= limits.deadline) {
      choosing = false;
      if (limits.cut != nullptr) *limits.cut = true;
    }
    auto best = choosing ? ready.begin() : ready.end() - 1;
    if (choosing) {
      for (auto it = ready.begin() + 1; it < ready.end(); ++it) {
        if (key(tracker, *it) < key(tracker, *best)) best = it;
      }
    }
    const OpId u = *best;
    ready.erase(best);
    tracker.Run(u);
    order.push_back(u);
    for (OpId v : graph.op(u).successors) {
      if (--indegree[v] == 0) ready.push_back(v);
    }
  }
  return order;
}

// The keys of the three rules, as list_schedule.h states them.
std::vector<OpId> ScanOrder(const BufferModel& buffers, ListRule rule, const ListScheduleLimits& limits = {}) {
  switch (rule) {
    case ListRule::kLeastStepBytes:
      return ScanListSchedule(
          buffers, [](const MemoryTracker& t, OpId u) { return std::make_tuple(t.StepBytes(u), t.BytesAfter(u), u); },
          limits);
    case ListRule::kLeastPeakFirst:
      return ScanListSchedule(
          buffers,
          [](const MemoryTracker& t, OpId u) {
            return std::make_tuple(std::max(t.peak_bytes(), t.StepBytes(u)), t.BytesAfter(u) - t.live_bytes(), u);
          },
          limits);
    case ListRule::kLeastNetAllocation:
      return ScanListSchedule(
          buffers, [](const MemoryTracker& t, OpId u) { return std::make_tuple(t.BytesAfter(u) - t.live_bytes(), u); },
          limits);
  }
  return {};
}

constexpr ListRule kRules[] = {ListRule::kLeastStepBytes, ListRule::kLeastPeakFirst, ListRule::kLeastNetAllocation};

// Every memory model switch, one combination per bit of `bits`.
MemoryModel ModelOf(int bits) {
  MemoryModel model;
  model.alias_views = (bits & 1) != 0;
  model.count_weights = (bits & 2) != 0;
  model.in_place = (bits & 4) != 0;
  model.concat_in_place = (bits & 8) != 0;
  return model;
}

// The same orders as the scan over every ready op, and their peaks, on
// random DAGs (with and without Concats, weights and an unread input) under
// every memory model: their tensors of 1-100 bytes, views and in-place ops
// tie often, so a wrong tie-break or a stale figure shows.
TEST(ListScheduleTest, SameOrdersAsScanningEveryReadyOp) {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 800; ++trial) {
    GraphSpec spec = testing::RandomDag(1 + trial % 60, rng, /*concats=*/trial % 3 == 0);
    if (trial % 4 == 1) testing::AddRandomWeights(&spec, rng);
    if (trial % 5 == 2) testing::AddUnusedInput(&spec, "unread", 1 + trial % 50);
    const Graph g = *Graph::Build(spec);
    const BufferModel buffers(g, ModelOf(trial % 16));
    for (ListRule rule : kRules) {
      int64_t peak = -1;
      const std::vector<OpId> order = ListSchedule(buffers, rule, {}, &peak);
      ASSERT_TRUE(IsTopologicalOrder(g, order));
      ASSERT_EQ(order, ScanOrder(buffers, rule)) << "trial " << trial << " rule " << static_cast<int>(rule);
      ASSERT_EQ(peak, PeakOf(buffers, order));
    }
  }
}

// A fan-out of equal branches ties on every figure: ops run by file position.
TEST(ListScheduleTest, TiesGoToTheSmallestOpId) {
  TestGraph g;
  g.Input("x", 10);
  for (int i = 0; i < 6; ++i) g.Op("r" + std::to_string(i), "Conv", {"x"}, {{"y" + std::to_string(i), 5}});
  g.Op("join", "Concat", {"y0", "y1", "y2", "y3", "y4", "y5"}, {{"out", 30}}).Output("out");
  const Graph graph = g.Build();
  const BufferModel buffers(graph, {});
  for (ListRule rule : kRules) {
    EXPECT_EQ(ListSchedule(buffers, rule), (std::vector<OpId>{0, 1, 2, 3, 4, 5, 6}));
  }
}

// After c (C, 20 bytes) and a (A, 100 bytes; the peak 130 with the input),
// p (reads A, +1 byte) needs the smaller step and q (reads A and C, +2
// bytes, frees C) the smaller net allocation: greedy runs p first, LPMF
// (both stay under the peak) and XLA's rule q first.
TEST(ListScheduleTest, RulesPickByTheirKeys) {
  const Graph g = TestGraph()
                      .Input("in", 10)
                      .Op("c", "Conv", {"in"}, {{"C", 20}})
                      .Op("a", "Conv", {"in"}, {{"A", 100}})
                      .Op("p", "Conv", {"A"}, {{"P", 1}})
                      .Op("q", "Conv", {"A", "C"}, {{"Q", 2}})
                      .Op("d", "Add", {"A", "P", "Q"}, {{"out", 1}})
                      .Output("out")
                      .Build();
  const BufferModel buffers(g, {});
  EXPECT_EQ(ListSchedule(buffers, ListRule::kLeastStepBytes), (std::vector<OpId>{0, 1, 2, 3, 4}));
  EXPECT_EQ(ListSchedule(buffers, ListRule::kLeastPeakFirst), (std::vector<OpId>{0, 1, 3, 2, 4}));
  EXPECT_EQ(ListSchedule(buffers, ListRule::kLeastNetAllocation), (std::vector<OpId>{0, 1, 3, 2, 4}));
}

// Above the running peak LPMF runs the least step: after b (peak 60) a
// would step to 160 and b2 to 61 (freeing B), so b2 runs before a.
TEST(ListScheduleTest, LeastPeakFirstAboveThePeakTakesTheLeastStep) {
  const Graph g = TestGraph()
                      .Input("in", 10)
                      .Op("a", "Conv", {"in"}, {{"A", 100}})
                      .Op("b", "Conv", {"in"}, {{"B", 50}})
                      .Op("a2", "Conv", {"A"}, {{"a2", 1}})
                      .Op("b2", "Conv", {"B"}, {{"b2", 1}})
                      .Op("join", "Add", {"a2", "b2"}, {{"out", 1}})
                      .Output("out")
                      .Build();
  const BufferModel buffers(g, {});
  EXPECT_EQ(ListSchedule(buffers, ListRule::kLeastPeakFirst), (std::vector<OpId>{1, 3, 0, 2, 4}));
}

// Past the deadline a list schedule stops choosing at once: the plain order
// runs the op that became ready last first, as the scan does.
TEST(ListScheduleTest, PastTheDeadlineRunsThePlainOrder) {
  std::mt19937 rng(3);
  for (int trial = 0; trial < 100; ++trial) {
    const Graph g = *Graph::Build(testing::RandomDag(1 + trial % 40, rng));
    const BufferModel buffers(g, {});
    for (ListRule rule : kRules) {
      bool cut = false, scan_cut = false;
      ListScheduleLimits limits;
      limits.deadline = std::chrono::steady_clock::now() - std::chrono::seconds(1);
      limits.cut = &cut;
      int64_t peak = -1;
      const std::vector<OpId> order = ListSchedule(buffers, rule, limits, &peak);
      limits.cut = &scan_cut;
      EXPECT_EQ(order, ScanOrder(buffers, rule, limits));
      EXPECT_EQ(peak, PeakOf(buffers, order));
      EXPECT_TRUE(cut);
      EXPECT_TRUE(scan_cut);
      EXPECT_TRUE(IsTopologicalOrder(g, order));
    }
  }
}

// The order after a cut: the ops ready after `prefix`, in the order they
// became ready as the scan keeps them, run latest first as a stack.
std::vector<OpId> PlainOrderAfter(const Graph& graph, const std::vector<OpId>& prefix) {
  std::vector<int> indegree(graph.num_ops());
  std::vector<OpId> ready;
  for (OpId u = 0; u < graph.num_ops(); ++u) {
    indegree[u] = static_cast<int>(graph.op(u).predecessors.size());
    if (indegree[u] == 0) ready.push_back(u);
  }
  for (OpId u : prefix) {
    ready.erase(std::find(ready.begin(), ready.end(), u));
    for (OpId v : graph.op(u).successors) {
      if (--indegree[v] == 0) ready.push_back(v);
    }
  }
  std::vector<OpId> rest;
  while (!ready.empty()) {
    const OpId u = ready.back();
    ready.pop_back();
    rest.push_back(u);
    for (OpId v : graph.op(u).successors) {
      if (--indegree[v] == 0) ready.push_back(v);
    }
  }
  return rest;
}

// A deadline that passes while choosing (wherever it falls, at a multiple
// of 64 steps): the ops chosen until then are those of the uncut schedule,
// the rest the plain order after them.
TEST(ListScheduleTest, ACutMidwayRunsTheReadyOpsLatestFirst) {
  std::mt19937 rng(17);
  const Graph g = *Graph::Build(testing::RandomDag(20000, rng));
  const BufferModel buffers(g, {});
  for (ListRule rule : kRules) {
    const std::vector<OpId> uncut = ListSchedule(buffers, rule);
    bool cut = false;
    ListScheduleLimits limits;
    limits.deadline = std::chrono::steady_clock::now() + std::chrono::microseconds(500);
    limits.cut = &cut;
    int64_t peak = -1;
    const std::vector<OpId> order = ListSchedule(buffers, rule, limits, &peak);
    ASSERT_TRUE(IsTopologicalOrder(g, order));
    EXPECT_EQ(peak, PeakOf(buffers, order));
    if (!cut) continue;  // a machine fast enough to finish in time
    bool explained = false;
    for (size_t k = 0; k < order.size() && !explained; k += 64) {
      if (!std::equal(order.begin(), order.begin() + k, uncut.begin())) break;
      const std::vector<OpId> prefix(order.begin(), order.begin() + k);
      explained = PlainOrderAfter(g, prefix) == std::vector<OpId>(order.begin() + k, order.end());
    }
    EXPECT_TRUE(explained) << "rule " << static_cast<int>(rule);
  }
}

}  // namespace
}  // namespace serenity
