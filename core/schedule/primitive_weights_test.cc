#include "core/schedule/primitive_weights.h"

#include <limits>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "tests/testing/orders.h"
#include "tests/testing/test_graph.h"

namespace serenity {
namespace {

// x -> a (reads its own weight wa, 36 bytes, and wb, 12, and the shared s)
// -> b (reads s): a's own weights are wa and wb, 48 bytes; b has none.
GraphSpec ConvWithWeights() {
  GraphSpec spec = testing::TestGraph()
                       .Input("x", 10)
                       .Weight("wa", 36)
                       .Weight("wb", 12)
                       .Weight("s", 5)
                       .Op("a", "Conv", {"x", "wa", "wb", "s"}, {{"y", 10}})
                       .Op("b", "Mul", {"y", "s"}, {{"z", 10}})
                       .Output("z")
                       .spec();
  spec.ops[0].alternatives = {{"direct", 30, 0, "", 0}, {"winograd", 10, 20, "", 64}, {"packed", 20, 0, "", 40}};
  return spec;
}

TEST(PrimitiveWeightsTest, OwnWeightsAreTheOnesNoOtherOpReads) {
  const Graph graph = *Graph::Build(ConvWithWeights());
  EXPECT_EQ(OwnWeightBytes(graph, 0), 48);
  EXPECT_EQ(OwnWeightBytes(graph, 1), 0);
}

// A weight that is a graph output must be delivered as it is: no op's own.
TEST(PrimitiveWeightsTest, AGraphOutputIsNobodysOwnWeight) {
  GraphSpec spec = ConvWithWeights();
  spec.outputs.push_back("wb");
  const Graph graph = *Graph::Build(std::move(spec));
  EXPECT_EQ(OwnWeights(graph, 0), std::vector<TensorId>{*graph.FindTensor("wa")});
  EXPECT_EQ(OwnWeightBytes(graph, 0), 36);
  const Graph winograd = ChosenGraph(graph, {1, -1});
  EXPECT_EQ(winograd.tensor(*winograd.FindTensor("wa")).bytes, 64);
  EXPECT_EQ(winograd.tensor(*winograd.FindTensor("wb")).bytes, 12);
}

// An unlimited budget stays unlimited past negative extras.
TEST(PrimitiveWeightsTest, RoomForSaturates) {
  const Graph graph = *Graph::Build(ConvWithWeights());
  const PrimitiveWeights weights(graph, true);  // least_total -8
  EXPECT_EQ(weights.RoomFor(100), 108);
  EXPECT_EQ(weights.RoomFor(std::numeric_limits<int64_t>::max()), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(weights.RoomFor(std::numeric_limits<int64_t>::max() - 3), std::numeric_limits<int64_t>::max());
}

TEST(PrimitiveWeightsTest, ExtraReplacesTheOwnWeights) {
  const Graph graph = *Graph::Build(ConvWithWeights());
  const PrimitiveWeights counted(graph, /*count_weights=*/true);
  EXPECT_TRUE(counted.active());
  EXPECT_EQ(counted.Extra(0, -1), 0);
  EXPECT_EQ(counted.Extra(0, 0), 0);   // weight_bytes 0: the weights as given
  EXPECT_EQ(counted.Extra(0, 1), 16);  // 64 - 48
  EXPECT_EQ(counted.Extra(0, 2), -8);  // 40 - 48
  EXPECT_EQ(counted.least_extra(0), -8);
  EXPECT_EQ(counted.least_total(), -8);
  EXPECT_EQ(counted.ExtraAboveLeast(0, 1), 24);
  EXPECT_EQ(counted.ExtraOf({1, -1}), 16);
  const PrimitiveWeights uncounted(graph, /*count_weights=*/false);
  EXPECT_FALSE(uncounted.active());
  EXPECT_EQ(uncounted.Extra(0, 1), 0);
  EXPECT_EQ(uncounted.least_total(), 0);
}

TEST(PrimitiveWeightsTest, ChosenGraphScalesTheOwnWeights) {
  const Graph graph = *Graph::Build(ConvWithWeights());
  const Graph winograd = ChosenGraph(graph, {1, -1});
  EXPECT_EQ(winograd.weight_bytes(), graph.weight_bytes() + 16);
  EXPECT_EQ(winograd.tensor(*winograd.FindTensor("wa")).bytes, 48);  // 36 * 64 / 48
  EXPECT_EQ(winograd.tensor(*winograd.FindTensor("wb")).bytes, 16);
  EXPECT_EQ(winograd.tensor(*winograd.FindTensor("s")).bytes, 5);
  EXPECT_EQ(winograd.op(0).workspace_bytes, 20);
  const Graph direct = ChosenGraph(graph, {0, -1});
  EXPECT_EQ(direct.weight_bytes(), graph.weight_bytes());
  EXPECT_EQ(direct.op(0).workspace_bytes, 0);
}

// Random graphs: ChosenGraph's weights are CostOfChoice's (computed on
// their own), and the extras add up to the difference.
TEST(PrimitiveWeightsTest, AgreesWithTheTestsOwnCount) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    GraphSpec spec = testing::RandomDag(2 + trial % 6, rng);
    testing::AddRandomAlternatives(&spec, rng, 3, 1, 3);
    testing::AddRandomWeights(&spec, rng);
    const Graph graph = *Graph::Build(std::move(spec));
    const PrimitiveWeights weights(graph, true);
    std::vector<int> choice(graph.num_ops(), -1);
    for (OpId u = 0; u < graph.num_ops(); ++u) {
      const int count = static_cast<int>(graph.op(u).alternatives.size());
      if (count > 0) choice[u] = static_cast<int>(rng() % count);
    }
    const int64_t expected = testing::CostOfChoice(graph, choice).weight_bytes;
    EXPECT_EQ(ChosenGraph(graph, choice).weight_bytes(), expected) << "trial " << trial;
    EXPECT_EQ(graph.weight_bytes() + weights.ExtraOf(choice), expected) << "trial " << trial;
    for (OpId u = 0; u < graph.num_ops(); ++u) EXPECT_GE(weights.ExtraAboveLeast(u, choice[u]), 0);
  }
}

TEST(PrimitiveWeightsTest, BuildRefusesWeightBytesWithoutOwnWeights) {
  GraphSpec spec = ConvWithWeights();
  spec.ops[1].alternatives = {{"fused", 1, 0, "", 8}};
  const absl::Status status = Graph::Build(std::move(spec)).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("op 'b' alternative 'fused' has weight_bytes 8"), std::string::npos) << status;
}

}  // namespace
}  // namespace serenity
