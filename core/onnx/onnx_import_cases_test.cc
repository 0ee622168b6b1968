// ONNX import: every shared model, hand-built models with sizes and MACs
// worked out by hand, every broken-input error, and weight stripping.
#include "core/onnx/onnx_import.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "onnx/onnx_pb.h"

namespace serenity {
namespace {

using ::testing::AnyOf;
using ::testing::HasSubstr;

const std::string kModels = SERENITY_SHARED_DIR "/bench/models/";

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// A small model builder: opset 13, IR version 8, float tensors unless told.
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
  ModelBuilder& Input(const std::string& name, const std::vector<int64_t>& dims) {
    SetType(model_.mutable_graph()->add_input(), name, dims);
    return *this;
  }
  // A graph output, typed only when `dims` are given.
  ModelBuilder& Output(const std::string& name, const std::vector<int64_t>& dims = {}) {
    onnx::ValueInfoProto* v = model_.mutable_graph()->add_output();
    v->set_name(name);
    if (!dims.empty()) SetType(v, name, dims);
    return *this;
  }
  ModelBuilder& ValueInfo(const std::string& name, const std::vector<int64_t>& dims) {
    SetType(model_.mutable_graph()->add_value_info(), name, dims);
    return *this;
  }
  onnx::TensorProto* Initializer(const std::string& name, const std::vector<int64_t>& dims, int32_t dtype = 1) {
    onnx::TensorProto* t = model_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(dtype);
    for (int64_t d : dims) t->add_dims(d);
    return t;
  }
  onnx::NodeProto* Node(const std::string& type, const std::vector<std::string>& inputs,
                        const std::vector<std::string>& outputs, const std::string& name = "") {
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
    t->set_elem_type(onnx::TensorProto::FLOAT);
    onnx::TensorShapeProto* shape = t->mutable_shape();
    for (int64_t d : dims) {
      if (d < 0) {
        shape->add_dim()->set_dim_param("batch");
      } else {
        shape->add_dim()->set_dim_value(d);
      }
    }
  }
  onnx::ModelProto model_;
};

void IntsAttribute(onnx::NodeProto* node, const std::string& name, const std::vector<int64_t>& values) {
  onnx::AttributeProto* a = node->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t v : values) a->add_ints(v);
}

void IntAttribute(onnx::NodeProto* node, const std::string& name, int64_t value) {
  onnx::AttributeProto* a = node->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(value);
}

// x[B,3,8,8] -> Conv(w[4,3,3,3], pads 1) -> c -> Relu -> r -> Add(bias[1,4,1,1]) -> y.
// Only x carries a type: c, r and y are left to shape inference.
ModelBuilder ConvReluAdd(int64_t batch = 1) {
  ModelBuilder b;
  b.Input("x", {batch, 3, 8, 8}).Output("y");
  b.Initializer("w", {4, 3, 3, 3});
  b.Initializer("bias", {1, 4, 1, 1});
  IntsAttribute(b.Node("Conv", {"x", "w"}, {"c"}, "conv"), "pads", {1, 1, 1, 1});
  b.Node("Relu", {"c"}, {"r"});
  b.Node("Add", {"r", "bias"}, {"y"}, "add");
  return b;
}

int64_t BytesOf(const Graph& g, const std::string& tensor) {
  std::optional<TensorId> id = g.FindTensor(tensor);
  return id.has_value() ? g.tensor(*id).bytes : -1;
}

const Tensor& TensorOf(const Graph& g, const std::string& tensor) { return g.tensor(*g.FindTensor(tensor)); }

absl::Status ImportError(const std::string& bytes, const OnnxImportOptions& options = {}) {
  return ImportOnnxModel(bytes, options).status();
}

// --- Shared models ---------------------------------------------------------

