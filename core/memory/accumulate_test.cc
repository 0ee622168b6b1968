// The accumulation alias of serenity::ConvAccumulate in the memory model:
// BufferModel, the simulator, the tracker and the lower bounds, against the
// verifier's independent re-simulation.
#include <algorithm>
#include <random>

#include "core/graph/reachability.h"
#include "core/memory/buffer_model.h"
#include "core/memory/closure_bound.h"
#include "core/memory/simulator.h"
#include "gtest/gtest.h"
#include "tests/testing/accumulate_graph.h"
#include "tests/testing/orders.h"
#include "tests/testing/plan_verifier.h"
#include "tests/testing/test_graph.h"

namespace serenity {
namespace {

using testing::TestGraph;

constexpr int64_t kX0 = 300, kX1 = 200, kX2 = 100, kY = 50;

// The paper's Figure 9, concat + conv after the channel-wise partition. Each
// x_i is made from a 0-byte input just before its partial step, so a step
// holds exactly what the figure counts. Accumulate form: part0 = Conv(x0),
// acc1 = ConvAccumulate(x1, W1, part0), y = ConvAccumulate(x2, W2, acc1).
Graph AccumulateChain() {
  return TestGraph()
      .Input("in", 0)
      .Weight("w0", 8)
      .Weight("w1", 8)
      .Weight("w2", 8)
      .Op("a0", "Op", {"in"}, {{"x0", kX0}})
      .Op("c0", "Conv", {"x0", "w0"}, {{"part0", kY}})
      .Op("a1", "Op", {"in"}, {{"x1", kX1}})
      .Op("c1", std::string(kConvAccumulateType), {"x1", "w1", "part0"}, {{"acc1", kY}})
      .Op("a2", "Op", {"in"}, {{"x2", kX2}})
      .Op("c2", std::string(kConvAccumulateType), {"x2", "w2", "acc1"}, {{"y", kY}})
      .Output("y")
      .Build();
}

// The standard form of the same: partial Convs and Adds.
Graph StandardChain() {
  return TestGraph()
      .Input("in", 0)
      .Weight("w0", 8)
      .Weight("w1", 8)
      .Weight("w2", 8)
      .Op("a0", "Op", {"in"}, {{"x0", kX0}})
      .Op("c0", "Conv", {"x0", "w0"}, {{"part0", kY}})
      .Op("a1", "Op", {"in"}, {{"x1", kX1}})
      .Op("c1", "Conv", {"x1", "w1"}, {{"part1", kY}})
      .Op("s1", "Add", {"part0", "part1"}, {{"sum1", kY}})
      .Op("a2", "Op", {"in"}, {{"x2", kX2}})
      .Op("c2", "Conv", {"x2", "w2"}, {{"part2", kY}})
      .Op("s2", "Add", {"sum1", "part2"}, {{"y", kY}})
      .Output("y")
      .Build();
}

std::vector<OpId> FileOrderOf(const Graph& g) {
  std::vector<OpId> order(g.num_ops());
  for (OpId u = 0; u < g.num_ops(); ++u) order[u] = u;
  return order;
}

TEST(AccumulateTest, Figure9PartialStepsHoldTheirInputAndTheOutputOnly) {
  const Graph g = AccumulateChain();
  for (bool in_place : {false, true}) {
    for (bool alias_views : {false, true}) {
      BufferModel buffers(g, MemoryModel{alias_views, false, in_place});
      absl::StatusOr<MemoryProfile> profile = Simulate(buffers, FileOrderOf(g));
      ASSERT_TRUE(profile.ok()) << profile.status();
      // a0, c0, a1, c1, a2, c2: each partial step size(x_i) + size(y).
      EXPECT_EQ(profile->step_bytes, (std::vector<int64_t>{kX0, kX0 + kY, kX1 + kY, kX1 + kY, kX2 + kY, kX2 + kY}));
      EXPECT_EQ(profile->peak_bytes, kX0 + kY);
      EXPECT_EQ(PeakOf(buffers, FileOrderOf(g)), kX0 + kY);
      EXPECT_EQ(testing::NaivePeak(g, FileOrderOf(g), alias_views, false, in_place), kX0 + kY);
    }
  }
  // The standard form holds size(x_i) + 2 size(y) at each partial Conv
  // (the running sum and the new partial), without in-place Adds.
  const Graph s = StandardChain();
  BufferModel standard(s, MemoryModel{});
  absl::StatusOr<MemoryProfile> profile = Simulate(standard, FileOrderOf(s));
  ASSERT_TRUE(profile.ok());
  EXPECT_EQ(profile->step_bytes[3], kX1 + 2 * kY);  // c1
  EXPECT_EQ(profile->step_bytes[6], kX2 + 2 * kY);  // c2
}

TEST(AccumulateTest, TheOutputJoinsTheAccumulatorsBuffer) {
  const Graph g = AccumulateChain();
  BufferModel buffers(g, MemoryModel{});
  const TensorId part0 = *g.FindTensor("part0"), acc1 = *g.FindTensor("acc1"), y = *g.FindTensor("y");
  const OpId c0 = 1, c1 = 3, c2 = 5;
  const BufferId b = buffers.buffer_of(part0);
  EXPECT_EQ(buffers.buffer_of(acc1), b);
  EXPECT_EQ(buffers.buffer_of(y), b);
  EXPECT_EQ(buffers.buffers()[b].aliases, (std::vector<TensorId>{acc1, y}));
  EXPECT_EQ(buffers.buffers()[b].producer, c0);
  EXPECT_EQ(buffers.buffers()[b].users, (std::vector<OpId>{c1, c2}));
  EXPECT_TRUE(buffers.buffers()[b].live_to_end);  // y is a graph output
  EXPECT_EQ(buffers.allocates(c0), std::vector<BufferId>{b});
  EXPECT_TRUE(buffers.allocates(c1).empty());
  EXPECT_TRUE(buffers.allocates(c2).empty());
  EXPECT_EQ(buffers.accumulates_into(c1), std::vector<BufferId>{b});
  EXPECT_EQ(buffers.accumulates_into(c2), std::vector<BufferId>{b});
  EXPECT_TRUE(buffers.accumulates_into(c0).empty());
  EXPECT_TRUE(std::find(buffers.reads(c1).begin(), buffers.reads(c1).end(), b) != buffers.reads(c1).end());

  absl::StatusOr<MemoryProfile> profile = Simulate(buffers, FileOrderOf(g));
  ASSERT_TRUE(profile.ok());
  int holding = 0;
  for (const BufferLifetimeInfo& info : profile->buffers) {
    if (info.tensor != part0) continue;
    ++holding;
    EXPECT_EQ(info.aliases, (std::vector<TensorId>{acc1, y}));
    EXPECT_EQ(info.first_step, 1);
    EXPECT_EQ(info.last_step, 5);
  }
  EXPECT_EQ(holding, 1);
}

TEST(AccumulateTest, AliasNeedsAnActivationOfTheOutputsSize) {
  // A weight accumulator, or one of another size, is no alias: the op then
  // allocates its output as any op does.
  const Graph g = TestGraph()
                      .Input("x", 10)
                      .Weight("w", 4)
                      .Op("a", "Op", {"x"}, {{"p", 20}})
                      .Op("b", std::string(kConvAccumulateType), {"x", "w", "w"}, {{"q", 4}})
                      .Op("c", std::string(kConvAccumulateType), {"x", "w", "p"}, {{"r", 30}})
                      .Op("d", std::string(kConvAccumulateType), {"x", "w"}, {{"s", 30}})
                      .Output("q")
                      .Output("r")
                      .Output("s")
                      .Build();
  BufferModel buffers(g, MemoryModel{});
  EXPECT_EQ(AccumulatorOf(g, 1), -1);
  EXPECT_EQ(AccumulatorOf(g, 2), -1);
  EXPECT_EQ(AccumulatorOf(g, 3), -1);
  for (OpId u : {1, 2, 3}) {
    EXPECT_EQ(buffers.allocates(u).size(), 1u) << u;
    EXPECT_TRUE(buffers.accumulates_into(u).empty()) << u;
  }
  // A graph input of the output's size is an accumulator.
  const Graph h = TestGraph()
                      .Input("acc", 10)
                      .Input("x", 5)
                      .Weight("w", 4)
                      .Op("a", std::string(kConvAccumulateType), {"x", "w", "acc"}, {{"y", 10}})
                      .Output("y")
                      .Build();
  BufferModel input_acc(h, MemoryModel{});
  EXPECT_EQ(AccumulatorOf(h, 0), *h.FindTensor("acc"));
  EXPECT_TRUE(input_acc.allocates(0).empty());
  EXPECT_EQ(PeakOf(input_acc, {0}), 15);
  EXPECT_EQ(testing::NaivePeak(h, {0}, false, false), 15);
}

// The simulator, the tracker and the verifier's independent re-simulation
// agree on random graphs with accumulations, under every switch.
TEST(AccumulateTest, AgreesWithNaiveResimulationOnRandomGraphs) {
  std::mt19937 rng(1717);
  int aliased = 0;
  for (int trial = 0; trial < 400; ++trial) {
    Graph g = *Graph::Build(testing::RandomAccumulateDag(1 + trial % 16, rng));
    for (int switches = 0; switches < 16; ++switches) {
      const MemoryModel model{(switches & 1) != 0, (switches & 2) != 0, (switches & 4) != 0, (switches & 8) != 0};
      BufferModel buffers(g, model);
      for (OpId u = 0; u < g.num_ops(); ++u) aliased += buffers.accumulates_into(u).empty() ? 0 : 1;
      const std::vector<OpId> order = testing::RandomTopologicalOrder(g, rng);
      absl::StatusOr<MemoryProfile> p = Simulate(buffers, order);
      ASSERT_TRUE(p.ok());
      ASSERT_EQ(p->peak_bytes, testing::NaivePeak(g, order, model.alias_views, model.count_weights, model.in_place,
                                                  model.concat_in_place))
          << "trial " << trial << " switches " << switches;
      ASSERT_EQ(PeakOf(buffers, order), p->peak_bytes);
    }
  }
  EXPECT_GT(aliased, 1000);  // the generator does make accumulations
}

// Every lower bound stays at or below the best order's peak as the verifier
// re-simulates it (not through BufferModel), with accumulations.
TEST(AccumulateTest, LowerBoundsNeverExceedTheOptimum) {
  std::mt19937 rng(1718);
  int tight = 0;
  for (int trial = 0; trial < 250; ++trial) {
    Graph g = *Graph::Build(testing::RandomAccumulateDag(1 + trial % 8, rng));
    const Reachability reach(g);
    for (int switches = 0; switches < 16; ++switches) {
      const MemoryModel model{(switches & 1) != 0, (switches & 2) != 0, (switches & 4) != 0, (switches & 8) != 0};
      BufferModel buffers(g, model);
      int64_t best = INT64_MAX;
      std::vector<int64_t> best_at(g.num_ops(), INT64_MAX);  // per op, its step's bytes in the best order for it
      testing::ForEachTopologicalOrder(g, [&](const std::vector<OpId>& order) {
        best = std::min(best, testing::NaivePeak(g, order, model.alias_views, model.count_weights, model.in_place,
                                                 model.concat_in_place));
        absl::StatusOr<MemoryProfile> p = Simulate(buffers, order);
        for (size_t t = 0; t < order.size(); ++t) best_at[order[t]] = std::min(best_at[order[t]], p->step_bytes[t]);
      });
      const int64_t bound = LowerBoundBytes(buffers);
      ASSERT_LE(bound, best) << "trial " << trial << " switches " << switches;
      if (bound == best) ++tight;
      const std::vector<int64_t> steps = StepLowerBounds(buffers, reach);
      const std::vector<int64_t> closure = ClosureStepLowerBounds(buffers, reach);
      for (OpId u = 0; u < g.num_ops(); ++u) {
        ASSERT_LE(steps[u], best_at[u]) << "trial " << trial << " switches " << switches << " op " << u;
        ASSERT_LE(closure[u], best_at[u]) << "trial " << trial << " switches " << switches << " op " << u;
      }
    }
  }
  EXPECT_GT(tight, 0);
}

}  // namespace
}  // namespace serenity
