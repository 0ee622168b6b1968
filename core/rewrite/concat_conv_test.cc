#include "core/rewrite/concat_conv.h"

#include <optional>

#include "absl/container/flat_hash_set.h"
#include "core/graph/graph.h"
#include "core/memory/buffer_model.h"
#include "core/memory/simulator.h"
#include "core/onnx/onnx_import.h"
#include "core/rewrite/test_model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace serenity {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::vector<std::string> NodeNames(const onnx::ModelProto& model) {
  std::vector<std::string> names;
  for (const onnx::NodeProto& n : model.graph().node()) names.push_back(n.name());
  return names;
}

const onnx::TensorProto* Init(const onnx::ModelProto& model, const std::string& name) {
  for (const onnx::TensorProto& t : model.graph().initializer()) {
    if (t.name() == name) return &t;
  }
  return nullptr;
}

// k inputs x_i = Relu(in_i) of c[i] channels, concatenated, into a Conv
// with `out` channels and `group`.
TestModel Site(const std::vector<int64_t>& c, int64_t out, int64_t group, bool bias, bool data = true) {
  TestModel m;
  int64_t total = 0;
  for (int64_t n : c) total += n;
  m.Weight("w", {out, total / group, 3, 3}, data).Output("y");
  if (bias) m.Weight("b", {out}, data);
  std::vector<std::string> xs;
  for (size_t i = 0; i < c.size(); ++i) {
    const std::string in = "in" + std::to_string(i), x = "x" + std::to_string(i);
    m.Input(in, {1, c[i], 6, 6});
    m.Node("Relu", {in}, {x}, "relu" + std::to_string(i));
    xs.push_back(x);
  }
  TestModel::IntAttr(m.Node("Concat", xs, {"c"}, "cat"), "axis", 1);
  std::vector<std::string> conv_in = {"c", "w"};
  if (bias) conv_in.push_back("b");
  onnx::NodeProto* conv = m.Node("Conv", conv_in, {"y"}, "conv");
  TestModel::IntAttr(conv, "group", group);
  onnx::AttributeProto* pads = conv->add_attribute();
  pads->set_name("pads");
  pads->set_type(onnx::AttributeProto::INTS);
  for (int i = 0; i < 4; ++i) pads->add_ints(1);
  return m;
}

ConcatConvSite OnlySite(const onnx::ModelProto& model) {
  std::vector<ConcatConvSite> sites = FindConcatConvSites(model.graph(), ModelIndex::Build(model.graph()));
  EXPECT_EQ(sites.size(), 1u);
  return sites.empty() ? ConcatConvSite{} : sites[0];
}

TEST(SliceInitializerTest, SlicesFloatDataAlongAxisOne) {
  TestModel m;
  m.Weight("w", {2, 3, 2});  // values 0..11
  const onnx::TensorProto& w = m.model().graph().initializer(0);
  absl::StatusOr<onnx::TensorProto> s = SliceInitializer(w, 1, 1, 3, "s");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_THAT(s->dims(), ElementsAre(2, 2, 2));
  EXPECT_THAT(s->float_data(), ElementsAre(2, 3, 4, 5, 8, 9, 10, 11));
  EXPECT_EQ(s->name(), "s");
}

TEST(SliceInitializerTest, SlicesRawDataByElementSizeAlongAxisZero) {
  onnx::TensorProto w;
  w.set_name("w");
  w.set_data_type(onnx::TensorProto::INT16);
  w.add_dims(3);
  w.add_dims(2);
  w.set_raw_data(std::string("aabbccddeeff"));
  absl::StatusOr<onnx::TensorProto> s = SliceInitializer(w, 0, 1, 2, "s");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->raw_data(), "ccdd");
  w.set_raw_data("short");
  EXPECT_EQ(SliceInitializer(w, 0, 1, 2, "s").status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(SliceInitializerTest, StrippedAndExternalWeightsGiveDimsOnly) {
  onnx::TensorProto w;
  w.set_name("w");
  w.set_data_type(1);
  w.add_dims(4);
  w.add_dims(6);
  absl::StatusOr<onnx::TensorProto> s = SliceInitializer(w, 1, 2, 5, "s");
  ASSERT_TRUE(s.ok());
  EXPECT_THAT(s->dims(), ElementsAre(4, 3));
  EXPECT_EQ(s->float_data_size() + s->raw_data().size(), 0u);
  w.set_data_location(onnx::TensorProto::EXTERNAL);
  w.add_external_data()->set_key("location");
  s = SliceInitializer(w, 1, 2, 5, "s");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->external_data_size(), 0);
  EXPECT_FALSE(SliceInitializer(w, 1, 4, 7, "s").ok());
}