TEST(OnnxImportTest, ImportsEverySharedModel) {
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kModels)) {
    if (entry.path().extension() != ".onnx") continue;
    SCOPED_TRACE(entry.path().filename().string());
    std::string bytes = ReadFile(entry.path().string());
    onnx::ModelProto model;
    ASSERT_TRUE(model.ParseFromString(bytes));
    absl::StatusOr<Graph> g = ImportOnnxModel(bytes, {});
    ASSERT_TRUE(g.ok()) << g.status();
    EXPECT_EQ(g->num_ops(), model.graph().node_size());
    EXPECT_EQ(g->name(), model.graph().name());
    EXPECT_GT(g->weight_bytes(), 0);
    EXPECT_GT(g->total_macs(), 0);
    for (const Tensor& t : g->tensors()) {
      if (!t.is_weight) {
        EXPECT_GT(t.bytes, 0) << t.name;
      }
    }
    // Initializers are weights, never graph inputs; ops keep file order and names.
    for (const onnx::TensorProto& init : model.graph().initializer()) {
      const Tensor& t = TensorOf(*g, init.name());
      EXPECT_TRUE(t.is_weight) << init.name();
      EXPECT_FALSE(t.is_graph_input) << init.name();
    }
    for (int i = 0; i < model.graph().node_size(); ++i) {
      EXPECT_EQ(g->op(i).name, model.graph().node(i).name());
      EXPECT_EQ(g->op(i).type, model.graph().node(i).op_type());
    }
    ASSERT_EQ(g->outputs().size(), static_cast<size_t>(model.graph().output_size()));
    ++count;
  }
  EXPECT_EQ(count, 22);
}

TEST(OnnxImportTest, SharedModelFacts) {
  absl::StatusOr<Graph> stage1 = ImportOnnxModel(ReadFile(kModels + "randwire_ws_cifar10_stage1.onnx"), {});
  ASSERT_TRUE(stage1.ok()) << stage1.status();
  EXPECT_EQ(stage1->num_ops(), 190);
  EXPECT_EQ(stage1->inputs().size(), 1u);

  // GoogLeNet at 224x224: the input is [1,3,224,224] float, the logits
  // [1,1000], and about 1.5 GMACs (torchvision quotes 1.50 GFLOPS as MACs).
  absl::StatusOr<Graph> googlenet = ImportOnnxModel(ReadFile(kModels + "tv_googlenet.onnx"), {});
  ASSERT_TRUE(googlenet.ok()) << googlenet.status();
  ASSERT_EQ(googlenet->inputs().size(), 1u);
  EXPECT_EQ(googlenet->tensor(googlenet->inputs()[0]).bytes, 3 * 224 * 224 * 4);
  EXPECT_EQ(googlenet->tensor(googlenet->outputs()[0]).bytes, 1000 * 4);
  EXPECT_GT(googlenet->total_macs(), 1'400'000'000);
  EXPECT_LT(googlenet->total_macs(), 1'600'000'000);
}

// --- Hand-built models -----------------------------------------------------

TEST(OnnxImportTest, InfersShapesBytesWeightsAndMacs) {
  ModelBuilder b = ConvReluAdd();
  ASSERT_EQ(b.model().graph().value_info_size(), 0);
  absl::StatusOr<GraphSpec> spec = OnnxToGraphSpec(b.Bytes(), {});
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->name, "test");
  EXPECT_EQ(spec->inputs, std::vector<std::string>{"x"});
  EXPECT_EQ(spec->outputs, std::vector<std::string>{"y"});

  absl::StatusOr<Graph> g = ImportOnnxModel(b.Bytes(), {});
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->num_ops(), 3);
  EXPECT_EQ(BytesOf(*g, "x"), 768);        // [1,3,8,8] float
  EXPECT_EQ(BytesOf(*g, "w"), 432);        // [4,3,3,3] float
  EXPECT_EQ(BytesOf(*g, "bias"), 16);      // [1,4,1,1] float
  EXPECT_EQ(BytesOf(*g, "c"), 1024);       // [1,4,8,8]: inferred, not in value_info
  EXPECT_EQ(BytesOf(*g, "r"), 1024);
  EXPECT_EQ(BytesOf(*g, "y"), 1024);
  EXPECT_EQ(TensorOf(*g, "c").shape, (std::vector<int64_t>{1, 4, 8, 8}));
  EXPECT_TRUE(TensorOf(*g, "w").is_weight);
  EXPECT_TRUE(TensorOf(*g, "bias").is_weight);
  EXPECT_FALSE(TensorOf(*g, "x").is_weight);
  EXPECT_TRUE(TensorOf(*g, "x").is_graph_input);
  EXPECT_FALSE(TensorOf(*g, "c").is_weight);
  EXPECT_TRUE(TensorOf(*g, "y").is_graph_output);
  EXPECT_EQ(g->weight_bytes(), 432 + 16);
  // Conv: 1*4*8*8 = 256 outputs, each 3 channels x 3x3 kernel = 27 MACs.
  EXPECT_EQ(g->op(*g->FindOp("conv")).macs, 256 * 27);
  EXPECT_EQ(g->total_macs(), 256 * 27);
  EXPECT_EQ(g->op(*g->FindOp("conv")).type, "Conv");
  // The unnamed Relu is named after its type and position.
  EXPECT_TRUE(g->FindOp("Relu_1").has_value());
}

