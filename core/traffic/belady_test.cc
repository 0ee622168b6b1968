#include "core/traffic/belady.h"

#include <algorithm>
#include <functional>
#include <random>

#include "core/memory/simulator.h"
#include "gtest/gtest.h"
#include "tests/testing/orders.h"
#include "tests/testing/test_graph.h"

namespace serenity {
namespace {

using testing::TestGraph;

// x is read by b and, much later, by d.
Graph SkipConnection() {
  return TestGraph()
      .Input("in", 10)
      .Op("a", "Conv", {"in"}, {{"x", 10}})
      .Op("b", "Conv", {"x"}, {{"y", 10}})
      .Op("c", "Conv", {"y"}, {{"z", 10}})
      .Op("d", "Add", {"x", "z"}, {{"out", 1}})
      .Output("out")
      .Build();
}

// a -> x1 and b -> x2 are concatenated in place into o, read by r with the
// outputs of y and x, which each need 200 bytes of workspace. On 300 bytes,
// y's step spills both slices. The Concat copies nothing, so they come back
// once, for r. (Counting the Concat as a read of its slices, as before,
// brought them back at its step, x evicted them again, and r read them a
// second time: 400 bytes read.)
TEST(BeladyTest, ConcatInPlaceReadsNothing) {
  Graph g = TestGraph()
                .Input("g", 8)
                .Op("a", "Conv", {"g"}, {{"x1", 100}})
                .Op("b", "Conv", {"g"}, {{"x2", 100}})
                .Op("y", "Conv", {"g"}, {{"ty", 8}}, 200)
                .Op("c", "Concat", {"x1", "x2"}, {{"o", 200}})
                .Op("x", "Conv", {"g"}, {{"tx", 8}}, 200)
                .Op("r", "Sum", {"o", "ty", "tx"}, {{"out", 8}})
                .Output("out")
                .Shape("x1", {1, 10, 10})
                .Shape("x2", {1, 10, 10})
                .Shape("o", {1, 20, 10})
                .Build();
  BufferModel buffers(g, MemoryModel{false, false, false, true});
  ASSERT_FALSE(buffers.concat_slices(3).empty());
  TrafficResult r = SimulateTraffic(buffers, {0, 1, 2, 3, 4, 5}, 300);
  ASSERT_TRUE(r.feasible);
  EXPECT_EQ(r.write_bytes, 200);  // x1 and x2 at y's step
  EXPECT_EQ(r.read_bytes, 200);   // both back for r, once
  EXPECT_EQ(r.reloads, 2);
}

// p (100 bytes) is accumulated into by c and read by r. Workspace of 200 at
// w1 and w2 on 300 bytes of memory spills p at each: before c, and again
// after c changed it, so the copy written at w1 is stale and p is written
// twice (a plain read of p by c would leave the first copy valid: one write).
TEST(BeladyTest, AnAccumulationMakesTheOffChipCopyStale) {
  for (bool accumulate : {true, false}) {
    SCOPED_TRACE(accumulate);
    Graph g =
        TestGraph()
            .Input("g", 8)
            .Weight("w", 4)
            .Op("a", "Conv", {"g"}, {{"p", 100}})
            .Op("w1", "Conv", {"g"}, {{"t1", 8}}, 200)
            .Op("c", accumulate ? std::string(kConvAccumulateType) : std::string("Op"), {"g", "w", "p"}, {{"q", 100}})
            .Op("w2", "Conv", {"g"}, {{"t2", 8}}, 200)
            .Op("r", "Sum", {accumulate ? "q" : "p", "t1", "t2"}, {{"out", 8}})
            .Output("out")
            .Build();
    BufferModel buffers(g, {});
    ASSERT_EQ(buffers.accumulates_into(2).empty(), !accumulate);
    TrafficResult r = SimulateTraffic(buffers, {0, 1, 2, 3, 4}, 300);
    ASSERT_TRUE(r.feasible);
    EXPECT_EQ(r.write_bytes, accumulate ? 200 : 100);
    EXPECT_EQ(r.read_bytes, 200);  // back for c, and for r
  }
}

TEST(BeladyTest, HandComputedSpillAndReload) {
  Graph g = SkipConnection();
  BufferModel buffers(g, {});
  // Peak 30 (c runs with x, y, z). With 21 bytes, x is spilled before c and
  // read back for d.
  TrafficResult r = SimulateTraffic(buffers, {0, 1, 2, 3}, 21);
  EXPECT_TRUE(r.feasible);
  EXPECT_EQ(r.write_bytes, 10);
  EXPECT_EQ(r.read_bytes, 10);
  EXPECT_EQ(r.reloads, 1);
  // With the peak on chip nothing moves.
  TrafficResult fits = SimulateTraffic(buffers, {0, 1, 2, 3}, 30);
  EXPECT_EQ(fits.read_bytes + fits.write_bytes, 0);
}

TEST(BeladyTest, ReportsTheOpThatCannotFit) {
  Graph g = SkipConnection();
  BufferModel buffers(g, {});
  TrafficResult r = SimulateTraffic(buffers, {0, 1, 2, 3}, 19);  // a needs in + x = 20
  EXPECT_FALSE(r.feasible);
  EXPECT_EQ(r.infeasible_op, *g.FindOp("a"));
}

TEST(BeladyTest, NoTrafficWhenThePeakFits) {
  std::mt19937 rng(73);
  for (int trial = 0; trial < 300; ++trial) {
    Graph g = *Graph::Build(testing::RandomDag(1 + trial % 20, rng));
    BufferModel buffers(g, MemoryModel{trial % 2 == 0, false, trial % 3 == 0});
    std::vector<OpId> order = testing::RandomTopologicalOrder(g, rng);
    TrafficResult r = SimulateTraffic(buffers, order, PeakOf(buffers, order));
    ASSERT_TRUE(r.feasible);
    ASSERT_EQ(r.read_bytes + r.write_bytes, 0) << "trial " << trial;
  }
}

// In place, a chain of element-wise ops runs in one buffer's room.
TEST(BeladyTest, InPlaceOpsNeedNoRoomForTheirOutput) {
  Graph g = TestGraph()
                .Input("in", 10)
                .Op("conv", "Conv", {"in"}, {{"a", 100}})
                .Op("relu1", "Relu", {"a"}, {{"b", 100}})
                .Op("relu2", "Relu", {"b"}, {{"c", 100}})
                .Op("pool", "GlobalAveragePool", {"c"}, {{"out", 1}})
                .Output("out")
                .Build();
  const std::vector<OpId> order = {0, 1, 2, 3};
  BufferModel in_place(g, MemoryModel{false, false, true});
  ASSERT_EQ(PeakOf(in_place, order), 110);  // conv: in + a; each Relu: 100
  TrafficResult r = SimulateTraffic(in_place, order, 110);
  EXPECT_TRUE(r.feasible);
  EXPECT_EQ(r.read_bytes + r.write_bytes, 0);
  // Without the switch each Relu needs 200 bytes: 110 is too little.
  BufferModel plain(g, {});
  TrafficResult without = SimulateTraffic(plain, order, 110);
  EXPECT_FALSE(without.feasible);
  EXPECT_EQ(without.infeasible_op, 1);
}

// The fewest reloads over every eviction choice, by exhaustive search, for
// unit-size buffers.
int64_t BruteForceReloads(const BufferModel& buffers, const std::vector<OpId>& order, int64_t capacity) {
  const auto& all = buffers.buffers();
  std::vector<int32_t> step_of(buffers.graph().num_ops());
  for (size_t t = 0; t < order.size(); ++t) step_of[order[t]] = static_cast<int32_t>(t);
  auto needed_after = [&](size_t b, int32_t t) {
    if (all[b].live_to_end) return true;
    for (OpId user : all[b].users) {
      if (step_of[user] > t) return true;
    }
    return false;
  };
  int64_t best = INT64_MAX;
  std::function<void(size_t, std::vector<bool>, int64_t)> step = [&](size_t t, std::vector<bool> resident,
                                                                     int64_t reloads) {
    if (reloads >= best) return;
    if (t == order.size()) {
      best = reloads;
      return;
    }
    const OpId u = order[t];
    std::vector<bool> pinned(all.size(), false);
    int64_t missing = 0;
    for (BufferId b : buffers.reads(u)) {
      pinned[b] = true;
      missing += resident[b] ? 0 : 1;
    }
    for (BufferId b : buffers.allocates(u)) {
      pinned[b] = true;
      missing += 1;
    }
    int64_t used = std::count(resident.begin(), resident.end(), true);
    if (used + missing > capacity) {
      for (size_t v = 0; v < all.size(); ++v) {
        if (!resident[v] || pinned[v]) continue;
        std::vector<bool> next = resident;
        next[v] = false;
        step(t, next, reloads);  // evict v, then retry the step
      }
      return;
    }
    for (BufferId b : buffers.reads(u)) {
      if (!resident[b]) ++reloads;
      resident[b] = true;
    }
    for (BufferId b : buffers.allocates(u)) resident[b] = true;
    for (size_t b = 0; b < all.size(); ++b) {
      if (resident[b] && !needed_after(b, static_cast<int32_t>(t))) resident[b] = false;
    }
    step(t + 1, resident, reloads);
  };
  // Graph inputs start on chip in order of first use while they fit, as in
  // SimulateTraffic (all the same size, so the first `capacity` of them).
  std::vector<size_t> inputs;
  for (size_t b = 0; b < all.size(); ++b) {
    if (all[b].producer == kNoOp) inputs.push_back(b);
  }
  auto first_read = [&](size_t b) {
    int32_t first = INT32_MAX;
    for (OpId user : all[b].users) first = std::min(first, step_of[user]);
    return first;
  };
  std::stable_sort(inputs.begin(), inputs.end(), [&](size_t a, size_t b) { return first_read(a) < first_read(b); });
  std::vector<bool> resident(all.size(), false);
  for (size_t i = 0; i < inputs.size() && static_cast<int64_t>(i) < capacity; ++i) resident[inputs[i]] = true;
  step(0, resident, 0);
  return best;
}

// With equal sizes Belady's rule reloads as few buffers as any eviction can.
TEST(BeladyTest, OptimalForUnitSizes) {
  std::mt19937 rng(79);
  int with_traffic = 0;
  for (int trial = 0; trial < 300; ++trial) {
    GraphSpec spec = testing::RandomDag(3 + trial % 6, rng);
    for (TensorSpec& t : spec.tensors) t.bytes = 1;
    for (OpSpec& op : spec.ops) op.workspace_bytes = 0;
    Graph g = *Graph::Build(spec);
    BufferModel buffers(g, {});
    std::vector<OpId> order = testing::RandomTopologicalOrder(g, rng);
    const int64_t peak = PeakOf(buffers, order);
    for (int64_t capacity = 1; capacity <= peak; ++capacity) {
      TrafficResult r = SimulateTraffic(buffers, order, capacity);
      if (!r.feasible) continue;
      ASSERT_EQ(r.reloads, BruteForceReloads(buffers, order, capacity))
          << "trial " << trial << " capacity " << capacity;
      if (r.reloads > 0) ++with_traffic;
    }
  }
  EXPECT_GT(with_traffic, 20);
}

}  // namespace
}  // namespace serenity
