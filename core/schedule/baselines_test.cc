#include "core/schedule/baselines.h"

#include <random>

#include "core/memory/simulator.h"
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
  EXPECT_EQ(PeakOf(buffers, order), 111);          // a runs with in and b2 live
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