TEST(OnnxImportTest, MacsOfConvGemmMatMulAndConvTranspose) {
  ModelBuilder b;
  b.Input("x", {2, 8, 16, 16}).Input("a", {5, 7}).Input("m", {3, 5, 6}).Output("g").Output("d").Output("p");
  b.Initializer("w", {8, 2, 3, 3});  // group 4: 8 in channels / 4 = 2 per group
  b.Initializer("wb", {7, 9});
  b.Initializer("wm", {6, 4});
  onnx::NodeProto* conv = b.Node("Conv", {"x", "w"}, {"g"}, "grouped");
  IntAttribute(conv, "group", 4);
  IntsAttribute(conv, "strides", {2, 2});
  IntsAttribute(conv, "pads", {1, 1, 1, 1});
  b.Node("Gemm", {"a", "wb"}, {"d"}, "gemm");
  b.Node("MatMul", {"m", "wm"}, {"p"}, "matmul");
  // ConvTranspose: W is [C_in, C_out/group, k...]; each input element feeds
  // C_out/group * k outputs (the zeros a stride inserts are not counted).
  b.Input("u", {1, 4, 5, 5}).Output("t");
  b.Initializer("wt", {4, 2, 3, 3});
  IntsAttribute(b.Node("ConvTranspose", {"u", "wt"}, {"t"}, "deconv"), "strides", {2, 2});
  absl::StatusOr<Graph> g = ImportOnnxModel(b.Bytes(), {});
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(TensorOf(*g, "t").shape, (std::vector<int64_t>{1, 2, 11, 11}));
  EXPECT_EQ(g->op(*g->FindOp("deconv")).macs, (4 * 5 * 5) * (2 * 3 * 3));
  EXPECT_EQ(TensorOf(*g, "g").shape, (std::vector<int64_t>{2, 8, 8, 8}));
  EXPECT_EQ(g->op(*g->FindOp("grouped")).macs, 2 * 8 * 8 * 8 * (2 * 3 * 3));
  EXPECT_EQ(g->op(*g->FindOp("gemm")).macs, 5 * 9 * 7);        // M*N*K
  EXPECT_EQ(g->op(*g->FindOp("matmul")).macs, 3 * 5 * 4 * 6);  // out elements * K
  EXPECT_EQ(g->total_macs(), 2 * 8 * 8 * 8 * 18 + 5 * 9 * 7 + 3 * 5 * 4 * 6 + 100 * 18);
}

onnx::NodeProto* TensorConstant(ModelBuilder& b, const std::string& name, int32_t dtype,
                                const std::vector<int64_t>& dims) {
  onnx::NodeProto* node = b.Node("Constant", {}, {name}, name);
  onnx::AttributeProto* value = node->add_attribute();
  value->set_name("value");
  value->set_type(onnx::AttributeProto::TENSOR);
  value->mutable_t()->set_data_type(dtype);
  for (int64_t d : dims) value->mutable_t()->add_dims(d);
  return node;
}

