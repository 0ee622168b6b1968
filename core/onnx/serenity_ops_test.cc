// serenity.ConvAccumulate end to end: import (rules and shape inference),
// the memory model of the imported graph, a verified plan whose arena gives
// the accumulator and its accumulations one buffer, and the export.
#include "core/onnx/serenity_ops.h"

#include <map>

#include "core/memory/simulator.h"
#include "core/onnx/onnx_export.h"
#include "core/onnx/onnx_import.h"
#include "core/plan_request.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "onnx/onnx_pb.h"
#include "tests/testing/plan_verifier.h"

namespace serenity {
namespace {

using ::testing::HasSubstr;

void AddInts(onnx::NodeProto* node, const std::string& name, std::vector<int64_t> values) {
  onnx::AttributeProto* attr = node->add_attribute();
  attr->set_name(name);
  attr->set_type(onnx::AttributeProto::INTS);
  for (int64_t v : values) attr->add_ints(v);
}

void SetType(onnx::ValueInfoProto* v, const std::string& name, const std::vector<int64_t>& dims, int32_t dtype = 1) {
  v->set_name(name);
  onnx::TypeProto_Tensor* t = v->mutable_type()->mutable_tensor_type();
  t->set_elem_type(dtype);
  for (int64_t d : dims) t->mutable_shape()->add_dim()->set_dim_value(d);
}

void AddInitializer(onnx::GraphProto* graph, const std::string& name, const std::vector<int64_t>& dims) {
  onnx::TensorProto* t = graph->add_initializer();
  t->set_name(name);
  t->set_data_type(1);
  for (int64_t d : dims) t->add_dims(d);
}

onnx::NodeProto* AddNode(onnx::GraphProto* graph, const std::string& type, const std::string& name,
                         std::vector<std::string> inputs, const std::string& output) {
  onnx::NodeProto* node = graph->add_node();
  node->set_op_type(type);
  node->set_name(name);
  for (const std::string& i : inputs) node->add_input(i);
  node->add_output(output);
  if (type == "ConvAccumulate") node->set_domain("serenity");
  return node;
}

// Figure 9's accumulate form as an ONNX model: in[1,1,4,4] gives x0, x1, x2
// (4, 3 and 2 channels) by 1x1 Convs mk0..mk2, each just before its partial
// step; part0 = Conv(x0, w0) (3x3, pads 1, 5 channels), acc1 =
// ConvAccumulate(x1, w1, part0), y = ConvAccumulate(x2, w2, acc1). Float:
// in 64 bytes, x0 256, x1 192, x2 128, part0 / acc1 / y 320.
onnx::ModelProto AccumulateModel() {
  onnx::ModelProto model;
  model.set_ir_version(8);
  onnx::OperatorSetIdProto* opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(13);
  opset = model.add_opset_import();
  opset->set_domain("serenity");
  opset->set_version(1);
  onnx::GraphProto* graph = model.mutable_graph();
  graph->set_name("accumulate");
  SetType(graph->add_input(), "in", {1, 1, 4, 4});
  SetType(graph->add_output(), "y", {1, 5, 4, 4});
  AddInitializer(graph, "a0", {4, 1, 1, 1});
  AddInitializer(graph, "a1", {3, 1, 1, 1});
  AddInitializer(graph, "a2", {2, 1, 1, 1});
  AddInitializer(graph, "w0", {5, 4, 3, 3});
  AddInitializer(graph, "w1", {5, 3, 3, 3});
  AddInitializer(graph, "w2", {5, 2, 3, 3});
  AddNode(graph, "Conv", "mk0", {"in", "a0"}, "x0");
  AddInts(AddNode(graph, "Conv", "conv0", {"x0", "w0"}, "part0"), "pads", {1, 1, 1, 1});
  AddNode(graph, "Conv", "mk1", {"in", "a1"}, "x1");
  AddInts(AddNode(graph, "ConvAccumulate", "acc1", {"x1", "w1", "part0"}, "acc1"), "pads", {1, 1, 1, 1});
  AddNode(graph, "Conv", "mk2", {"in", "a2"}, "x2");
  AddInts(AddNode(graph, "ConvAccumulate", "acc2", {"x2", "w2", "acc1"}, "y"), "pads", {1, 1, 1, 1});
  return model;
}

absl::Status ImportError(const onnx::ModelProto& model) {
  return ImportOnnxModel(model.SerializeAsString(), {}).status();
}

TEST(SerenityOpsTest, ImportsTheAccumulateFormWithItsAliasing) {
  absl::StatusOr<Graph> g = ImportOnnxModel(AccumulateModel().SerializeAsString(), {});
  ASSERT_TRUE(g.ok()) << g.status();
  const Op& acc1 = g->op(*g->FindOp("acc1"));
  EXPECT_EQ(acc1.type, "serenity::ConvAccumulate");
  EXPECT_TRUE(IsAccumulateOp(acc1.type));
  EXPECT_EQ(g->tensor(*g->FindTensor("acc1")).shape, (std::vector<int64_t>{1, 5, 4, 4}));
  EXPECT_EQ(g->tensor(*g->FindTensor("y")).bytes, 320);
  EXPECT_EQ(acc1.macs, 5 * 16 * 3 * 9);  // as a Conv of x1 with w1
  // File order: each partial step holds in, x_i and the one output buffer.
  BufferModel buffers(*g, MemoryModel{});
  const std::vector<OpId> order = {0, 1, 2, 3, 4, 5};
  absl::StatusOr<MemoryProfile> profile = Simulate(buffers, order);
  ASSERT_TRUE(profile.ok());
  EXPECT_EQ(profile->step_bytes, (std::vector<int64_t>{64 + 256, 64 + 256 + 320, 64 + 320 + 192, 64 + 192 + 320,
                                                       64 + 320 + 128, 128 + 320}));
  EXPECT_EQ(profile->peak_bytes, testing::NaivePeak(*g, order, false, false));
}

TEST(SerenityOpsTest, ImportNeedsTheDomainImportedAtVersion1) {
  onnx::ModelProto model = AccumulateModel();
  model.mutable_opset_import()->RemoveLast();
  EXPECT_THAT(ImportError(model).message(), HasSubstr("opset_import domain \"serenity\" version 1"));
  model.add_opset_import()->set_domain("serenity");
  model.mutable_opset_import(1)->set_version(2);
  EXPECT_THAT(ImportError(model).message(), HasSubstr("only version 1 exists"));
  model = AccumulateModel();
  model.mutable_graph()->mutable_node(5)->set_op_type("Mystery");
  EXPECT_THAT(ImportError(model).message(), HasSubstr("op 'acc2' (serenity.Mystery)"));
}

TEST(SerenityOpsTest, ImportRefusesAnUnsafeAccumulator) {
  onnx::ModelProto model = AccumulateModel();
  *model.mutable_graph()->mutable_node(5)->mutable_input(2) = "in";  // a graph input
  EXPECT_THAT(ImportError(model).message(), HasSubstr("accumulator 'in' must be an activation"));
  *model.mutable_graph()->mutable_node(5)->mutable_input(2) = "a0";  // a weight
  EXPECT_THAT(ImportError(model).message(), HasSubstr("accumulator 'a0' must be an activation"));

  model = AccumulateModel();
  model.mutable_graph()->add_output()->set_name("acc1");
  EXPECT_THAT(ImportError(model).message(), HasSubstr("'acc1' is a graph output"));

  model = AccumulateModel();
  AddNode(model.mutable_graph(), "Relu", "peek", {"acc1"}, "r");
  model.mutable_graph()->add_output()->set_name("r");
  EXPECT_THAT(ImportError(model).message(), HasSubstr("also read by op 'peek'"));

  model = AccumulateModel();
  model.mutable_graph()->mutable_node(5)->add_input("b");
  EXPECT_THAT(ImportError(model).message(), HasSubstr("takes 3 inputs (X, W, ACC)"));
}

TEST(SerenityOpsTest, ImportChecksShapesAsConvDoes) {
  // Conv(x2, w) would have 6 channels, not ACC's 5.
  onnx::ModelProto model = AccumulateModel();
  AddInitializer(model.mutable_graph(), "w6", {6, 2, 3, 3});
  *model.mutable_graph()->mutable_node(5)->mutable_input(1) = "w6";
  absl::Status status = ImportError(model);
  EXPECT_THAT(status.message(), HasSubstr("op 'acc2' (ConvAccumulate)"));
  EXPECT_THAT(status.message(), HasSubstr("Conv(X, W) has shape [1, 6, 4, 4] but ACC has [1, 5, 4, 4]"));
  // (The output's declared shape [1, 5, 4, 4] did not get past the check.)

  model = AccumulateModel();
  AddInts(model.mutable_graph()->mutable_node(5), "strides", {2, 2});  // a 2x2 output
  EXPECT_THAT(ImportError(model).message(), HasSubstr("Conv(X, W) has shape [1, 5, 2, 2]"));

  model = AccumulateModel();
  *model.mutable_graph()->mutable_node(5)->mutable_input(1) = "w1";  // 3 input channels for x2's 2
  EXPECT_THAT(ImportError(model).message(), HasSubstr("has 2 channels"));

  model = AccumulateModel();
  AddInitializer(model.mutable_graph(), "w1d", {5, 2, 3});  // rank 3 against X's 4
  *model.mutable_graph()->mutable_node(5)->mutable_input(1) = "w1d";
  EXPECT_THAT(ImportError(model).message(), HasSubstr("one rank"));
}

TEST(SerenityOpsTest, PlanGivesTheAccumulatorAndItsAliasesOneBufferAndExportsTheDomain) {
  const std::string bytes = AccumulateModel().SerializeAsString();
  absl::StatusOr<Graph> graph = ImportOnnxModel(bytes, {});
  ASSERT_TRUE(graph.ok());
  for (const char* algorithm : {"", "file_order"}) {
    SCOPED_TRACE(algorithm);
    v1::PlanRequest request;
    request.set_onnx_model(bytes);
    request.mutable_options()->set_algorithm(algorithm);
    absl::StatusOr<v1::Plan> plan = ExecutePlanRequest(request);
    ASSERT_TRUE(plan.ok()) << plan.status();
    ASSERT_TRUE(testing::VerifyPlan(*graph, *plan).ok()) << testing::VerifyPlan(*graph, *plan);
    // part0, acc1 and y: one arena buffer, so one offset at every step.
    int holding = 0;
    int64_t offset = -1;
    for (const v1::ArenaBuffer& b : plan->arena().buffers()) {
      if (b.tensor() != "part0") continue;
      ++holding;
      offset = b.offset();
      EXPECT_THAT(b.aliases(), ::testing::UnorderedElementsAre("acc1", "y"));
      EXPECT_EQ(b.size(), 320);
    }
    ASSERT_EQ(holding, 1);
    for (const v1::ArenaBuffer& b : plan->arena().buffers()) {
      EXPECT_NE(b.tensor(), "acc1");
      EXPECT_NE(b.tensor(), "y");
    }
    for (const v1::Step& step : plan->steps()) {
      for (const auto* list : {&step.inputs(), &step.outputs()}) {
        for (const v1::TensorPlacement& p : *list) {
          if (p.tensor() == "part0" || p.tensor() == "acc1" || p.tensor() == "y") {
            EXPECT_EQ(p.offset(), offset);
          }
        }
      }
    }
    if (std::string(algorithm) == "file_order") {
      EXPECT_EQ(plan->peak_bytes(), 64 + 256 + 320);
    }

    // The export keeps the serenity domain, records one offset for the
    // three, and re-planned in its file order gives the same peak.
    absl::StatusOr<std::string> exported = ExportOrderedModel(bytes, *plan);
    ASSERT_TRUE(exported.ok()) << exported.status();
    onnx::ModelProto model;
    ASSERT_TRUE(model.ParseFromString(*exported));
    int serenity = 0;
    for (const onnx::OperatorSetIdProto& opset : model.opset_import()) {
      if (opset.domain() == "serenity") serenity += opset.version() == 1 ? 1 : 100;
    }
    EXPECT_EQ(serenity, 1);
    std::map<std::string, std::string> props;
    for (const auto& entry : model.metadata_props()) props[entry.key()] = entry.value();
    EXPECT_EQ(props.at("serenity.offset/acc1"), std::to_string(offset));
    EXPECT_EQ(props.at("serenity.offset/y"), std::to_string(offset));
    v1::PlanRequest again;
    again.set_onnx_model(*exported);
    again.mutable_options()->set_algorithm("file_order");
    absl::StatusOr<v1::Plan> replanned = ExecutePlanRequest(again);
    ASSERT_TRUE(replanned.ok()) << replanned.status();
    EXPECT_EQ(replanned->peak_bytes(), plan->peak_bytes());
  }
}

TEST(SerenityOpsTest, ExportAddsAMissingDomainImportAndTheCheckerKnowsTheSchema) {
  const std::string bytes = AccumulateModel().SerializeAsString();
  v1::PlanRequest request;
  request.set_onnx_model(bytes);
  request.mutable_options()->set_algorithm("file_order");
  absl::StatusOr<v1::Plan> plan = ExecutePlanRequest(request);
  ASSERT_TRUE(plan.ok()) << plan.status();

  onnx::ModelProto without = AccumulateModel();
  without.mutable_opset_import()->RemoveLast();
  absl::StatusOr<std::string> exported = ExportOrderedModel(without.SerializeAsString(), *plan);
  ASSERT_TRUE(exported.ok()) << exported.status();
  onnx::ModelProto model;
  ASSERT_TRUE(model.ParseFromString(*exported));
  ASSERT_EQ(model.opset_import_size(), 2);
  EXPECT_EQ(model.opset_import(1).domain(), "serenity");
  EXPECT_EQ(model.opset_import(1).version(), 1);

  // The registered schema makes the checker validate the node: an attribute
  // Conv does not have is refused.
  onnx::ModelProto odd = AccumulateModel();
  AddInts(odd.mutable_graph()->mutable_node(3), "bogus", {1});
  absl::Status status = ExportOrderedModel(odd.SerializeAsString(), *plan).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("bogus"));
}

}  // namespace
}  // namespace serenity