// Huge dims cost nothing without data, and data that does not match them
// is refused before anything the size of the dims is made.
TEST(SliceInitializerTest, HugeDimsWithoutDataOrWithTooLittle) {
  onnx::TensorProto w;
  w.set_name("w");
  w.set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : {int64_t{1} << 32, int64_t{8}, int64_t{1}, int64_t{1}}) w.add_dims(d);
  absl::StatusOr<onnx::TensorProto> s = SliceInitializer(w, 1, 2, 5, "s");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_THAT(s->dims(), ElementsAre(int64_t{1} << 32, 3, 1, 1));
  w.add_float_data(1);
  EXPECT_EQ(SliceInitializer(w, 1, 2, 5, "s").status().code(), absl::StatusCode::kFailedPrecondition);
  w.clear_float_data();
  w.set_raw_data(std::string(4, '\0'));
  EXPECT_EQ(SliceInitializer(w, 1, 2, 5, "s").status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(ConcatConvTest, StandardFormPartialConvsAndAddChain) {
  TestModel m = Site({2, 3, 1}, 4, 1, /*bias=*/true);
  absl::StatusOr<RewriteSite> done = ApplyConcatConv(&m.model(), OnlySite(m.model()), {2, 3, 1});
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_EQ(done->form, "conv_sum");
  EXPECT_THAT(done->new_ops, ElementsAre("conv/part0", "conv/part1", "conv/sum1", "conv/part2", "conv/sum2"));
  EXPECT_THAT(NodeNames(m.model()), ElementsAre("relu0", "relu1", "relu2", "conv/part0", "conv/part1", "conv/sum1",
                                                "conv/part2", "conv/sum2"));
  const onnx::GraphProto& g = m.model().graph();
  // part0 carries the bias; the last Add writes y.
  EXPECT_THAT(g.node(3).input(), ElementsAre("x0", "w/conv/part0", "b"));
  EXPECT_THAT(g.node(4).input(), ElementsAre("x1", "w/conv/part1"));
  EXPECT_THAT(g.node(5).input(), ElementsAre("conv/part0", "conv/part1"));
  EXPECT_THAT(g.node(7).input(), ElementsAre("conv/sum1", "conv/part2"));
  EXPECT_EQ(g.node(7).output(0), "y");
  ASSERT_EQ(g.node(3).attribute_size(), 1);  // pads copied; group 1 is the default
  EXPECT_EQ(g.node(3).attribute(0).name(), "pads");
  // Input-channel slices [0,2), [2,5), [5,6) of a [4, 6, 3, 3] weight.
  ASSERT_EQ(done->weight_slices.size(), 3u);
  EXPECT_EQ(done->weight_slices[1].begin, 2);
  EXPECT_EQ(done->weight_slices[1].end, 5);
  EXPECT_EQ(done->weight_slices[1].axis, 1);
  EXPECT_EQ(Init(m.model(), "w"), nullptr);
  const onnx::TensorProto* w1 = Init(m.model(), "w/conv/part1");
  ASSERT_NE(w1, nullptr);
  EXPECT_THAT(w1->dims(), ElementsAre(4, 3, 3, 3));
  EXPECT_EQ(w1->float_data(0), 18);          // W[0, 2, 0, 0]
  EXPECT_EQ(w1->float_data(27), 54 + 18);    // W[1, 2, 0, 0]
  EXPECT_NE(Init(m.model(), "b"), nullptr);  // unsliced
  // The result imports, with y's shape unchanged.
  absl::StatusOr<Graph> g2 = ImportOnnxModel(m.Bytes(), {});
  ASSERT_TRUE(g2.ok()) << g2.status();
  EXPECT_EQ(g2->tensor(*g2->FindTensor("y")).shape, (std::vector<int64_t>{1, 4, 6, 6}));
}

TEST(ConcatConvTest, GroupedConvSplitsAlongWholeGroups) {
  // group 4 over 8 channels: 2 per group; inputs of 4 and 4 channels.
  TestModel m = Site({4, 2, 2}, 8, 4, /*bias=*/true);
  absl::StatusOr<RewriteSite> done = ApplyConcatConv(&m.model(), OnlySite(m.model()), {4, 2, 2});
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_EQ(done->form, "group_concat");
  EXPECT_THAT(done->new_ops, ElementsAre("conv/part0", "conv/part1", "conv/part2", "conv/concat"));
  // Output-channel slices of W and b: groups [0,2) -> channels [0,4), ...
  ASSERT_EQ(done->weight_slices.size(), 6u);
  EXPECT_EQ(done->weight_slices[0].axis, 0);
  EXPECT_EQ(done->weight_slices[0].end, 4);
  EXPECT_EQ(done->weight_slices[2].begin, 4);
  EXPECT_EQ(done->weight_slices[2].end, 6);
  EXPECT_EQ(Init(m.model(), "b/conv/part2")->float_data(0), 6);
  absl::StatusOr<Graph> g = ImportOnnxModel(m.Bytes(), {});
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->tensor(*g->FindTensor("y")).shape, (std::vector<int64_t>{1, 8, 6, 6}));
}