TEST(OnnxImportTest, ConstantOutputsAreWeights) {
  ModelBuilder b;
  b.Input("x", {2, 3}).Output("y");
  // k: float64 [3] from a value tensor.
  onnx::AttributeProto* k = TensorConstant(b, "k", onnx::TensorProto::DOUBLE, {3})->mutable_attribute(0);
  for (int i = 0; i < 3; ++i) k->mutable_t()->add_double_data(i);
  IntAttribute(b.Node("Cast", {"k"}, {"kf"}, "cast"), "to", onnx::TensorProto::FLOAT);
  b.Node("Add", {"x", "kf"}, {"sum"}, "add");
  // v: float [3] from value_floats; f: a float scalar from value_float.
  onnx::AttributeProto* v = b.Node("Constant", {}, {"v"}, "v")->add_attribute();
  v->set_name("value_floats");
  v->set_type(onnx::AttributeProto::FLOATS);
  for (float x : {1.0f, 2.0f, 3.0f}) v->add_floats(x);
  onnx::AttributeProto* f = b.Node("Constant", {}, {"f"}, "f")->add_attribute();
  f->set_name("value_float");
  f->set_type(onnx::AttributeProto::FLOAT);
  f->set_f(0.5f);
  b.Node("Add", {"sum", "v"}, {"sum2"}, "add2");
  b.Node("Mul", {"sum2", "f"}, {"prod"}, "mul");
  // s: the int64 shape Reshape reads during inference.
  onnx::AttributeProto* s = TensorConstant(b, "s", onnx::TensorProto::INT64, {2})->mutable_attribute(0);
  s->mutable_t()->add_int64_data(3);
  s->mutable_t()->add_int64_data(2);
  b.Node("Reshape", {"prod", "s"}, {"y"}, "reshape");

  absl::StatusOr<Graph> g = ImportOnnxModel(b.Bytes(), {});
  ASSERT_TRUE(g.ok()) << g.status();
  for (const char* weight : {"k", "v", "f", "s"}) {
    EXPECT_TRUE(TensorOf(*g, weight).is_weight) << weight;
    EXPECT_FALSE(TensorOf(*g, weight).is_graph_input) << weight;
  }
  EXPECT_EQ(BytesOf(*g, "k"), 3 * 8);  // float64
  EXPECT_EQ(BytesOf(*g, "v"), 3 * 4);
  EXPECT_EQ(BytesOf(*g, "f"), 4);
  EXPECT_EQ(BytesOf(*g, "s"), 2 * 8);  // int64
  EXPECT_FALSE(TensorOf(*g, "kf").is_weight);
  EXPECT_EQ(BytesOf(*g, "kf"), 3 * 4);
  EXPECT_EQ(TensorOf(*g, "y").shape, (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(g->weight_bytes(), 24 + 12 + 4 + 16);
  EXPECT_EQ(TensorOf(*g, "k").producer, *g->FindOp("k"));  // Constants stay ops of the schedule
  EXPECT_EQ(g->num_ops(), 9);
}

TEST(OnnxImportTest, NamesTypesAndWorkspace) {
  ModelBuilder b;
  b.Input("x", {4}).Output("z");
  b.Node("Relu", {"x"}, {"a"}, "same");
  b.Node("Relu", {"a"}, {"b"}, "same");  // repeated: becomes same_1
  b.Node("Neg", {"b"}, {"c"});           // unnamed: Neg_2
  b.Node("Abs", {"c"}, {"z"}, "Neg_2");  // collides with the generated name: Neg_2_3
  OnnxImportOptions options;
  options.workspace_bytes["same_1"] = 4096;
  absl::StatusOr<Graph> g = ImportOnnxModel(b.Bytes(), options);
  ASSERT_TRUE(g.ok()) << g.status();
  std::vector<std::string> names;
  for (const Op& op : g->ops()) names.push_back(op.name);
  EXPECT_EQ(names, (std::vector<std::string>{"same", "same_1", "Neg_2", "Neg_2_3"}));
  EXPECT_EQ(g->op(1).workspace_bytes, 4096);
  EXPECT_EQ(g->op(0).workspace_bytes, 0);

  // A custom domain prefixes the type (shape from the value_info given).
  ModelBuilder custom;
  custom.Input("x", {4}).Output("y", {4});
  custom.Node("Mystery", {"x"}, {"y"}, "m")->set_domain("com.example");
  onnx::OperatorSetIdProto* opset = custom.model().add_opset_import();
  opset->set_domain("com.example");
  opset->set_version(1);
  absl::StatusOr<Graph> c = ImportOnnxModel(custom.Bytes(), {});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->op(0).type, "com.example::Mystery");
  EXPECT_EQ(BytesOf(*c, "y"), 16);
}

// --- Broken inputs, each with its own error --------------------------------

TEST(OnnxImportTest, RejectsTruncatedModel) {
  std::string model = ReadFile(kModels + "tv_googlenet.onnx");
  ASSERT_FALSE(model.empty());
  absl::Status status = ImportError(model.substr(0, model.size() / 2));
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("not a valid ONNX model"));
  EXPECT_THAT(ImportError("").message(), HasSubstr("not a valid ONNX model"));
}

