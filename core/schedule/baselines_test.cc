#include "core/schedule/baselines.h"

#include <algorithm>
#include <random>

#include "core/memory/simulator.h"
#include "core/schedule/compiler_baselines.h"
#include "gtest/gtest.h"
#include "tests/testing/test_graph.h"

namespace serenity {
namespace {

using testing::TestGraph;

// a -> b -> d and c -> d, with c listed after b.
Graph TwoBranches() {
  return TestGraph()
      .Input("in", 10)
      .Op("a", "Conv", {"in"}, {{"x", 10}})
      .Op("b", "Conv", {"x"}, {{"y", 10}})
      .Op("c", "Conv", {"in"}, {{"z", 10}})
      .Op("d", "Add", {"y", "z"}, {{"out", 10}})
      .Output("out")
      .Build();
}

TEST(BaselinesTest, FileOrderKeepsATopologicalFile) {
  EXPECT_EQ(FileOrder(TwoBranches()), (std::vector<OpId>{0, 1, 2, 3}));
}

TEST(BaselinesTest, FileOrderSortsANonTopologicalList) {
  Graph g = TestGraph()
                .Input("in", 1)
                .Op("second", "Conv", {"x"}, {{"y", 1}})
                .Op("first", "Conv", {"in"}, {{"x", 1}})
                .Output("y")
                .Build();
  EXPECT_EQ(FileOrder(g), (std::vector<OpId>{1, 0}));
}

// FileOrder against a scan for the smallest ready position, on random DAGs
// whose op lists are topological (kept as they are) or shuffled.
TEST(BaselinesTest, FileOrderRunsTheSmallestReadyPositionFirst) {
  std::mt19937 rng(13);
  for (int trial = 0; trial < 200; ++trial) {
    GraphSpec spec = testing::RandomDag(1 + trial % 40, rng);
    if (trial % 2 == 1) std::shuffle(spec.ops.begin(), spec.ops.end(), rng);
    const Graph g = *Graph::Build(spec);
    std::vector<OpId> expected;
    std::vector<bool> ran(g.num_ops(), false);
    while (expected.size() < static_cast<size_t>(g.num_ops())) {
      for (OpId u = 0; u < g.num_ops(); ++u) {
        const std::vector<OpId>& preds = g.op(u).predecessors;
        if (!ran[u] && std::all_of(preds.begin(), preds.end(), [&](OpId p) { return ran[p]; })) {
          ran[u] = true;
          expected.push_back(u);
          break;
        }
      }
    }
    ASSERT_EQ(FileOrder(g), expected) << "trial " << trial;
  }
}

TEST(BaselinesTest, KahnIsFifo) {
  // Ready at start: a, c (by position). After a: b joins behind c.
  EXPECT_EQ(KahnOrder(TwoBranches()), (std::vector<OpId>{0, 2, 1, 3}));
}

TEST(BaselinesTest, GreedyRunsTheCheapestReadyOpFirst) {
  // Two branches that each blow up then shrink; the file runs both blow-ups
  // back to back, greedy finishes the cheap branch first.
  Graph g = TestGraph()
                .Input("in", 10)
                .Op("a", "Conv", {"in"}, {{"A", 100}})
                .Op("b", "Conv", {"in"}, {{"B", 50}})
                .Op("a2", "Conv", {"A"}, {{"a2", 1}})
                .Op("b2", "Conv", {"B"}, {{"b2", 1}})
                .Op("join", "Add", {"a2", "b2"}, {{"out", 1}})
                .Output("out")
                .Build();
  BufferModel buffers(g, {});
  std::vector<OpId> order = GreedyOrder(buffers);
  EXPECT_EQ(order, (std::vector<OpId>{1, 3, 0, 2, 4}));
  EXPECT_EQ(PeakOf(buffers, order), 111);         // a runs with in and b2 live
  EXPECT_EQ(PeakOf(buffers, FileOrder(g)), 160);  // b runs with in and A live
}

TEST(BaselinesTest, AllBaselinesAreTopologicalOnRandomGraphs) {
  std::mt19937 rng(5);
  for (int trial = 0; trial < 300; ++trial) {
    Graph g = *Graph::Build(testing::RandomDag(1 + trial % 30, rng));
    BufferModel buffers(g, MemoryModel{trial % 2 == 0, false});
    ASSERT_TRUE(IsTopologicalOrder(g, FileOrder(g)));
    ASSERT_TRUE(IsTopologicalOrder(g, KahnOrder(g)));
    ASSERT_TRUE(IsTopologicalOrder(g, GreedyOrder(buffers)));
  }
}

}  // namespace
}  // namespace serenity

namespace serenity {
namespace {

TEST(CompilerBaselinesTest, TopologicalAndInductorNeverLosesToTheFile) {
  std::mt19937 rng(71);
  for (int trial = 0; trial < 300; ++trial) {
    Graph g = *Graph::Build(testing::RandomDag(1 + trial % 40, rng));
    BufferModel buffers(g, MemoryModel{trial % 2 == 0, false});
    std::vector<OpId> inductor = InductorOrder(buffers);
    std::vector<OpId> xla = XlaOrder(buffers);
    ASSERT_TRUE(IsTopologicalOrder(g, inductor)) << "trial " << trial;
    ASSERT_TRUE(IsTopologicalOrder(g, xla)) << "trial " << trial;
    // Inductor keeps the input order unless a sort beats it.
    ASSERT_LE(PeakOf(buffers, inductor), PeakOf(buffers, FileOrder(g)));
  }
}

TEST(CompilerBaselinesTest, XlaListSchedulerFreesFirst) {
  // After `a`, running `free_it` releases 100 bytes while `grow` adds 50:
  // the list scheduler runs the freeing op first.
  Graph g = TestGraph()
                .Input("in", 10)
                .Op("a", "Conv", {"in"}, {{"x", 100}})
                .Op("grow", "Conv", {"in"}, {{"y", 50}})
                .Op("free_it", "Relu", {"x"}, {{"z", 1}})
                .Op("join", "Add", {"y", "z"}, {{"out", 1}})
                .Output("out")
                .Build();
  BufferModel buffers(g, {});
  std::vector<OpId> order = XlaOrder(buffers);
  ASSERT_TRUE(IsTopologicalOrder(g, order));
  auto position = [&](const char* name) {
    return std::find(order.begin(), order.end(), *g.FindOp(name)) - order.begin();
  };
  EXPECT_LT(position("free_it"), position("grow"));
}

}  // namespace
}  // namespace serenity
