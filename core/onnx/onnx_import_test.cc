#include "core/onnx/onnx_import.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "onnx/onnx_pb.h"
#include "tests/testing/orders.h"

namespace serenity {
namespace {

using ::testing::HasSubstr;

const std::string kModels = SERENITY_SHARED_DIR "/bench/models/";

// A small model builder: float tensors, shapes given per value.
class ModelBuilder {
 public:
  ModelBuilder() {
    model_.set_ir_version(8);
    onnx::OperatorSetIdProto* opset = model_.add_opset_import();
    opset->set_domain("");
    opset->set_version(13);
    model_.mutable_graph()->set_name("test");
  }
  // A graph input; a dim of -1 becomes the symbolic dim "batch".
  ModelBuilder& Input(const std::string& name, std::vector<int64_t> dims) {
    SetType(model_.mutable_graph()->add_input(), name, dims);
    return *this;
  }
  ModelBuilder& Output(const std::string& name) {
    model_.mutable_graph()->add_output()->set_name(name);
    return *this;
  }
  ModelBuilder& Initializer(const std::string& name, std::vector<int64_t> dims, int32_t dtype = 1,
                            size_t raw_bytes = 0) {
    onnx::TensorProto* t = model_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(dtype);
    for (int64_t d : dims) t->add_dims(d);
    if (raw_bytes > 0) t->set_raw_data(std::string(raw_bytes, '\0'));
    return *this;
  }
  onnx::NodeProto* Node(const std::string& type, std::vector<std::string> inputs, std::vector<std::string> outputs,
                        const std::string& name = "") {
    onnx::NodeProto* node = model_.mutable_graph()->add_node();
    node->set_op_type(type);
    node->set_name(name);
    for (const std::string& i : inputs) node->add_input(i);
    for (const std::string& o : outputs) node->add_output(o);
    return node;
  }
  std::string Bytes() const { return model_.SerializeAsString(); }
  onnx::ModelProto& model() { return model_; }

 private:
  static void SetType(onnx::ValueInfoProto* v, const std::string& name, const std::vector<int64_t>& dims) {
    v->set_name(name);
    onnx::TypeProto_Tensor* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(1);
    for (int64_t d : dims) {
      if (d < 0) {
        t->mutable_shape()->add_dim()->set_dim_param("batch");
      } else {
        t->mutable_shape()->add_dim()->set_dim_value(d);
      }
    }
  }
  onnx::ModelProto model_;
};

// x[1,3,8,8] -> Conv(w[4,3,3,3], pads 1) -> Relu -> Add(with a Constant) -> y
ModelBuilder ConvReluAdd(int64_t batch = 1) {
  ModelBuilder b;
  b.Input("x", {batch, 3, 8, 8}).Initializer("w", {4, 3, 3, 3}).Output("y");
  onnx::NodeProto* conv = b.Node("Conv", {"x", "w"}, {"c"}, "conv");
  onnx::AttributeProto* pads = conv->add_attribute();
  pads->set_name("pads");
  pads->set_type(onnx::AttributeProto::INTS);
  for (int i = 0; i < 4; ++i) pads->add_ints(1);
  b.Node("Relu", {"c"}, {"r"});
  onnx::NodeProto* constant = b.Node("Constant", {}, {"k"}, "k");
  onnx::AttributeProto* value = constant->add_attribute();
  value->set_name("value");
  value->set_type(onnx::AttributeProto::TENSOR);
  value->mutable_t()->set_data_type(1);
  value->mutable_t()->add_dims(1);
  value->mutable_t()->add_float_data(2.0f);
  b.Node("Add", {"r", "k"}, {"y"}, "add");
  return b;
}

int64_t BytesOf(const Graph& g, const std::string& tensor) { return g.tensor(*g.FindTensor(tensor)).bytes; }

TEST(OnnxImportTest, InfersShapesBytesWeightsAndMacs) {
  absl::StatusOr<Graph> g = ImportOnnxModel(ConvReluAdd().Bytes(), {});
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->num_ops(), 4);
  EXPECT_EQ(BytesOf(*g, "x"), 1 * 3 * 8 * 8 * 4);
  EXPECT_EQ(BytesOf(*g, "c"), 1 * 4 * 8 * 8 * 4);  // not in value_info: inferred
  EXPECT_EQ(BytesOf(*g, "r"), 1024);
  EXPECT_EQ(BytesOf(*g, "y"), 1024);
  EXPECT_TRUE(g->tensor(*g->FindTensor("w")).is_weight);
  EXPECT_TRUE(g->tensor(*g->FindTensor("k")).is_weight);
  EXPECT_FALSE(g->tensor(*g->FindTensor("x")).is_weight);
  EXPECT_TRUE(g->tensor(*g->FindTensor("x")).is_graph_input);
  EXPECT_EQ(g->weight_bytes(), 4 * 3 * 3 * 3 * 4 + 4);
  // Conv: 256 outputs x (3 x 3 x 3) MACs each.
  EXPECT_EQ(g->op(*g->FindOp("conv")).macs, 256 * 27);
  EXPECT_EQ(g->total_macs(), 256 * 27);
  // The unnamed Relu is named after its type and position.
  EXPECT_TRUE(g->FindOp("Relu_1").has_value());
}

TEST(OnnxImportTest, ImportsEverySharedModel) {
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kModels)) {
    if (entry.path().extension() != ".onnx") continue;
    SCOPED_TRACE(entry.path().filename().string());
    std::string bytes = testing::ReadFile(entry.path().string());
    onnx::ModelProto model;
    ASSERT_TRUE(model.ParseFromString(bytes));
    absl::StatusOr<Graph> g = ImportOnnxModel(bytes, {});
    ASSERT_TRUE(g.ok()) << g.status();
    EXPECT_EQ(g->num_ops(), model.graph().node_size());
    EXPECT_GT(g->weight_bytes(), 0);
    EXPECT_GT(g->total_macs(), 0);
    for (const Tensor& t : g->tensors()) {
      if (!t.is_weight) {
        EXPECT_GT(t.bytes, 0) << t.name;
      }
    }
    ++count;
  }
  EXPECT_EQ(count, 22);
  absl::StatusOr<Graph> stage1 = ImportOnnxModel(testing::ReadFile(kModels + "randwire_ws_cifar10_stage1.onnx"), {});
  ASSERT_TRUE(stage1.ok());
  EXPECT_EQ(stage1->num_ops(), 190);
}