TEST(OnnxImportTest, RejectsGarbage) {
  std::mt19937 rng(7);
  for (int round = 0; round < 20; ++round) {
    std::string garbage(64 + round * 37, '\0');
    for (char& c : garbage) c = static_cast<char>(rng());
    absl::Status status = ImportError(garbage);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << round;
    // Some random bytes happen to parse as a protobuf; they carry no nodes.
    EXPECT_THAT(status.message(), AnyOf(HasSubstr("not a valid ONNX model"), HasSubstr("no nodes"))) << round;
  }
  // Bytes that happen to parse: ir_version 7, model_version 1, no graph.
  absl::Status status = ImportError(std::string("\x08\x07\x28\x01", 4));
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("ONNX graph has no nodes"));
  // Valid protobuf, but only a producer name: no graph at all.
  onnx::ModelProto empty;
  empty.set_producer_name("x");
  EXPECT_THAT(ImportError(empty.SerializeAsString()).message(), HasSubstr("ONNX graph has no nodes"));
}

TEST(OnnxImportTest, RejectsEmptyGraph) {
  ModelBuilder b;
  b.Input("x", {1}).Output("x");
  absl::Status status = ImportError(b.Bytes());
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("ONNX graph has no nodes"));
}

TEST(OnnxImportTest, RejectsCycle) {
  ModelBuilder b;
  b.Input("x", {1, 4}).Output("z", {1, 4});  // z typed, so only the cycle is wrong
  b.Node("Add", {"x", "z"}, {"y"}, "first");
  b.Node("Relu", {"y"}, {"z"}, "second");
  absl::Status status = ImportError(b.Bytes());
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("cycle"));
  EXPECT_THAT(status.message(), HasSubstr("first"));
}

TEST(OnnxImportTest, RejectsMissingProducer) {
  ModelBuilder b;
  b.Input("x", {1, 4}).Output("y");
  b.Node("Add", {"x", "ghost"}, {"y"}, "add");
  // Without any type, "ghost" has no shape either.
  absl::Status status = ImportError(b.Bytes());
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("tensor 'ghost' (input of op 'add') has no inferred shape"));
  // Typed, it is still produced by nobody.
  b.ValueInfo("ghost", {1, 4});
  status = ImportError(b.Bytes());
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("'ghost'"));
  EXPECT_THAT(status.message(), HasSubstr("never produced"));
}

TEST(OnnxImportTest, SymbolicDimNeedsAValue) {
  ModelBuilder b = ConvReluAdd(/*batch=*/-1);
  b.ValueInfo("c", {-1, 4, 8, 8});  // the dim is substituted in value_info too
  std::string bytes = b.Bytes();
  absl::Status status = ImportError(bytes);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("tensor 'x'"));
  EXPECT_THAT(status.message(), HasSubstr("symbolic dimension 'batch'"));
  EXPECT_THAT(status.message(), HasSubstr("--dim batch=N"));

  OnnxImportOptions options;
  options.dim_values["batch"] = 1;
  absl::StatusOr<Graph> g = ImportOnnxModel(bytes, options);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(BytesOf(*g, "x"), 768);
  EXPECT_EQ(BytesOf(*g, "c"), 1024);
  options.dim_values["batch"] = 3;
  g = ImportOnnxModel(bytes, options);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(BytesOf(*g, "y"), 3 * 1024);  // propagated through inference
  EXPECT_EQ(g->op(*g->FindOp("conv")).macs, 3 * 256 * 27);

  options.dim_values["batch"] = -1;
  EXPECT_THAT(ImportError(bytes, options).message(), HasSubstr("must not be negative"));
}

