// PlanGraph with several memories and pins (issue 18): the placement comes
// after the arena and changes neither the order nor the arena.
#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "core/onnx/onnx_import.h"
#include "core/plan_proto.h"
#include "core/planner.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/orders.h"
#include "tests/testing/plan_verifier.h"
#include "tests/testing/test_graph.h"

namespace serenity {
namespace {

using ::testing::HasSubstr;

// Plans of random graphs with two or three memories (the first smaller than
// the peak) pass the independent verifier, pins hold, and the order, peak
// and arena are those of the plan without memories. A memory whose offsets
// are broken fails the verifier.
TEST(PlannerMemoriesTest, PlansOfRandomGraphsPassTheVerifier) {
  std::mt19937 rng(51);
  int pinned = 0, split = 0;
  for (int trial = 0; trial < 200; ++trial) {
    Graph g = *Graph::Build(testing::RandomDag(2 + trial % 20, rng));
    PlanOptions options;
    options.memory_model = MemoryModel{trial % 2 == 0, trial % 3 == 0, trial % 4 >= 2};
    options.alignment = trial % 4 == 0 ? 1 : 16;
    absl::StatusOr<Plan> plain = PlanGraph(g, options);
    ASSERT_TRUE(plain.ok()) << plain.status();
    const int64_t peak = plain->profile.peak_bytes;
    options.memories = {{"sram", std::max<int64_t>(16, peak / 3), 16}, {"psram", std::max<int64_t>(32, peak / 3), 32}};
    if (trial % 2 == 0) options.memories.push_back({"dram", 4 * peak + 1024, 64});
    // Pin the first graph input's buffer to the slowest memory.
    if (trial % 3 == 0 && !g.inputs().empty()) {
      options.pins.push_back({g.tensor(g.inputs()[0]).name, options.memories.back().name, -1});
    }
    absl::StatusOr<Plan> plan = PlanGraph(g, options);
    if (!plan.ok()) {
      // Only when nothing can hold the buffers left for the last memory.
      ASSERT_EQ(plan.status().code(), absl::StatusCode::kFailedPrecondition) << plan.status();
      ASSERT_EQ(options.memories.size(), 2u) << plan.status();
      continue;
    }
    EXPECT_EQ(plan->order, plain->order);
    EXPECT_EQ(plan->profile.peak_bytes, peak);
    EXPECT_EQ(plan->arena.offsets, plain->arena.offsets);
    v1::Plan proto = PlanToProto(g, *plan, options);
    ASSERT_TRUE(testing::VerifyPlan(g, proto).ok()) << testing::VerifyPlan(g, proto) << " trial " << trial;
    ASSERT_EQ(proto.memories_size(), static_cast<int>(options.memories.size()));
    split += proto.memories(0).buffers_size() > 0 &&
             proto.memories(1).buffers_size() + proto.memories(proto.memories_size() - 1).buffers_size() > 0;
    for (const TensorPin& pin : options.pins) {
      bool found = false;
      for (const v1::ArenaBuffer& b : proto.memories(proto.memories_size() - 1).buffers()) {
        found = found || b.tensor() == pin.tensor;
      }
      EXPECT_TRUE(found) << pin.tensor << " trial " << trial;
      ++pinned;
    }
    for (int m = 0; m < proto.memories_size(); ++m) {
      if (proto.memories(m).buffers_size() == 0 || proto.memories(m).buffers(0).size() == 0) continue;
      v1::Plan broken = proto;
      broken.mutable_memories(m)->mutable_buffers(0)->set_offset(proto.memories(m).capacity_bytes());
      EXPECT_FALSE(testing::VerifyMemories(g, broken).ok()) << "trial " << trial;
    }
  }
  EXPECT_GT(pinned, 10);
  EXPECT_GT(split, 50);
}

// The bytes the ops write and read are the same whether element-wise ops
// write over their inputs or not: access bytes summed over the memories
// agree with and without in_place.
TEST(PlannerMemoriesTest, AccessBytesDoNotDependOnInPlace) {
  std::mt19937 rng(53);
  int differ = 0;
  for (int trial = 0; trial < 100; ++trial) {
    Graph g = *Graph::Build(testing::RandomDag(2 + trial % 15, rng));
    int64_t totals[2] = {0, 0};
    for (int in_place = 0; in_place < 2; ++in_place) {
      PlanOptions options;
      options.memory_model.in_place = in_place == 1;
      options.memories = {{"sram", 256, 1}, {"dram", int64_t{1} << 40, 1}};
      absl::StatusOr<Plan> plan = PlanGraph(g, options);
      ASSERT_TRUE(plan.ok()) << plan.status();
      for (int64_t bytes : plan->memory_access_bytes) totals[in_place] += bytes;
      differ += in_place == 1 && plan->profile.buffers.size() < static_cast<size_t>(g.num_tensors());
    }
    EXPECT_EQ(totals[0], totals[1]) << "trial " << trial;
  }
  EXPECT_GT(differ, 10);  // in_place merged buffers in many trials
}

// Capacities below what is live at once: a precise error at planning time.
TEST(PlannerMemoriesTest, CapacitiesTooSmallFailThePlan) {
  std::mt19937 rng(52);
  Graph g = *Graph::Build(testing::RandomDag(12, rng));
  PlanOptions options;
  absl::StatusOr<Plan> plain = PlanGraph(g, options);
  ASSERT_TRUE(plain.ok());
  const int64_t half = plain->profile.peak_bytes / 2;
  options.memories = {{"sram", half / 2, 1}, {"dram", half / 2, 1}};
  absl::StatusOr<Plan> plan = PlanGraph(g, options);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(plan.status().message(), HasSubstr("more than all memories hold together"));
  // A pinned tensor the memory model gives no buffer (a weight not counted).
  GraphSpec spec = testing::ReluChain(3);
  spec.tensors.push_back({"w", {4}, 1, -1, true});
  spec.ops[0].inputs.push_back("w");
  Graph with_weight = *Graph::Build(std::move(spec));
  options.memories = {{"sram", 1 << 20, 1}};
  options.pins = {{"w", "sram", -1}};
  plan = PlanGraph(with_weight, options);
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(plan.status().message(), HasSubstr("pinned tensor 'w' has no buffer of its own"));
}

// Every shared model with three memories (a quarter, half and four times
// its peak) passes the independent verifier, and the first memory holds
// something on every model.
TEST(PlannerMemoriesTest, SharedModelsPassTheVerifier) {
  const std::vector<std::string> models = testing::OnnxFilesIn(SERENITY_SHARED_DIR "/bench/models");
  ASSERT_FALSE(models.empty());
  for (const std::string& model : models) {
    absl::StatusOr<Graph> g = ImportOnnxModel(testing::ReadFile(model), {});
    ASSERT_TRUE(g.ok()) << model << ": " << g.status();
    PlanOptions options;
    options.algorithm = Algorithm::kBaseline;  // the placement is the point here, not the order
    absl::StatusOr<Plan> plain = PlanGraph(*g, options);
    ASSERT_TRUE(plain.ok()) << model << ": " << plain.status();
    const int64_t peak = plain->profile.peak_bytes;
    options.memories = {{"sram", peak / 4, 16}, {"psram", peak / 2, 64}, {"dram", 4 * peak, 64}};
    absl::StatusOr<Plan> plan = PlanGraph(*g, options);
    ASSERT_TRUE(plan.ok()) << model << ": " << plan.status();
    const v1::Plan proto = PlanToProto(*g, *plan, options);
    ASSERT_TRUE(testing::VerifyPlan(*g, proto).ok()) << model << ": " << testing::VerifyPlan(*g, proto);
    EXPECT_GT(proto.memories(0).buffers_size(), 0) << model;
  }
}

}  // namespace
}  // namespace serenity