TEST(ConcatConvTest, SkipsPartialGroupsLeavingTheModelAlone) {
  TestModel m = Site({3, 5}, 8, 4, false);
  const std::string before = m.Bytes();
  absl::StatusOr<RewriteSite> done = ApplyConcatConv(&m.model(), OnlySite(m.model()), {3, 5});
  EXPECT_EQ(done.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(done.status().message(), HasSubstr("part of a group"));
  EXPECT_EQ(m.Bytes(), before);
  TestModel wrong = Site({2, 2}, 4, 1, false);
  EXPECT_EQ(ApplyConcatConv(&wrong.model(), OnlySite(wrong.model()), {2, 3}).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

// A depthwise Conv (group = channels) is the kernel-wise partition: each
// input meets its own kernels (and multiplier outputs) only.
TEST(ConcatConvTest, DepthwiseConvSplitsKernelWise) {
  TestModel m = Site({3, 5}, 16, 8, /*bias=*/true);  // multiplier 2
  absl::StatusOr<RewriteSite> done = ApplyConcatConv(&m.model(), OnlySite(m.model()), {3, 5});
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_EQ(done->form, "kernel_wise");
  EXPECT_THAT(done->new_ops, ElementsAre("conv/part0", "conv/part1", "conv/concat"));
  const onnx::GraphProto& g = m.model().graph();
  EXPECT_EQ(IntAttribute(g.node(2), "group", 0), 3);
  EXPECT_EQ(IntAttribute(g.node(3), "group", 0), 5);
  EXPECT_THAT(Init(m.model(), "w/conv/part1")->dims(), ElementsAre(10, 1, 3, 3));
  EXPECT_EQ(Init(m.model(), "w/conv/part1")->float_data(0), 6 * 9);  // kernel 6: channel 3, first of two
  EXPECT_EQ(Init(m.model(), "b/conv/part1")->float_data(0), 6);
  absl::StatusOr<Graph> imported = ImportOnnxModel(m.Bytes(), {});
  ASSERT_TRUE(imported.ok()) << imported.status();
  EXPECT_EQ(imported->tensor(*imported->FindTensor("y")).shape, (std::vector<int64_t>{1, 16, 6, 6}));
}

// Concat -> BatchNormalization -> Relu -> {Conv, Conv}: the two per-channel
// ops are copied per input with their parameters sliced, both Convs split.
TEST(ConcatConvTest, PushesPerChannelOpsThroughToEveryConv) {
  TestModel m = Site({2, 3}, 4, 1, /*bias=*/false);
  onnx::GraphProto* g = m.model().mutable_graph();
  g->mutable_node()->RemoveLast();  // the Conv
  for (const char* p : {"scale", "shift", "mean", "var"}) m.Weight(p, {5});
  m.Weight("w2", {6, 5, 1, 1}).Weight("k", {1, 1, 1, 1}).Output("y2");
  m.Node("BatchNormalization", {"c", "scale", "shift", "mean", "var"}, {"n"}, "bn");
  m.Node("Mul", {"n", "k"}, {"m"}, "mul");  // one value for every channel: kept whole
  m.Node("Relu", {"m"}, {"r"}, "relu");
  m.Node("Conv", {"r", "w"}, {"y"}, "conv");
  m.Node("Conv", {"r", "w2"}, {"y2"}, "conv2");
  absl::StatusOr<RewriteSite> done = ApplyConcatConv(&m.model(), OnlySite(m.model()), {2, 3});
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_THAT(done->pushed, ElementsAre("bn", "mul", "relu"));
  ASSERT_EQ(done->splits.size(), 2u);
  EXPECT_EQ(done->splits[1].conv, "conv2");
  EXPECT_THAT(NodeNames(m.model()), ElementsAre("relu0", "relu1", "bn/part0", "bn/part1", "mul/part0", "mul/part1",
                                                "relu/part0", "relu/part1", "conv/part0", "conv/part1", "conv/sum1",
                                                "conv2/part0", "conv2/part1", "conv2/sum1"));
  const onnx::GraphProto& out = m.model().graph();
  EXPECT_THAT(out.node(3).input(),
              ElementsAre("x1", "scale/bn/part1", "shift/bn/part1", "mean/bn/part1", "var/bn/part1"));
  EXPECT_THAT(out.node(5).input(), ElementsAre("n/part1", "k"));
  EXPECT_THAT(out.node(9).input(), ElementsAre("r/part1", "w/conv/part1"));
  EXPECT_THAT(Init(m.model(), "scale/bn/part1")->float_data(), ElementsAre(2, 3, 4));
  EXPECT_EQ(Init(m.model(), "scale"), nullptr);
  EXPECT_NE(Init(m.model(), "k"), nullptr);
  absl::StatusOr<Graph> imported = ImportOnnxModel(m.Bytes(), {});
  ASSERT_TRUE(imported.ok()) << imported.status();
  EXPECT_EQ(imported->tensor(*imported->FindTensor("y2")).shape, (std::vector<int64_t>{1, 6, 6, 6}));

  // A constant with another channel count is refused, the model unchanged.
  TestModel bad = Site({2, 3}, 4, 1, false);
  bad.model().mutable_graph()->mutable_node()->RemoveLast();
  bad.Weight("k", {1, 4, 1, 1});
  bad.Node("Mul", {"c", "k"}, {"m"}, "mul");
  bad.Node("Conv", {"m", "w"}, {"y"}, "conv");
  const std::string before = bad.Bytes();
  done = ApplyConcatConv(&bad.model(), OnlySite(bad.model()), {2, 3});
  EXPECT_EQ(done.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(done.status().message(), HasSubstr("4 values along the channel axis, not 5"));
  EXPECT_EQ(bad.Bytes(), before);
}

// A constant made by a Constant node after the Concat (as exporters place
// them, just before their reader): each copy of the op goes where the op
// was, so the nodes stay topologically sorted, as ONNX requires.
TEST(ConcatConvTest, PushedCopiesStayAfterTheirConstants) {
  TestModel m = Site({2, 3}, 4, 1, /*bias=*/false);
  onnx::GraphProto* g = m.model().mutable_graph();
  g->mutable_node()->RemoveLast();  // the Conv
  onnx::NodeProto* constant = m.Node("Constant", {}, {"k"}, "k_const");
  onnx::AttributeProto* value = constant->add_attribute();
  value->set_name("value");
  value->set_type(onnx::AttributeProto::TENSOR);
  value->mutable_t()->set_data_type(1);
  for (int64_t d : {5, 1, 1}) value->mutable_t()->add_dims(d);
  for (int i = 0; i < 5; ++i) value->mutable_t()->add_float_data(static_cast<float>(i));
  m.Node("Mul", {"c", "k"}, {"s"}, "scale");
  m.Node("Conv", {"s", "w"}, {"y"}, "conv");
  absl::StatusOr<RewriteSite> done = ApplyConcatConv(&m.model(), OnlySite(m.model()), {2, 3});
  ASSERT_TRUE(done.ok()) << done.status();
  absl::flat_hash_set<std::string> made;
  for (const onnx::ValueInfoProto& v : m.model().graph().input()) made.insert(v.name());
  for (const onnx::TensorProto& t : m.model().graph().initializer()) made.insert(t.name());
  for (const onnx::NodeProto& node : m.model().graph().node()) {
    for (const std::string& in : node.input()) EXPECT_TRUE(made.contains(in)) << node.name() << " reads " << in;
    made.insert(node.output().begin(), node.output().end());
  }
  // The per-channel constant [5, 1, 1] is sliced per input: k/scale/part1 holds 2, 3, 4.
  EXPECT_THAT(Init(m.model(), "k/scale/part1")->float_data(), ElementsAre(2, 3, 4));
  // The Constant node, read by nothing now, is gone.
  EXPECT_EQ(FindNode(m.model().graph(), "k_const"), -1);
}

// IR versions below 4 list initializers as graph inputs, and shape
// inference reads only those: the slices are listed too, also when the
// original weight stays (another Conv reads it). Two Convs of a site that
// share a weight share its slices.
TEST(ConcatConvTest, OldIrVersionsListTheSlicesAsInputs) {
  TestModel m = Site({2, 3}, 4, 1, /*bias=*/false);
  m.model().set_ir_version(3);
  onnx::GraphProto* g = m.model().mutable_graph();
  g->mutable_node()->RemoveLast();  // the Conv
  m.Node("Relu", {"c"}, {"r"}, "relu");
  m.Node("Conv", {"r", "w"}, {"y"}, "conv");
  m.Node("Conv", {"r", "w"}, {"y2"}, "conv2");
  m.Input("other", {1, 5, 6, 6});
  m.Node("Conv", {"other", "w"}, {"y3"}, "outside");
  m.Output("y2").Output("y3");
  for (const onnx::TensorProto& t : std::vector<onnx::TensorProto>(g->initializer().begin(), g->initializer().end())) {
    m.Input(t.name(), std::vector<int64_t>(t.dims().begin(), t.dims().end()));  // as IR 3 lists them
  }
  absl::StatusOr<RewriteSite> done = ApplyConcatConv(&m.model(), OnlySite(m.model()), {2, 3});
  ASSERT_TRUE(done.ok()) << done.status();
  ASSERT_EQ(done->splits.size(), 2u);
  EXPECT_EQ(done->weight_slices.size(), 2u);  // w's two slices, shared by conv and conv2
  EXPECT_NE(Init(m.model(), "w"), nullptr);   // "outside" still reads it
  for (const WeightSlice& slice : done->weight_slices) {
    bool listed = false;
    for (const onnx::ValueInfoProto& v : m.model().graph().input()) listed |= v.name() == slice.name;
    EXPECT_TRUE(listed) << slice.name;
  }
  absl::StatusOr<Graph> imported = ImportOnnxModel(m.Bytes(), {});
  ASSERT_TRUE(imported.ok()) << imported.status();
}

TEST(ConcatConvTest, KeepsASharedWeightAndAvoidsTakenNames) {
  TestModel m = Site({2, 2}, 4, 1, false);
  m.Input("in_other", {1, 4, 6, 6});
  m.Node("Conv", {"in_other", "w"}, {"conv/part0"}, "other");  // reads w; takes a new op's tensor name
  m.Output("conv/part0");
  absl::StatusOr<RewriteSite> done = ApplyConcatConv(&m.model(), OnlySite(m.model()), {2, 2});
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_NE(Init(m.model(), "w"), nullptr);  // still read by "other"
  EXPECT_EQ(done->new_ops[0], "conv/part0_1");
  EXPECT_TRUE(ImportOnnxModel(m.Bytes(), {}).ok());
}

TEST(ConcatConvTest, StrippedWeightsGiveDimsOnlySlicesThatPlan) {
  TestModel m = Site({2, 2}, 4, 1, false, /*data=*/false);
  ASSERT_TRUE(ApplyConcatConv(&m.model(), OnlySite(m.model()), {2, 2}).ok());
  EXPECT_THAT(Init(m.model(), "w/conv/part1")->dims(), ElementsAre(4, 2, 3, 3));
  EXPECT_TRUE(ImportOnnxModel(m.Bytes(), {}).ok());
}

TEST(ConcatConvTest, ApplyRecipeReproducesTheRewriteOnTheFullModel) {
  TestModel stripped = Site({2, 3}, 4, 1, true, /*data=*/false);
  TestModel full = Site({2, 3}, 4, 1, true, /*data=*/true);
  absl::StatusOr<RewriteSite> done = ApplyConcatConv(&stripped.model(), OnlySite(stripped.model()), {2, 3});
  ASSERT_TRUE(done.ok());
  RewriteRecipe recipe{{*done}};
  absl::StatusOr<std::string> applied = ApplyRecipe(full.Bytes(), recipe);
  ASSERT_TRUE(applied.ok()) << applied.status();
  onnx::ModelProto out;
  ASSERT_TRUE(out.ParseFromString(*applied));
  EXPECT_EQ(NodeNames(out), NodeNames(stripped.model()));
  EXPECT_EQ(Init(out, "w/conv/part1")->float_data_size(), 4 * 3 * 9);
  // A chain in another order than the Concat's replays as recorded, in
  // both forms.
  for (RewriteForm form : {RewriteForm::kStandard, RewriteForm::kAccumulate}) {
    TestModel reordered = Site({2, 3, 4}, 4, 1, true, /*data=*/false);
    absl::StatusOr<RewriteSite> chained =
        ApplyConcatConv(&reordered.model(), OnlySite(reordered.model()), {2, 3, 4}, form, {2, 0, 1});
    ASSERT_TRUE(chained.ok()) << chained.status();
    absl::StatusOr<std::string> replayed =
        ApplyRecipe(Site({2, 3, 4}, 4, 1, true, /*data=*/true).Bytes(), RewriteRecipe{{*chained}});
    ASSERT_TRUE(replayed.ok()) << replayed.status();
    onnx::ModelProto replayed_model;
    ASSERT_TRUE(replayed_model.ParseFromString(*replayed));
    EXPECT_EQ(NodeNames(replayed_model), NodeNames(reordered.model()));
  }
  recipe.sites[0].splits[0].conv = "other";
  EXPECT_THAT(ApplyRecipe(full.Bytes(), recipe).status().message(), HasSubstr("does not match"));
}

// The Figure 9 model: x_i = Relu(v_i) of c[i] channels (the v_i are
// weights, not counted), concatenated into a Conv with `out` channels and
// `group`. Returns the model and the order that makes each x_i just before
// its partial: relu0, part0, [relu1, part1, sum1 / ...], ...
TestModel Figure9Model(const std::vector<int64_t>& c, int64_t out, int64_t group) {
  TestModel m;
  int64_t total = 0;
  for (int64_t n : c) total += n;
  m.Weight("w", {out, total / group, 1, 1}, false).Output("y");
  std::vector<std::string> xs;
  for (size_t i = 0; i < c.size(); ++i) {
    const std::string v = "v" + std::to_string(i), x = "x" + std::to_string(i);
    m.Weight(v, {1, c[i], 5, 5}, false);
    m.Node("Relu", {v}, {x}, "relu" + std::to_string(i));
    xs.push_back(x);
  }
  TestModel::IntAttr(m.Node("Concat", xs, {"c"}, "cat"), "axis", 1);
  TestModel::IntAttr(m.Node("Conv", {"c", "w"}, {"y"}, "conv"), "group", group);
  return m;
}

// The order that makes each x_i (Relu "relu<i>") just before its partial
// "conv/part<i>", then "conv/sum<i>" when the graph has it, then
// "conv/concat" when it has it; `part_step[i]` is the step of part i.
std::vector<OpId> PartialOrder(const Graph& g, size_t k, std::vector<int>* part_step) {
  std::vector<OpId> order;
  part_step->assign(k, 0);
  for (size_t i = 0; i < k; ++i) {
    order.push_back(*g.FindOp("relu" + std::to_string(i)));
    (*part_step)[i] = static_cast<int>(order.size());
    order.push_back(*g.FindOp("conv/part" + std::to_string(i)));
    if (std::optional<OpId> sum = g.FindOp("conv/sum" + std::to_string(i)); sum.has_value()) order.push_back(*sum);
  }
  if (std::optional<OpId> join = g.FindOp("conv/concat"); join.has_value()) order.push_back(*join);
  return order;
}

// A recipe made on a stripped model, whose Slice steps have no data (taken
// as positive, listed in assumptions), is refused on the model with its
// data when a step there reverses the channels; accepted when it does not.
TEST(ConcatConvTest, ApplyRecipeChecksAStrippedSliceAgainstTheData) {
  const auto model = [](std::optional<int64_t> step) {
    TestModel m = Site({2, 3}, 4, 1, /*bias=*/false);
    onnx::GraphProto* g = m.model().mutable_graph();
    g->mutable_node()->RemoveLast();  // the Conv
    for (const char* name : {"starts", "ends", "steps"}) {
      onnx::TensorProto* t = g->add_initializer();
      t->set_name(name);
      t->set_data_type(onnx::TensorProto::INT64);
      for (int64_t d : {4}) t->add_dims(d);
      if (std::string(name) == "steps") {
        if (step.has_value()) {
          for (int64_t v : {int64_t{1}, *step, int64_t{1}, int64_t{1}}) t->add_int64_data(v);
        }
      } else {
        for (int i = 0; i < 4; ++i) t->add_int64_data(std::string(name) == "starts" ? 0 : 1000);
      }
    }
    m.Node("Slice", {"c", "starts", "ends", "", "steps"}, {"s"}, "slice");
    m.Node("Conv", {"s", "w"}, {"y"}, "conv");
    for (const char* name : {"c", "s"}) {
      onnx::ValueInfoProto* v = g->add_value_info();
      v->set_name(name);
      v->mutable_type()->mutable_tensor_type()->set_elem_type(1);
      for (int64_t d : {1, 5, 6, 6})
        v->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(d);
    }
    return m;
  };
  TestModel stripped = model(std::nullopt);
  absl::StatusOr<RewriteSite> done = ApplyConcatConv(&stripped.model(), OnlySite(stripped.model()), {2, 3});
  ASSERT_TRUE(done.ok()) << done.status();
  ASSERT_EQ(done->assumptions.size(), 1u);
  const RewriteRecipe recipe{{*done}};
  EXPECT_TRUE(ApplyRecipe(model(1).Bytes(), recipe).ok());
  absl::StatusOr<std::string> reversed = ApplyRecipe(model(-1).Bytes(), recipe);
  EXPECT_EQ(reversed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(reversed.status().message(), HasSubstr("does not match"));
}

// Figure 9's footprints, standard form: before, the Conv holds
// sum(size(x_i)) + size(y); after, each partial step i >= 1 holds size(x_i)
// (its input) + size(y) (its output) + size(y) (the running sum). The x_i
// are made from weights (not counted), so nothing else is live.
TEST(ConcatConvTest, Figure9FootprintsOfTheStandardForm) {
  const std::vector<int64_t> c = {3, 5, 2, 4};
  TestModel m = Figure9Model(c, 6, 1);
  const int64_t y = 6 * 25 * 4;
  auto x = [&](int i) { return c[i] * 25 * 4; };

  absl::StatusOr<Graph> before = ImportOnnxModel(m.Bytes(), {});
  ASSERT_TRUE(before.ok());
  absl::StatusOr<MemoryProfile> p = Simulate(BufferModel(*before, {}), {0, 1, 2, 3, 4, 5});
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->step_bytes[5], x(0) + x(1) + x(2) + x(3) + y);

  ASSERT_TRUE(ApplyConcatConv(&m.model(), OnlySite(m.model()), c).ok());
  absl::StatusOr<Graph> after = ImportOnnxModel(m.Bytes(), {});
  ASSERT_TRUE(after.ok());
  // Each x_i made just before its partial: relu0 part0 relu1 part1 sum1 ...
  std::vector<int> part_step;
  const std::vector<OpId> order = PartialOrder(*after, c.size(), &part_step);
  p = Simulate(BufferModel(*after, {}), order);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->step_bytes[part_step[0]], x(0) + y);  // no running sum yet
  for (size_t i = 1; i < c.size(); ++i) EXPECT_EQ(p->step_bytes[part_step[i]], x(i) + 2 * y) << i;
}

// Accumulate form: each partial step i >= 1 holds size(x_i) + size(y): the
// ConvAccumulate writes into the running sum's buffer.
TEST(ConcatConvTest, Figure9FootprintsOfTheAccumulateForm) {
  const std::vector<int64_t> c = {3, 5, 2, 4};
  TestModel m = Figure9Model(c, 6, 1);
  const int64_t y = 6 * 25 * 4;
  auto x = [&](int i) { return c[i] * 25 * 4; };
  absl::StatusOr<RewriteSite> done = ApplyConcatConv(&m.model(), OnlySite(m.model()), c, RewriteForm::kAccumulate);
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_EQ(done->form, "conv_accumulate");
  EXPECT_THAT(done->new_ops, ElementsAre("conv/part0", "conv/part1", "conv/part2", "conv/part3"));
  const onnx::GraphProto& g = m.model().graph();
  EXPECT_EQ(g.node(4).op_type(), "Conv");
  EXPECT_EQ(g.node(5).op_type(), "ConvAccumulate");
  EXPECT_EQ(g.node(5).domain(), "serenity");
  EXPECT_THAT(g.node(5).input(), ElementsAre("x1", "w/conv/part1", "conv/part0"));
  EXPECT_EQ(g.node(7).output(0), "y");
  EXPECT_EQ(m.model().opset_import(m.model().opset_import_size() - 1).domain(), "serenity");
  absl::StatusOr<Graph> after = ImportOnnxModel(m.Bytes(), {});
  ASSERT_TRUE(after.ok()) << after.status();
  std::vector<int> part_step;
  const std::vector<OpId> order = PartialOrder(*after, c.size(), &part_step);
  absl::StatusOr<MemoryProfile> p = Simulate(BufferModel(*after, {}), order);
  ASSERT_TRUE(p.ok()) << p.status();
  for (size_t i = 0; i < c.size(); ++i) EXPECT_EQ(p->step_bytes[part_step[i]], x(i) + y) << i;
}

// Concat -> depthwise Conv, kernel-wise: before, the Conv holds
// sum(size(x_i)) + size(y); after, partial i holds size(x_i) + size(y_i),
// with the y_j already made live until the joining Concat.
TEST(ConcatConvTest, Figure9FootprintsOfTheKernelWisePartition) {
  const std::vector<int64_t> c = {3, 5, 2, 4};
  TestModel m = Figure9Model(c, 14, 14);
  auto x = [&](int i) { return c[i] * 25 * 4; };  // y_i = x_i in size (multiplier 1)
  absl::StatusOr<Graph> before = ImportOnnxModel(m.Bytes(), {});
  ASSERT_TRUE(before.ok());
  absl::StatusOr<MemoryProfile> p = Simulate(BufferModel(*before, {}), {0, 1, 2, 3, 4, 5});
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->step_bytes[5], x(0) + x(1) + x(2) + x(3) + 14 * 25 * 4);

  absl::StatusOr<RewriteSite> done = ApplyConcatConv(&m.model(), OnlySite(m.model()), c);
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_EQ(done->form, "kernel_wise");
  absl::StatusOr<Graph> after = ImportOnnxModel(m.Bytes(), {});
  ASSERT_TRUE(after.ok()) << after.status();
  std::vector<int> part_step;
  const std::vector<OpId> order = PartialOrder(*after, c.size(), &part_step);
  p = Simulate(BufferModel(*after, {}), order);
  ASSERT_TRUE(p.ok()) << p.status();
  int64_t made = 0;  // the y_j before partial i
  for (size_t i = 0; i < c.size(); ++i) {
    EXPECT_EQ(p->step_bytes[part_step[i]], made + x(i) + x(i)) << i;
    made += x(i);
  }
  // The join copies the y_i into y: both live at its step. With Concats in
  // place the partials write straight into their slices of y, and the join
  // costs nothing more.
  const int64_t y = 14 * 25 * 4;
  EXPECT_EQ(p->step_bytes.back(), 2 * y);
  MemoryModel in_place;
  in_place.concat_in_place = true;
  p = Simulate(BufferModel(*after, in_place), order);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->step_bytes.back(), y);
}

// OnnxModelToGraphSpecFrom (onnx_import.h) imports a rewritten model from
// the import of the model it came from: the same spec as a full import.
void ExpectSameSpecs(const GraphSpec& a, const GraphSpec& b) {
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.inputs, b.inputs);
  EXPECT_EQ(a.outputs, b.outputs);
  ASSERT_EQ(a.tensors.size(), b.tensors.size());
  for (size_t i = 0; i < a.tensors.size(); ++i) {
    EXPECT_EQ(a.tensors[i].name, b.tensors[i].name);
    EXPECT_EQ(a.tensors[i].shape, b.tensors[i].shape) << a.tensors[i].name;
    EXPECT_EQ(a.tensors[i].dtype, b.tensors[i].dtype) << a.tensors[i].name;
    EXPECT_EQ(a.tensors[i].bytes, b.tensors[i].bytes) << a.tensors[i].name;
    EXPECT_EQ(a.tensors[i].is_weight, b.tensors[i].is_weight) << a.tensors[i].name;
    EXPECT_EQ(a.tensors[i].has_bytes, b.tensors[i].has_bytes) << a.tensors[i].name;
  }
  ASSERT_EQ(a.ops.size(), b.ops.size());
  for (size_t i = 0; i < a.ops.size(); ++i) {
    EXPECT_EQ(a.ops[i].name, b.ops[i].name);
    EXPECT_EQ(a.ops[i].type, b.ops[i].type);
    EXPECT_EQ(a.ops[i].inputs, b.ops[i].inputs);
    EXPECT_EQ(a.ops[i].outputs, b.ops[i].outputs);
    EXPECT_EQ(a.ops[i].macs, b.ops[i].macs) << a.ops[i].name;
    EXPECT_EQ(a.ops[i].workspace_bytes, b.ops[i].workspace_bytes);
  }
}

