#include "core/rewrite/pattern.h"

#include "core/onnx/onnx_import.h"
#include "core/rewrite/test_model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace serenity {
namespace {

using ::testing::HasSubstr;

// in -> Relu a, Relu b -> Concat(axis) -> Conv -> y.
TestModel ConcatConv(int64_t axis) {
  TestModel m;
  m.Input("in", {1, 2, 4, 4}).Weight("w", {3, 4, 1, 1}).Output("y");
  m.Node("Relu", {"in"}, {"a"}, "ra");
  m.Node("Relu", {"in"}, {"b"}, "rb");
  TestModel::IntAttr(m.Node("Concat", {"a", "b"}, {"c"}, "cat"), "axis", axis);
  m.Node("Conv", {"c", "w"}, {"y"}, "conv");
  return m;
}

TEST(PatternTest, FindsConcatReadOnlyByConv) {
  TestModel m = ConcatConv(1);
  const onnx::GraphProto& g = m.model().graph();
  std::vector<ConcatConvSite> sites = FindConcatConvSites(g, ModelIndex::Build(g));
  ASSERT_EQ(sites.size(), 1u);
  EXPECT_EQ(sites[0].concat, 2);
  EXPECT_EQ(sites[0].convs, std::vector<int>{3});
  EXPECT_TRUE(sites[0].pushed.empty());
}

// Concat -> BatchNormalization -> Relu -> {Conv, Conv}, and a Mul by a
// per-channel constant before a third Conv: one site with all of them.
TEST(PatternTest, FollowsPerChannelOpsToEveryConv) {
  TestModel m = ConcatConv(1);
  onnx::GraphProto* g = m.model().mutable_graph();
  g->mutable_node()->RemoveLast();  // the Conv
  for (const char* p : {"scale", "bias", "mean", "var"}) m.Weight(p, {4});
  m.Weight("k", {4, 1, 1}).Weight("w2", {3, 4, 1, 1}).Weight("w3", {3, 4, 1, 1});
  m.Node("BatchNormalization", {"c", "scale", "bias", "mean", "var"}, {"n"}, "bn");
  m.Node("Relu", {"n"}, {"r"}, "relu");
  m.Node("Conv", {"r", "w"}, {"y"}, "conv");
  m.Node("Conv", {"r", "w2"}, {"y2"}, "conv2");
  m.Node("Mul", {"k", "c"}, {"s"}, "scaled");
  m.Node("Conv", {"s", "w3"}, {"y3"}, "conv3");
  m.Output("y2").Output("y3");
  std::vector<ConcatConvSite> sites = FindConcatConvSites(*g, ModelIndex::Build(*g));
  ASSERT_EQ(sites.size(), 1u);
  EXPECT_EQ(sites[0].concat, 2);
  EXPECT_EQ(sites[0].pushed, (std::vector<int>{3, 7, 4}));  // breadth first: bn, scaled, relu
  EXPECT_EQ(sites[0].convs, (std::vector<int>{5, 6, 8}));

  // A reader that mixes the Concat with another activation ends it.
  m.Node("Add", {"n", "in"}, {"z"}, "mix");
  m.Output("z");
  EXPECT_TRUE(FindConcatConvSites(*g, ModelIndex::Build(*g)).empty());
}

TEST(PatternTest, NegativeAxisCountsFromTheWeightRank) {
  TestModel m = ConcatConv(-3);
  const onnx::GraphProto& g = m.model().graph();
  EXPECT_EQ(FindConcatConvSites(g, ModelIndex::Build(g)).size(), 1u);
}

TEST(PatternTest, SkipsOtherAxesOtherReadersAndGraphOutputs) {
  {
    TestModel m = ConcatConv(2);
    const onnx::GraphProto& g = m.model().graph();
    EXPECT_TRUE(FindConcatConvSites(g, ModelIndex::Build(g)).empty());
  }
  {
    TestModel m = ConcatConv(1);
    m.Node("Relu", {"c"}, {"z"}, "second_reader");
    m.Output("z");
    const onnx::GraphProto& g = m.model().graph();
    EXPECT_TRUE(FindConcatConvSites(g, ModelIndex::Build(g)).empty());
  }
  {
    TestModel m = ConcatConv(1);
    m.Output("c");
    const onnx::GraphProto& g = m.model().graph();
    EXPECT_TRUE(FindConcatConvSites(g, ModelIndex::Build(g)).empty());
  }
  {  // The Concat is the Conv's weight, not its X.
    TestModel m;
    m.Input("in", {1, 2, 1, 1}).Weight("x", {1, 4, 1, 1}).Output("y");
    m.Node("Concat", {"in", "in"}, {"c"}, "cat");
    m.Node("Conv", {"x", "c"}, {"y"}, "conv");
    const onnx::GraphProto& g = m.model().graph();
    EXPECT_TRUE(FindConcatConvSites(g, ModelIndex::Build(g)).empty());
  }
}

TEST(PatternTest, NamesNodesAsTheImporterDoes) {
  TestModel m;
  m.Input("in", {1, 2}).Output("d");
  m.Node("Relu", {"in"}, {"a"}, "");
  m.Node("Relu", {"a"}, {"b"}, "Relu_0");  // takes the name the first would get
  m.Node("Relu", {"b"}, {"c"}, "x");
  m.Node("Relu", {"c"}, {"d"}, "x");
  absl::StatusOr<GraphSpec> before = OnnxToGraphSpec(m.Bytes(), {});
  ASSERT_TRUE(before.ok()) << before.status();
  NameNodesAsImporter(m.model().mutable_graph());
  for (int i = 0; i < 4; ++i) EXPECT_EQ(m.model().graph().node(i).name(), before->ops[i].name);
  absl::StatusOr<GraphSpec> after = OnnxToGraphSpec(m.Bytes(), {});
  ASSERT_TRUE(after.ok());
  for (int i = 0; i < 4; ++i) EXPECT_EQ(after->ops[i].name, before->ops[i].name);
  EXPECT_EQ(FindNode(m.model().graph(), "x_3"), 3);
  EXPECT_EQ(FindNode(m.model().graph(), "nope"), -1);
}

// A Slice reaches the Conv when it leaves the channel axis whole: its axes
// constant says so, or, stripped of its data, the shapes the model states
// keep the channel count. A Slice along the channel axis ends the site.
TEST(PatternTest, SliceKeepingTheChannelsIsPerChannel) {
  const auto model = [](int64_t axis, bool data, int64_t out_channels) {
    TestModel m = ConcatConv(1);
    onnx::GraphProto* g = m.model().mutable_graph();
    g->mutable_node()->RemoveLast();  // the Conv
    for (const char* name : {"starts", "ends", "axes"}) {
      onnx::TensorProto* t = g->add_initializer();
      t->set_name(name);
      t->set_data_type(onnx::TensorProto::INT64);
      t->add_dims(1);
      if (data) t->add_int64_data(std::string(name) == "axes" ? axis : std::string(name) == "starts" ? 1 : 4);
    }
    m.Node("Slice", {"c", "starts", "ends", "axes"}, {"s"}, "slice");
    m.Node("Conv", {"s", "w"}, {"y"}, "conv");
    for (const auto& [name, dims] : std::vector<std::pair<std::string, std::vector<int64_t>>>{
             {"c", {1, 4, 4, 4}}, {"s", {1, out_channels, 3, 4}}}) {
      onnx::ValueInfoProto* v = g->add_value_info();
      v->set_name(name);
      v->mutable_type()->mutable_tensor_type()->set_elem_type(1);
      for (int64_t d : dims) v->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(d);
    }
    return m;
  };
  const auto sites = [](TestModel m) {
    const onnx::GraphProto& g = m.model().graph();
    return FindConcatConvSites(g, ModelIndex::Build(g)).size();
  };
  EXPECT_EQ(sites(model(2, true, 4)), 1u);
  EXPECT_EQ(sites(model(-2, true, 4)), 1u);
  EXPECT_EQ(sites(model(1, true, 4)), 0u);
  EXPECT_EQ(sites(model(-3, true, 4)), 0u);
  EXPECT_EQ(sites(model(2, false, 4)), 1u);  // stripped: the stated shapes keep 4 channels
  EXPECT_EQ(sites(model(1, false, 3)), 0u);  // stripped: 4 -> 3 channels

  // Steps: a step of -1 keeps the channel count but reverses the channels.
  // Without axes data, only steps known to be positive let the shapes decide.
  const auto with_steps = [&](int64_t step, bool steps_data) {
    TestModel m = model(1, false, 4);
    onnx::GraphProto* g = m.model().mutable_graph();
    onnx::TensorProto* t = g->add_initializer();
    t->set_name("steps");
    t->set_data_type(onnx::TensorProto::INT64);
    t->add_dims(1);
    if (steps_data) t->add_int64_data(step);
    for (onnx::NodeProto& node : *g->mutable_node()) {
      if (node.op_type() == "Slice") node.add_input("steps");
    }
    return m;
  };
  EXPECT_EQ(sites(with_steps(1, true)), 1u);
  EXPECT_EQ(sites(with_steps(-1, true)), 0u);
  // Steps stripped of their data: taken as positive, and the site says so.
  TestModel stripped = with_steps(1, false);
  std::vector<ConcatConvSite> found =
      FindConcatConvSites(stripped.model().graph(), ModelIndex::Build(stripped.model().graph()));
  ASSERT_EQ(found.size(), 1u);
  ASSERT_EQ(found[0].assumptions.size(), 1u);
  EXPECT_THAT(found[0].assumptions[0], HasSubstr("Slice 'slice': its steps have no data"));
  TestModel known = with_steps(1, true);
  found = FindConcatConvSites(known.model().graph(), ModelIndex::Build(known.model().graph()));
  ASSERT_EQ(found.size(), 1u);
  EXPECT_TRUE(found[0].assumptions.empty());
  // Axes as INT32 (a valid index type) are read too.
  TestModel int32_axes = model(1, false, 4);
  for (onnx::TensorProto& t : *int32_axes.model().mutable_graph()->mutable_initializer()) {
    if (t.name() != "axes") continue;
    t.set_data_type(onnx::TensorProto::INT32);
    t.add_int32_data(1);
  }
  EXPECT_EQ(sites(int32_axes), 0u);
  // A negative axis with no stated shapes counts from the rank of the Conv's
  // weight the data reaches (4): -3 is the channel axis, -2 is not.
  for (int64_t axis : {-3, -2}) {
    TestModel unstated = model(axis, true, 4);
    unstated.model().mutable_graph()->clear_value_info();
    EXPECT_EQ(sites(unstated), axis == -2 ? 1u : 0u) << axis;
  }
}

// Opset < 7 broadcasting (broadcast and axis attributes) aligns a constant
// at `axis`, not at the trailing axes: such a Mul is not per-channel.
TEST(PatternTest, LegacyBroadcastIsNotPerChannel) {
  TestModel m = ConcatConv(1);
  onnx::GraphProto* g = m.model().mutable_graph();
  g->mutable_node()->RemoveLast();  // the Conv
  m.Weight("k", {4});
  onnx::NodeProto* mul = m.Node("Mul", {"c", "k"}, {"s"}, "scale");
  TestModel::IntAttr(mul, "broadcast", 1);
  TestModel::IntAttr(mul, "axis", 1);
  m.Node("Conv", {"s", "w"}, {"y"}, "conv");
  EXPECT_TRUE(FindConcatConvSites(*g, ModelIndex::Build(*g)).empty());
}

}  // namespace
}  // namespace serenity