absl::Status ImportError(const std::string& bytes, const OnnxImportOptions& options = {}) {
  return ImportOnnxModel(bytes, options).status();
}

TEST(OnnxImportTest, RejectsTruncatedAndGarbageBytes) {
  std::string model = testing::ReadFile(kModels + "tv_googlenet.onnx");
  absl::Status truncated = ImportError(model.substr(0, model.size() / 2));
  EXPECT_EQ(truncated.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(truncated.message(), HasSubstr("ONNX"));
  EXPECT_EQ(ImportError("\x08\x07 this is not a model").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(ImportError("").message(), HasSubstr("not a valid ONNX model"));
}

TEST(OnnxImportTest, RejectsEmptyGraph) {
  ModelBuilder b;
  b.Input("x", {1});
  EXPECT_THAT(ImportError(b.Bytes()).message(), HasSubstr("no nodes"));
}

TEST(OnnxImportTest, RejectsCycle) {
  ModelBuilder b;
  b.Input("x", {1, 4}).Output("z");
  b.Node("Add", {"x", "z"}, {"y"}, "first");
  b.Node("Relu", {"y"}, {"z"}, "second");
  // Shape inference cannot type "z" before it is produced; give it a type so
  // the cycle itself is what is reported.
  onnx::ValueInfoProto* z = b.model().mutable_graph()->mutable_output(0);
  z->mutable_type()->mutable_tensor_type()->set_elem_type(1);
  for (int64_t d : {1, 4}) z->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(d);
  absl::Status status = ImportError(b.Bytes());
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("cycle"));
}

TEST(OnnxImportTest, RejectsMissingProducer) {
  ModelBuilder b;
  b.Input("x", {1, 4}).Output("y");
  b.Node("Add", {"x", "ghost"}, {"y"}, "add");
  absl::Status status = ImportError(b.Bytes());
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("'ghost'"));
}

TEST(OnnxImportTest, SymbolicDimNeedsAValue) {
  std::string bytes = ConvReluAdd(/*batch=*/-1).Bytes();
  absl::Status status = ImportError(bytes);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("tensor 'x'"));
  EXPECT_THAT(status.message(), HasSubstr("symbolic dimension 'batch'"));
  EXPECT_THAT(status.message(), HasSubstr("--dim batch=N"));
  OnnxImportOptions options;
  options.dim_values["batch"] = 2;
  absl::StatusOr<Graph> g = ImportOnnxModel(bytes, options);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(BytesOf(*g, "c"), 2 * 4 * 8 * 8 * 4);  // the value propagated through inference
}