TEST(OnnxImportTest, RejectsUnknownDimsAndShapes) {
  // A dim with neither value nor name.
  ModelBuilder unknown_dim;
  unknown_dim.Input("x", {2, 2}).Output("y");
  unknown_dim.model().mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(1)->Clear();
  unknown_dim.Node("Relu", {"x"}, {"y"}, "relu");
  absl::Status status = ImportError(unknown_dim.Bytes());
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("tensor 'x'"));
  EXPECT_THAT(status.message(), HasSubstr("unknown dimension 1"));

  // A custom op ONNX cannot infer: its output has no shape.
  ModelBuilder custom;
  custom.Input("x", {4}).Output("y");
  custom.Node("Mystery", {"x"}, {"y"}, "m")->set_domain("com.example");
  onnx::OperatorSetIdProto* opset = custom.model().add_opset_import();
  opset->set_domain("com.example");
  opset->set_version(1);
  status = ImportError(custom.Bytes());
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("tensor 'y' (output of op 'm') has no inferred shape"));

  // A sequence is not a tensor.
  ModelBuilder sequence;
  sequence.Input("x", {4}).Output("n");
  sequence.Node("SequenceConstruct", {"x", "x"}, {"seq"}, "construct");
  sequence.Node("SequenceLength", {"seq"}, {"n"}, "length");
  status = ImportError(sequence.Bytes());
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("tensor 'seq'"));
  EXPECT_THAT(status.message(), HasSubstr("not a tensor"));
}

TEST(OnnxImportTest, ShapeInferenceErrorsBecomeStatus) {
  // The declared type of c contradicts the inferred one: ONNX throws.
  ModelBuilder b = ConvReluAdd();
  b.ValueInfo("c", {1, 5, 8, 8});
  absl::Status status = ImportError(b.Bytes());
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("shape inference"));
}

TEST(OnnxImportTest, RejectsControlFlowAndSubgraphs) {
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

  // Any op with a graph attribute, whatever its type.
  ModelBuilder custom;
  custom.Input("x", {1}).Output("y");
  onnx::NodeProto* fancy = custom.Node("Fancy", {"x"}, {"y"});
  fancy->set_domain("com.example");
  onnx::AttributeProto* body = fancy->add_attribute();
  body->set_name("bodies");
  body->set_type(onnx::AttributeProto::GRAPHS);
  body->add_graphs()->set_name("body");
  status = ImportError(custom.Bytes());
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("op 'Fancy_0' (Fancy) is unsupported"));
  EXPECT_THAT(status.message(), HasSubstr("subgraph"));
}

TEST(OnnxImportTest, RejectsBadWorkspace) {
  OnnxImportOptions options;
  options.workspace_bytes["nope"] = 1;
  absl::Status status = ImportError(ConvReluAdd().Bytes(), options);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("workspace given for unknown op 'nope'"));
  options.workspace_bytes.clear();
  options.workspace_bytes["conv"] = -1;
  status = ImportError(ConvReluAdd().Bytes(), options);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("negative"));
}

// --- StripWeightData -------------------------------------------------------