TEST(ConcatConvTest, ImportFromTheUnrewrittenGraphGivesTheFullImport) {
  // A site with per-channel ops pushed through and two Convs, rewritten in
  // both forms; a grouped Conv; and a depthwise one.
  const auto pushed = [] {
    TestModel m = Site({2, 3}, 4, 1, /*bias=*/true);
    m.model().mutable_graph()->mutable_node()->RemoveLast();
    for (const char* p : {"scale", "shift", "mean", "var"}) m.Weight(p, {5});
    m.Weight("w2", {6, 5, 1, 1}).Output("y2");
    m.Node("BatchNormalization", {"c", "scale", "shift", "mean", "var"}, {"n"}, "bn");
    m.Node("Relu", {"n"}, {"r"}, "relu");
    m.Node("Conv", {"r", "w", "b"}, {"y"}, "conv");
    m.Node("Conv", {"r", "w2"}, {"y2"}, "conv2");
    return m;
  };
  struct Case {
    TestModel model;
    std::vector<int64_t> channels;
    RewriteForm form;
  };
  std::vector<Case> cases;
  cases.push_back({pushed(), {2, 3}, RewriteForm::kStandard});
  cases.push_back({pushed(), {2, 3}, RewriteForm::kAccumulate});
  cases.push_back({Site({2, 4, 2}, 4, 4, /*bias=*/true), {2, 4, 2}, RewriteForm::kStandard});
  cases.push_back({Site({2, 3}, 5, 5, /*bias=*/false), {2, 3}, RewriteForm::kStandard});
  for (Case& c : cases) {
    OnnxImportOptions options;
    options.workspace_bytes["relu0"] = 64;
    absl::StatusOr<Graph> base = ImportOnnxModel(c.model.Bytes(), options);
    ASSERT_TRUE(base.ok()) << base.status();
    ASSERT_TRUE(ApplyConcatConv(&c.model.model(), OnlySite(c.model.model()), c.channels, c.form).ok());
    absl::StatusOr<GraphSpec> full = OnnxModelToGraphSpec(c.model.model(), options);
    absl::StatusOr<GraphSpec> from = OnnxModelToGraphSpecFrom(c.model.model(), options, *base);
    ASSERT_TRUE(full.ok()) << full.status();
    ASSERT_TRUE(from.ok()) << from.status();
    ExpectSameSpecs(*from, *full);
  }
}

