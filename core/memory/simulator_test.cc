#include "core/memory/simulator.h"

#include <algorithm>
#include <functional>
#include <numeric>
#include <random>

#include "core/graph/reachability.h"
#include "gtest/gtest.h"
#include "tests/testing/orders.h"
#include "tests/testing/plan_verifier.h"
#include "tests/testing/test_graph.h"

namespace serenity {
namespace {

using testing::TestGraph;

MemoryProfile Simulated(const Graph& g, const std::vector<OpId>& order, MemoryModel model = {}) {
  BufferModel buffers(g, model);
  absl::StatusOr<MemoryProfile> profile = Simulate(buffers, order);
  EXPECT_TRUE(profile.ok()) << profile.status();
  EXPECT_EQ(PeakOf(buffers, order), profile->peak_bytes);
  return *profile;
}

TEST(SimulatorTest, Chain) {
  Graph g = TestGraph()
                .Input("in", 10)
                .Op("a", "Conv", {"in"}, {{"x", 20}})
                .Op("b", "Conv", {"x"}, {{"y", 30}})
                .Output("y")
                .Build();
  MemoryProfile p = Simulated(g, {0, 1});
  EXPECT_EQ(p.step_bytes, (std::vector<int64_t>{30, 50}));
  EXPECT_EQ(p.peak_bytes, 50);
}

TEST(SimulatorTest, Diamond) {
  Graph g = TestGraph()
                .Input("in", 10)
                .Op("a", "Conv", {"in"}, {{"x", 20}})
                .Op("b", "Conv", {"x"}, {{"y", 5}})
                .Op("c", "Conv", {"x"}, {{"z", 7}})
                .Op("d", "Add", {"y", "z"}, {{"out", 1}})
                .Output("out")
                .Build();
  MemoryProfile p = Simulated(g, {0, 1, 2, 3});
  EXPECT_EQ(p.step_bytes, (std::vector<int64_t>{30, 25, 32, 13}));
  // The other order: c first.
  EXPECT_EQ(Simulated(g, {0, 2, 1, 3}).step_bytes, (std::vector<int64_t>{30, 27, 32, 13}));
}

TEST(SimulatorTest, FanOutIntoConcat) {
  Graph g = TestGraph()
                .Input("in", 8)
                .Op("a", "Conv", {"in"}, {{"x", 8}})
                .Op("b", "Conv", {"in"}, {{"y", 8}})
                .Op("c", "Conv", {"in"}, {{"z", 8}})
                .Op("cat", "Concat", {"x", "y", "z"}, {{"out", 24}})
                .Output("out")
                .Build();
  MemoryProfile p = Simulated(g, {0, 1, 2, 3});
  EXPECT_EQ(p.step_bytes, (std::vector<int64_t>{16, 24, 32, 48}));
}

TEST(SimulatorTest, DeadOutputLivesOnlyAtItsStep) {
  Graph g = TestGraph()
                .Input("in", 10)
                .Op("a", "Split", {"in"}, {{"y", 20}, {"dead", 100}})
                .Op("b", "Conv", {"y"}, {{"z", 5}})
                .Output("z")
                .Build();
  MemoryProfile p = Simulated(g, {0, 1});
  EXPECT_EQ(p.step_bytes, (std::vector<int64_t>{130, 25}));
  for (const BufferLifetimeInfo& b : p.buffers) {
    if (g.tensor(b.tensor).name == "dead") {
      EXPECT_EQ(b.first_step, 0);
      EXPECT_EQ(b.last_step, 0);
    }
  }
}

TEST(SimulatorTest, InputReadTwiceCountsOnce) {
  Graph g = TestGraph().Input("in", 50).Op("a", "Mul", {"in", "in"}, {{"y", 10}}).Output("y").Build();
  EXPECT_EQ(Simulated(g, {0}).step_bytes, (std::vector<int64_t>{60}));
}

TEST(SimulatorTest, ViewAliasingOnAndOff) {
  Graph g = TestGraph()
                .Input("in", 10)
                .Op("a", "Conv", {"in"}, {{"x", 40}})
                .Op("r", "Reshape", {"x"}, {{"v", 40}})
                .Op("b", "Conv", {"v"}, {{"y", 8}})
                .Output("y")
                .Build();
  EXPECT_EQ(Simulated(g, {0, 1, 2}).step_bytes, (std::vector<int64_t>{50, 80, 48}));
  MemoryProfile aliased = Simulated(g, {0, 1, 2}, MemoryModel{/*alias_views=*/true, false});
  EXPECT_EQ(aliased.step_bytes, (std::vector<int64_t>{50, 40, 48}));
  // x's buffer carries v as an alias and lives until v's last consumer.
  bool found = false;
  for (const BufferLifetimeInfo& b : aliased.buffers) {
    if (g.tensor(b.tensor).name != "x") continue;
    found = true;
    ASSERT_EQ(b.aliases.size(), 1u);
    EXPECT_EQ(g.tensor(b.aliases[0]).name, "v");
    EXPECT_EQ(b.first_step, 0);
    EXPECT_EQ(b.last_step, 2);
  }
  EXPECT_TRUE(found);
}

TEST(SimulatorTest, ViewOfGraphOutputKeepsBaseToTheEnd) {
  Graph g = TestGraph()
                .Input("in", 10)
                .Op("a", "Conv", {"in"}, {{"x", 40}})
                .Op("r", "Flatten", {"x"}, {{"v", 40}})
                .Op("b", "Conv", {"in"}, {{"y", 8}})
                .Output("v")
                .Output("y")
                .Build();
  EXPECT_EQ(Simulated(g, {0, 1, 2}, MemoryModel{true, false}).step_bytes, (std::vector<int64_t>{50, 50, 58}));
}

TEST(SimulatorTest, WorkspaceOnlyDuringItsStep) {
  Graph g = TestGraph()
                .Input("in", 10)
                .Op("a", "Conv", {"in"}, {{"x", 20}}, /*workspace_bytes=*/100)
                .Op("b", "Conv", {"x"}, {{"y", 30}})
                .Output("y")
                .Build();
  MemoryProfile p = Simulated(g, {0, 1});
  EXPECT_EQ(p.step_bytes, (std::vector<int64_t>{130, 50}));
}

TEST(SimulatorTest, CountWeightsAddsThemToEveryStep) {
  Graph g = TestGraph()
                .Input("in", 10)
                .Weight("w", 7)
                .Op("a", "Conv", {"in", "w"}, {{"x", 20}})
                .Op("b", "Conv", {"x"}, {{"y", 30}})
                .Output("y")
                .Build();
  EXPECT_EQ(Simulated(g, {0, 1}).step_bytes, (std::vector<int64_t>{30, 50}));
  EXPECT_EQ(Simulated(g, {0, 1}, MemoryModel{false, true}).step_bytes, (std::vector<int64_t>{37, 57}));
}

TEST(SimulatorTest, InPlaceWritesOverTheLastReadInput) {
  // a -> x -> Relu -> y -> b. In place, the Relu's step holds x once.
  Graph g = TestGraph()
                .Input("in", 10)
                .Op("a", "Conv", {"in"}, {{"x", 40}})
                .Op("relu", "Relu", {"x"}, {{"y", 40}})
                .Op("b", "Conv", {"y"}, {{"out", 8}})
                .Output("out")
                .Build();
  EXPECT_EQ(Simulated(g, {0, 1, 2}).step_bytes, (std::vector<int64_t>{50, 80, 48}));
  MemoryProfile in_place = Simulated(g, {0, 1, 2}, MemoryModel{false, false, true});
  EXPECT_EQ(in_place.step_bytes, (std::vector<int64_t>{50, 40, 48}));
  bool merged = false;
  for (const BufferLifetimeInfo& b : in_place.buffers) {
    if (g.tensor(b.tensor).name != "x") continue;
    merged = b.aliases.size() == 1 && g.tensor(b.aliases[0]).name == "y" && b.last_step == 2;
  }
  EXPECT_TRUE(merged);
}

TEST(SimulatorTest, InPlaceNeedsTheLastReader) {
  // x is read again after the Relu, so the Relu cannot overwrite it.
  Graph g = TestGraph()
                .Input("in", 10)
                .Op("a", "Conv", {"in"}, {{"x", 40}})
                .Op("relu", "Relu", {"x"}, {{"y", 40}})
                .Op("b", "Add", {"x", "y"}, {{"out", 40}})
                .Output("out")
                .Build();
  MemoryProfile p = Simulated(g, {0, 1, 2}, MemoryModel{false, false, true});
  EXPECT_EQ(p.step_bytes[1], 80);
  // The Add reads both last and may overwrite x (its first input).
  EXPECT_EQ(p.step_bytes[2], 80);
}

// a -> x1 and b -> x2 are concatenated into o, which d reads. In place, the
// Concat's step holds x1 and x2 once (they are o), and they live until d.
TEST(SimulatorTest, ConcatInPlaceMakesTheInputsSlicesOfTheOutput) {
  auto graph = [](std::vector<int64_t> out_shape, std::vector<int64_t> x1_shape, std::vector<int64_t> x2_shape) {
    return TestGraph()
        .Input("in", 10)
        .Op("a", "Conv", {"in"}, {{"x1", 40}})
        .Op("b", "Conv", {"in"}, {{"x2", 60}})
        .Op("c", "Concat", {"x1", "x2"}, {{"o", 100}})
        .Op("d", "Conv", {"o"}, {{"y", 10}})
        .Output("y")
        .Shape("x1", std::move(x1_shape))
        .Shape("x2", std::move(x2_shape))
        .Shape("o", std::move(out_shape))
        .Build();
  };
  const MemoryModel concat{false, false, false, true};
  Graph g = graph({1, 10, 2}, {1, 4, 2}, {1, 6, 2});
  EXPECT_EQ(Simulated(g, {0, 1, 2, 3}).step_bytes, (std::vector<int64_t>{50, 110, 200, 110}));
  MemoryProfile p = Simulated(g, {0, 1, 2, 3}, concat);
  EXPECT_EQ(p.step_bytes, (std::vector<int64_t>{50, 110, 100, 110}));
  ASSERT_EQ(p.buffers.size(), 4u);  // in, x1, x2, y: o has no buffer
  const BufferLifetimeInfo& x1 = p.buffers[1];
  const BufferLifetimeInfo& x2 = p.buffers[2];
  EXPECT_EQ(g.tensor(x1.tensor).name, "x1");
  ASSERT_EQ(x1.aliases.size(), 1u);
  EXPECT_EQ(g.tensor(x1.aliases[0]).name, "o");
  EXPECT_EQ(x1.anchor, -1);
  EXPECT_EQ(x1.last_step, 3);
  EXPECT_EQ(g.tensor(x2.tensor).name, "x2");
  EXPECT_EQ(x2.anchor, 1);
  EXPECT_EQ(x2.offset_from_anchor, 40);
  EXPECT_EQ(g.tensor(x2.slice_of).name, "o");
  EXPECT_EQ(x2.last_step, 3);

  // Batch 2: each input is two blocks of the output, not one slice.
  EXPECT_EQ(Simulated(graph({2, 5, 2}, {2, 2, 2}, {2, 3, 2}), {0, 1, 2, 3}, concat).peak_bytes, 200);
  // Unknown shapes, or inputs that do not add up to the output: no slices.
  EXPECT_EQ(Simulated(graph({}, {}, {}), {0, 1, 2, 3}, concat).peak_bytes, 200);
  EXPECT_EQ(Simulated(graph({1, 12, 2}, {1, 4, 2}, {1, 6, 2}), {0, 1, 2, 3}, concat).peak_bytes, 200);
  // Axis 2 of a {1, 1, ...} tensor is still one block per input.
  EXPECT_EQ(Simulated(graph({1, 1, 10}, {1, 1, 4}, {1, 1, 6}), {0, 1, 2, 3}, concat).peak_bytes, 110);
}

// A slice the Concat shares with another Concat, a graph input, or a graph
// output cannot be laid out in place.
TEST(SimulatorTest, ConcatInPlaceNeedsSlicesOfItsOwn) {
  const MemoryModel concat{false, false, false, true};
  Graph twice = TestGraph()
                    .Input("in", 10)
                    .Op("a", "Conv", {"in"}, {{"x", 40}})
                    .Op("c1", "Concat", {"x"}, {{"o1", 40}})
                    .Op("c2", "Concat", {"x"}, {{"o2", 40}})
                    .Op("d", "Add", {"o1", "o2"}, {{"y", 40}})
                    .Output("y")
                    .Shape("x", {1, 40})
                    .Shape("o1", {1, 40})
                    .Shape("o2", {1, 40})
                    .Build();
  BufferModel buffers(twice, concat);
  EXPECT_EQ(buffers.concat_slices(1).size(), 1u);  // the first takes x
  EXPECT_TRUE(buffers.concat_slices(2).empty());
  Graph from_input = TestGraph()
                         .Input("in", 10)
                         .Op("c", "Concat", {"in"}, {{"o", 10}})
                         .Op("d", "Conv", {"o"}, {{"y", 10}})
                         .Output("y")
                         .Shape("in", {1, 10})
                         .Shape("o", {1, 10})
                         .Build();
  EXPECT_TRUE(BufferModel(from_input, concat).concat_slices(0).empty());
  Graph of_output = TestGraph()
                        .Input("in", 10)
                        .Op("a", "Conv", {"in"}, {{"x", 10}})
                        .Op("c", "Concat", {"x"}, {{"o", 10}})
                        .Output("x")
                        .Output("o")
                        .Shape("x", {1, 10})
                        .Shape("o", {1, 10})
                        .Build();
  EXPECT_TRUE(BufferModel(of_output, concat).concat_slices(1).empty());
}

// With concats in the graphs: the simulator, the tracker and the verifier's
// naive re-simulation agree under every combination of switches.
TEST(SimulatorTest, ConcatInPlaceAgreesWithNaiveResimulation) {
  std::mt19937 rng(5);
  int sliced = 0;
  for (int trial = 0; trial < 400; ++trial) {
    Graph g = *Graph::Build(testing::RandomDag(1 + trial % 15, rng, /*concats=*/true));
    for (int switches = 0; switches < 16; ++switches) {
      MemoryModel model{(switches & 1) != 0, (switches & 2) != 0, (switches & 4) != 0, (switches & 8) != 0};
      BufferModel buffers(g, model);
      for (OpId u = 0; u < g.num_ops(); ++u) sliced += buffers.concat_slices(u).empty() ? 0 : 1;
      std::vector<OpId> order = testing::RandomTopologicalOrder(g, rng);
      absl::StatusOr<MemoryProfile> p = Simulate(buffers, order);
      ASSERT_TRUE(p.ok());
      ASSERT_EQ(p->peak_bytes, testing::NaivePeak(g, order, model.alias_views, model.count_weights, model.in_place,
                                                  model.concat_in_place))
          << "trial " << trial << " switches " << switches;
      ASSERT_EQ(PeakOf(buffers, order), p->peak_bytes);
    }
  }
  EXPECT_GT(sliced, 500);
}

TEST(SimulatorTest, RejectsNonTopologicalOrder) {
  Graph g = TestGraph()
                .Input("in", 10)
                .Op("a", "Conv", {"in"}, {{"x", 20}})
                .Op("b", "Conv", {"x"}, {{"y", 30}})
                .Output("y")
                .Build();
  BufferModel buffers(g, {});
  EXPECT_EQ(Simulate(buffers, {1, 0}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Simulate(buffers, {0}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Simulate(buffers, {0, 0}).status().code(), absl::StatusCode::kInvalidArgument);
}

// The simulator, the incremental tracker and the verifier's naive
// re-simulation agree on random graphs, orders and switches.
TEST(SimulatorTest, AgreesWithNaiveResimulationOnRandomGraphs) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 500; ++trial) {
    Graph g = *Graph::Build(testing::RandomDag(1 + trial % 15, rng));
    for (int switches = 0; switches < 8; ++switches) {
      MemoryModel model{(switches & 1) != 0, (switches & 2) != 0, (switches & 4) != 0};
      BufferModel buffers(g, model);
      std::vector<OpId> order = testing::RandomTopologicalOrder(g, rng);
      absl::StatusOr<MemoryProfile> p = Simulate(buffers, order);
      ASSERT_TRUE(p.ok());
      ASSERT_EQ(p->peak_bytes, testing::NaivePeak(g, order, model.alias_views, model.count_weights, model.in_place))
          << "trial " << trial << " switches " << switches;
      ASSERT_EQ(PeakOf(buffers, order), p->peak_bytes);
    }
  }
}

// The lower bound never exceeds the best order's peak (brute force), and is
// at least the largest single op's inputs + outputs + workspace.
TEST(LowerBoundTest, NeverAboveTheOptimumOnRandomGraphs) {
  std::mt19937 rng(11);
  int tight = 0;
  for (int trial = 0; trial < 300; ++trial) {
    Graph g = *Graph::Build(testing::RandomDag(1 + trial % 8, rng));
    for (int switches = 0; switches < 4; ++switches) {
      const bool alias = (switches & 1) != 0;
      BufferModel buffers(g, MemoryModel{alias, false, (switches & 2) != 0});
      int64_t best = INT64_MAX;
      testing::ForEachTopologicalOrder(
          g, [&](const std::vector<OpId>& order) { best = std::min(best, PeakOf(buffers, order)); });
      int64_t bound = LowerBoundBytes(buffers);
      ASSERT_LE(bound, best) << "trial " << trial;
      if (bound == best) ++tight;
      if (switches == 0) {
        for (const Op& op : g.ops()) {
          int64_t footprint = op.workspace_bytes;
          std::vector<TensorId> touched(op.inputs);
          touched.insert(touched.end(), op.outputs.begin(), op.outputs.end());
          std::sort(touched.begin(), touched.end());
          touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
          for (TensorId t : touched) footprint += g.tensor(t).is_weight ? 0 : g.tensor(t).bytes;
          ASSERT_GE(bound, footprint);
        }
      }
    }
  }
  EXPECT_GT(tight, 0);  // the bound is not vacuous
}

// StepLowerBounds (bitsets) equals its definition evaluated op by op, on
// graphs wide enough to span several 64-bit words, under every switch.
TEST(SimulatorTest, StepLowerBoundsFollowTheirDefinition) {
  std::mt19937 rng(77);
  for (int trial = 0; trial < 60; ++trial) {
    Graph g = *Graph::Build(testing::RandomDag(1 + trial * 3, rng, /*concats=*/trial % 3 == 0));
    const Reachability reach(g);
    for (int switches = 0; switches < 16; ++switches) {
      const MemoryModel model{(switches & 1) != 0, (switches & 2) != 0, (switches & 4) != 0, (switches & 8) != 0};
      BufferModel buffers(g, model);
      const std::vector<int64_t> bounds = StepLowerBounds(buffers, reach);
      for (OpId u = 0; u < g.num_ops(); ++u) {
        int64_t expected = buffers.resident_bytes() + g.op(u).workspace_bytes - buffers.in_place_bytes(u);
        for (const ActivationBuffer& b : buffers.buffers()) {
          if (b.producer == u) {
            expected += b.bytes;
            continue;
          }
          if (b.producer != kNoOp && !reach.IsAncestor(b.producer, u)) continue;
          bool read_later = b.live_to_end;
          for (OpId user : b.users) read_later = read_later || user == u || reach.IsDescendant(user, u);
          if (read_later) expected += b.bytes;
        }
        ASSERT_EQ(bounds[u], expected) << "trial " << trial << " switches " << switches << " op " << u;
      }
    }
  }
}

}  // namespace
}  // namespace serenity