TEST(OnnxImportTest, StripWeightDataOnSharedModel) {
  std::string shared = ReadFile(kModels + "nasnet_a_cifar10_normal_cell.onnx");
  absl::StatusOr<std::string> stripped = StripWeightData(shared);
  ASSERT_TRUE(stripped.ok()) << stripped.status();
  EXPECT_LE(stripped->size(), shared.size());
  absl::StatusOr<Graph> a = ImportOnnxModel(shared, {});
  absl::StatusOr<Graph> b = ImportOnnxModel(*stripped, {});
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  std::map<std::string, int64_t> bytes_a, bytes_b;
  for (const Tensor& t : a->tensors()) bytes_a[t.name] = t.bytes;
  for (const Tensor& t : b->tensors()) bytes_b[t.name] = t.bytes;
  EXPECT_EQ(bytes_a, bytes_b);
  EXPECT_EQ(a->total_macs(), b->total_macs());
  EXPECT_EQ(StripWeightData("garbage!").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(OnnxImportTest, StripWeightDataDropsLargePayloadsAndKeepsShapes) {
  ModelBuilder b;
  b.Input("x", {1, 64}).Output("y");
  b.Initializer("w", {64, 64})->set_raw_data(std::string(64 * 64 * 4, '\1'));  // 16 KiB: stripped
  onnx::TensorProto* shape = b.Initializer("shape", {2}, onnx::TensorProto::INT64);  // Reshape's target: kept
  shape->add_int64_data(8);
  shape->add_int64_data(8);
  onnx::NodeProto* k = b.Node("Constant", {}, {"k"}, "k");  // 4 KiB Constant: stripped
  onnx::AttributeProto* value = k->add_attribute();
  value->set_name("value");
  value->set_type(onnx::AttributeProto::TENSOR);
  value->mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : {16, 8, 8}) value->mutable_t()->add_dims(d);
  value->mutable_t()->set_raw_data(std::string(16 * 8 * 8 * 4, '\2'));
  b.Node("MatMul", {"x", "w"}, {"m"}, "mm");
  b.Node("Reshape", {"m", "shape"}, {"r"}, "reshape");
  b.Node("Add", {"r", "k"}, {"y"}, "add");
  std::string original = b.Bytes();
  absl::StatusOr<Graph> before = ImportOnnxModel(original, {});
  ASSERT_TRUE(before.ok()) << before.status();

  absl::StatusOr<std::string> stripped = StripWeightData(original);
  ASSERT_TRUE(stripped.ok()) << stripped.status();
  EXPECT_LT(stripped->size(), original.size() / 10);
  onnx::ModelProto model;
  ASSERT_TRUE(model.ParseFromString(*stripped));
  const onnx::TensorProto& w = model.graph().initializer(0);
  EXPECT_TRUE(w.raw_data().empty());
  EXPECT_EQ(w.dims_size(), 2);
  EXPECT_EQ(w.data_type(), onnx::TensorProto::FLOAT);
  EXPECT_EQ(model.graph().initializer(1).int64_data_size(), 2);
  EXPECT_TRUE(model.graph().node(0).attribute(0).t().raw_data().empty());
  EXPECT_EQ(model.graph().node(0).attribute(0).t().dims_size(), 3);

  absl::StatusOr<Graph> after = ImportOnnxModel(*stripped, {});
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(BytesOf(*after, "r"), 64 * 4);  // Reshape still inferred from the kept shape
  EXPECT_EQ(BytesOf(*after, "y"), 16 * 64 * 4);  // [8,8] + [16,8,8] broadcast
  EXPECT_EQ(after->weight_bytes(), before->weight_bytes());
  EXPECT_EQ(after->weight_bytes(), 64 * 64 * 4 + 16 + 16 * 64 * 4);
  EXPECT_EQ(after->op(*after->FindOp("mm")).macs, 64 * 64);

  // With nothing kept, the shape values are gone too and Reshape cannot be
  // inferred: this is why small tensors stay.
  absl::StatusOr<std::string> all = StripWeightData(original, /*max_kept_bytes=*/0);
  ASSERT_TRUE(all.ok());
  EXPECT_THAT(ImportError(*all).message(), HasSubstr("tensor 'r'"));

  // External-data references of large tensors are dropped as well.
  onnx::TensorProto* external = b.Initializer("big", {1024, 1024});
  external->set_data_location(onnx::TensorProto::EXTERNAL);
  onnx::StringStringEntryProto* location = external->add_external_data();
  location->set_key("location");
  location->set_value("weights.bin");
  stripped = StripWeightData(b.Bytes());
  ASSERT_TRUE(stripped.ok());
  ASSERT_TRUE(model.ParseFromString(*stripped));
  EXPECT_EQ(model.graph().initializer(2).external_data_size(), 0);
  EXPECT_EQ(model.graph().initializer(2).data_location(), onnx::TensorProto::DEFAULT);
  EXPECT_EQ(model.graph().initializer(2).dims_size(), 2);
}

}  // namespace
}  // namespace serenity