TEST(ConcatConvTest, ImportFromTheUnrewrittenGraphInfersOnlyTheNewNodes) {
  // Unchanged nodes take the types of the base import (here, on purpose,
  // of a model with another input size: that shows they were not
  // inferred again), the new nodes are inferred from them.
  TestModel small = Site({2, 3}, 4, 1, /*bias=*/false);
  absl::StatusOr<Graph> base = ImportOnnxModel(small.Bytes(), {});
  ASSERT_TRUE(base.ok()) << base.status();
  TestModel large = Site({2, 3}, 4, 1, /*bias=*/false);
  for (onnx::ValueInfoProto& in : *large.model().mutable_graph()->mutable_input()) {
    in.mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(2)->set_dim_value(8);
  }
  ASSERT_TRUE(ApplyConcatConv(&large.model(), OnlySite(large.model()), {2, 3}).ok());
  absl::StatusOr<GraphSpec> from = OnnxModelToGraphSpecFrom(large.model(), {}, *base);
  ASSERT_TRUE(from.ok()) << from.status();
  absl::StatusOr<Graph> graph = Graph::Build(*std::move(from));
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(graph->tensor(*graph->FindTensor("x0")).shape, (std::vector<int64_t>{1, 2, 6, 6}));
  EXPECT_EQ(graph->tensor(*graph->FindTensor("conv/part1")).shape, (std::vector<int64_t>{1, 4, 6, 6}));
  // The full import infers every node from the stated 8 rows.
  absl::StatusOr<GraphSpec> full = OnnxModelToGraphSpec(large.model(), {});
  ASSERT_TRUE(full.ok()) << full.status();
  absl::StatusOr<Graph> full_graph = Graph::Build(*std::move(full));
  ASSERT_TRUE(full_graph.ok()) << full_graph.status();
  EXPECT_EQ(full_graph->tensor(*full_graph->FindTensor("conv/part1")).shape, (std::vector<int64_t>{1, 4, 8, 6}));
}