TEST(OnnxImportTest, RejectsControlFlow) {
  ModelBuilder b;
  b.Input("cond", {1}).Output("y");
  onnx::NodeProto* node = b.Node("If", {"cond"}, {"y"}, "branch");
  onnx::AttributeProto* then_branch = node->add_attribute();
  then_branch->set_name("then_branch");
  then_branch->set_type(onnx::AttributeProto::GRAPH);
  then_branch->mutable_g()->set_name("then");
  absl::Status status = ImportError(b.Bytes());
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("op 'branch' (If) is unsupported"));
}

TEST(OnnxImportTest, UnknownOpWithoutShapeIsNamed) {
  ModelBuilder b;
  b.Input("x", {1, 4}).Output("y");
  onnx::NodeProto* node = b.Node("Mystery", {"x"}, {"y"}, "m");
  node->set_domain("com.example");
  absl::Status status = ImportError(b.Bytes());
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("Mystery"));  // no opset for its domain
  onnx::OperatorSetIdProto* opset = b.model().add_opset_import();
  opset->set_domain("com.example");
  opset->set_version(1);
  status = ImportError(b.Bytes());
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("tensor 'y'"));
  EXPECT_THAT(status.message(), HasSubstr("no inferred shape"));
}

TEST(OnnxImportTest, WorkspaceByOpName) {
  OnnxImportOptions options;
  options.workspace_bytes["conv"] = 4096;
  absl::StatusOr<Graph> g = ImportOnnxModel(ConvReluAdd().Bytes(), options);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->op(*g->FindOp("conv")).workspace_bytes, 4096);
  options.workspace_bytes["nope"] = 1;
  EXPECT_THAT(ImportError(ConvReluAdd().Bytes(), options).message(), HasSubstr("unknown op 'nope'"));
  options.workspace_bytes.erase("nope");
  options.workspace_bytes["conv"] = -1;
  EXPECT_THAT(ImportError(ConvReluAdd().Bytes(), options).message(), HasSubstr("negative"));
}

TEST(OnnxImportTest, StripWeightDataKeepsSmallTensorsAndShapes) {
  ModelBuilder b;
  b.Input("x", {1, 64}).Output("y");
  b.Initializer("w", {64, 64}, 1, 64 * 64 * 4);  // 16 KiB: stripped
  b.Initializer("shape", {2}, 7, 16);            // Reshape's target shape: kept
  b.Node("MatMul", {"x", "w"}, {"m"}, "mm");
  b.Node("Reshape", {"m", "shape"}, {"y"}, "reshape");
  // Give the shape tensor real values so Reshape's output can be inferred.
  onnx::TensorProto* shape = b.model().mutable_graph()->mutable_initializer(1);
  shape->clear_raw_data();
  shape->add_int64_data(8);
  shape->add_int64_data(8);
  std::string original = b.Bytes();
  absl::StatusOr<std::string> stripped = StripWeightData(original);
  ASSERT_TRUE(stripped.ok());
  EXPECT_LT(stripped->size(), original.size() / 4);
  onnx::ModelProto model;
  ASSERT_TRUE(model.ParseFromString(*stripped));
  EXPECT_EQ(model.graph().initializer(0).raw_data().size(), 0u);
  EXPECT_EQ(model.graph().initializer(0).dims_size(), 2);
  EXPECT_EQ(model.graph().initializer(1).int64_data_size(), 2);
  absl::StatusOr<Graph> g = ImportOnnxModel(*stripped, {});
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(BytesOf(*g, "y"), 64 * 4);
  EXPECT_EQ(g->weight_bytes(), 64 * 64 * 4 + 16);
  EXPECT_EQ(g->op(*g->FindOp("mm")).macs, 64 * 64);

  // A shared model strips to at most its size and imports to the same sizes.
  std::string shared = testing::ReadFile(kModels + "nasnet_a_cifar10_normal_cell.onnx");
  absl::StatusOr<std::string> shared_stripped = StripWeightData(shared);
  ASSERT_TRUE(shared_stripped.ok());
  EXPECT_LE(shared_stripped->size(), shared.size());
  absl::StatusOr<Graph> a = ImportOnnxModel(shared, {});
  absl::StatusOr<Graph> c = ImportOnnxModel(*shared_stripped, {});
  ASSERT_TRUE(a.ok() && c.ok());
  ASSERT_EQ(a->num_tensors(), c->num_tensors());
  for (TensorId t = 0; t < a->num_tensors(); ++t) EXPECT_EQ(a->tensor(t).bytes, c->tensor(t).bytes);
  EXPECT_EQ(StripWeightData("garbage!").status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace serenity