TEST(ConcatConvTest, ImportFromTheUnrewrittenGraphFailsAsTheFullImport) {
  // A new node that does not infer (a partial weight of rank 2, which
  // the importer refuses): the error of the full import.
  TestModel m = Site({2, 3}, 4, 1, /*bias=*/false);
  absl::StatusOr<Graph> base = ImportOnnxModel(m.Bytes(), {});
  ASSERT_TRUE(base.ok()) << base.status();
  ASSERT_TRUE(ApplyConcatConv(&m.model(), OnlySite(m.model()), {2, 3}).ok());
  for (onnx::TensorProto& t : *m.model().mutable_graph()->mutable_initializer()) {
    if (t.name() == "w/conv/part1") t.clear_dims(), t.add_dims(4), t.add_dims(3), t.clear_float_data();
  }
  absl::StatusOr<GraphSpec> full = OnnxModelToGraphSpec(m.model(), {});
  absl::StatusOr<GraphSpec> from = OnnxModelToGraphSpecFrom(m.model(), {}, *base);
  ASSERT_FALSE(full.ok());
  EXPECT_EQ(from.status(), full.status());
  // A changed value whose new producer gives it another type than base
  // had: the full import (here it succeeds, with the new type).
  TestModel other = Site({2, 3}, 4, 1, /*bias=*/false);
  ASSERT_TRUE(ApplyConcatConv(&other.model(), OnlySite(other.model()), {2, 3}).ok());
  for (onnx::NodeProto& node : *other.model().mutable_graph()->mutable_node()) {
    if (node.name() == "conv/sum1") node.set_op_type("Concat"), TestModel::IntAttr(&node, "axis", 1);
  }
  full = OnnxModelToGraphSpec(other.model(), {});
  from = OnnxModelToGraphSpecFrom(other.model(), {}, *base);
  ASSERT_TRUE(full.ok()) << full.status();
  ASSERT_TRUE(from.ok()) << from.status();
  ExpectSameSpecs(*from, *full);
}

}  // namespace
}  // namespace serenity
