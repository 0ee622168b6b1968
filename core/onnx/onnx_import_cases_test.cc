// ONNX import: every shared model, hand-built models with sizes and MACs
// worked out by hand, every broken-input error, and weight stripping.
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core/onnx/onnx_import.h"
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
  EXPECT_EQ(BytesOf(*g, "x"), 768);    // [1,3,8,8] float
  EXPECT_EQ(BytesOf(*g, "w"), 432);    // [4,3,3,3] float
  EXPECT_EQ(BytesOf(*g, "bias"), 16);  // [1,4,1,1] float
  EXPECT_EQ(BytesOf(*g, "c"), 1024);   // [1,4,8,8]: inferred, not in value_info
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
  unknown_dim.model()
      .mutable_graph()
      ->mutable_input(0)
      ->mutable_type()
      ->mutable_tensor_type()
      ->mutable_shape()
      ->mutable_dim(1)
      ->Clear();
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

// Inputs that crashed (SIGFPE), overflowed a buffer in or hung ONNX 1.12's
// shape inference, found by fuzz/fuzz_onnx_import: each is now a clear error.
TEST(OnnxImportTest, FuzzRegressionZeroStrideIsAnError) {
  // The fuzzer's find, minimized: MaxPool with strides [0, 1] on x[1,1,8,8].
  const std::string reproducer(
      "\x08\x08\x3a\x5f\x0a\x38\x0a\x01\x78\x12\x01\x79\x22\x07\x4d\x61\x78\x50\x6f\x6f\x6c\x2a\x15\x0a\x0c\x6b"
      "\x65\x72\x6e\x65\x6c\x5f\x73\x68\x61\x70\x65\x40\x02\x40\x02\xa0\x01\x07\x2a\x10\x0a\x07\x73\x74\x72\x69"
      "\x64\x65\x73\x40\x00\x40\x01\xa0\x01\x07\x12\x01\x74\x5a\x1b\x0a\x01\x78\x12\x16\x0a\x14\x08\x01\x12\x10"
      "\x0a\x02\x08\x01\x0a\x02\x08\x01\x0a\x02\x08\x08\x0a\x02\x08\x08\x62\x03\x0a\x01\x79\x42\x04\x0a\x00\x10"
      "\x0d",
      105);
  absl::Status status = ImportError(reproducer);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("op 'MaxPool_0' (MaxPool): attribute strides must be positive, found 0"));

  // Conv, and the old (opset 6) AveragePool, take the same path.
  ModelBuilder conv;
  conv.Input("x", {1, 1, 8, 8}).Output("y");
  conv.Initializer("w", {1, 1, 1, 1});
  IntsAttribute(conv.Node("Conv", {"x", "w"}, {"y"}, "conv"), "strides", {1, 0});
  EXPECT_THAT(ImportError(conv.Bytes()).message(), HasSubstr("op 'conv' (Conv): attribute strides must be positive"));
  ModelBuilder pool;
  pool.model().mutable_opset_import(0)->set_version(6);
  pool.Input("x", {1, 1, 8, 8}).Output("y");
  onnx::NodeProto* avg = pool.Node("AveragePool", {"x"}, {"y"}, "avg");
  IntsAttribute(avg, "kernel_shape", {2, 2});
  IntsAttribute(avg, "strides", {-1, 1});
  EXPECT_THAT(ImportError(pool.Bytes()).message(), HasSubstr("op 'avg' (AveragePool): attribute strides"));
  IntsAttribute(conv.model().mutable_graph()->mutable_node(0), "dilations", {0, 1});
  conv.model().mutable_graph()->mutable_node(0)->mutable_attribute(0)->set_ints(1, 1);
  EXPECT_THAT(ImportError(conv.Bytes()).message(), HasSubstr("attribute dilations must be positive"));
}

TEST(OnnxImportTest, FuzzRegressionBlocksizeSplitAndReshapeAreErrors) {
  // DepthToSpace squares blocksize: 2^32 squared wraps to 0, a division by zero.
  ModelBuilder d2s;
  d2s.Input("x", {1, 16, 2, 2}).Output("y");
  IntAttribute(d2s.Node("DepthToSpace", {"x"}, {"y"}, "d2s"), "blocksize", int64_t{1} << 32);
  absl::Status status = ImportError(d2s.Bytes());
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("op 'd2s' (DepthToSpace): attribute blocksize must lie in 1..2^31-1"));

  // Split without outputs: ONNX divides the axis by the number of outputs.
  ModelBuilder split;
  split.Input("x", {4, 8}).Output("x");
  split.Node("Split", {"x"}, {}, "split");
  status = ImportError(split.Bytes());
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("op 'split' (Split): has 0 outputs, needs at least 1"));

  // SplitToSequence with a scalar split of 0.
  ModelBuilder sequence;
  sequence.Input("x", {4, 8}).Output("y");
  sequence.Initializer("s", {}, onnx::TensorProto::INT64)->add_int64_data(0);
  sequence.Node("SplitToSequence", {"x", "s"}, {"y"}, "to_sequence");
  status = ImportError(sequence.Bytes());
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("op 'to_sequence' (SplitToSequence): split size must be positive"));

  // Reshape to [0, -1] of x[-1, -2^63]: INT64_MIN % -1. Negative dims are
  // refused where declared ...
  ModelBuilder reshape;
  reshape.Input("x", {1, 2}).Output("y");
  reshape.model()
      .mutable_graph()
      ->mutable_input(0)
      ->mutable_type()
      ->mutable_tensor_type()
      ->mutable_shape()
      ->mutable_dim(0)
      ->set_dim_value(-1);
  onnx::TensorProto* target = reshape.Initializer("shape", {2}, onnx::TensorProto::INT64);
  target->add_int64_data(0);
  target->add_int64_data(-1);
  reshape.Node("Reshape", {"x", "shape"}, {"y"}, "reshape");
  status = ImportError(reshape.Bytes());
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("tensor 'x' has negative dimension -1"));
  // ... and a target whose element count overflows where inference meets it:
  // 3 * 6148914691236517205 wraps to -1.
  ModelBuilder wrapped;
  wrapped.Input("x", {int64_t{1} << 32, int64_t{1} << 30}).Output("y");
  onnx::TensorProto* wrapping = wrapped.Initializer("shape", {3}, onnx::TensorProto::INT64);
  for (int64_t v : {int64_t{3}, int64_t{6148914691236517205}, int64_t{-1}}) wrapping->add_int64_data(v);
  wrapped.Node("Reshape", {"x", "shape"}, {"y"}, "reshape");
  status = ImportError(wrapped.Bytes());
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("op 'reshape' (Reshape): the target shape has more than 2^63 elements"));
}

TEST(OnnxImportTest, FuzzRegressionRawDataAndHugeSamePadding) {
  // raw_data of 9 bytes for one int64: ONNX copies 9 bytes into 8.
  ModelBuilder raw;
  raw.Input("x", {2, 4}).Output("y");
  raw.Initializer("shape", {1}, onnx::TensorProto::INT64)->set_raw_data(std::string(9, '\x01'));
  raw.Node("Reshape", {"x", "shape"}, {"y"}, "reshape");
  absl::Status status = ImportError(raw.Bytes());
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(),
              HasSubstr("initializer 'shape' has 9 bytes of raw_data where its dims and data type need 8"));
  // The same inside a Constant node.
  ModelBuilder constant;
  constant.Input("x", {2, 4}).Output("y");
  onnx::NodeProto* c = constant.Node("Constant", {}, {"shape"}, "const");
  onnx::AttributeProto* value = c->add_attribute();
  value->set_name("value");
  value->set_type(onnx::AttributeProto::TENSOR);
  value->mutable_t()->set_data_type(onnx::TensorProto::INT64);
  value->mutable_t()->add_dims(1);
  value->mutable_t()->set_raw_data(std::string(12, '\x01'));
  constant.Node("Reshape", {"x", "shape"}, {"y"}, "reshape");
  EXPECT_THAT(ImportError(constant.Bytes()).message(),
              HasSubstr("attribute value of op 'const' (Constant) has 12 bytes of raw_data"));

  // auto_pad SAME with a stride of 2 over a dim of 2^62: ONNX would subtract
  // 2 a quintillion times.
  ModelBuilder same;
  same.Input("x", {1, 1, 1, int64_t{1} << 62}).Output("y");
  onnx::NodeProto* pool = same.Node("MaxPool", {"x"}, {"y"}, "pool");
  IntsAttribute(pool, "kernel_shape", {1, 1});
  IntsAttribute(pool, "strides", {1, 2});
  onnx::AttributeProto* pad = pool->add_attribute();
  pad->set_name("auto_pad");
  pad->set_type(onnx::AttributeProto::STRING);
  pad->set_s("SAME_UPPER");
  status = ImportError(same.Bytes());
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("op 'pool' (MaxPool): input dimension 4611686018427387904 is too large"));
  // A normal SAME-padded pool still imports.
  same.model()
      .mutable_graph()
      ->mutable_input(0)
      ->mutable_type()
      ->mutable_tensor_type()
      ->mutable_shape()
      ->mutable_dim(3)
      ->set_dim_value(9);
  absl::StatusOr<Graph> g = ImportOnnxModel(same.Bytes(), {});
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(BytesOf(*g, "y"), 1 * 5 * 4);
}

TEST(OnnxImportTest, FuzzRegressionRanksOnnxIndexesUnchecked) {
  // ONNX 1.12 reads dims these inputs do not have (SIGSEGV): Gemm-6 with a
  // scalar B, Conv with a scalar W, ConvTranspose with a 1-D W, MaxRoiPool on
  // a 2-D X.
  ModelBuilder gemm;
  gemm.model().mutable_opset_import(0)->set_version(6);
  gemm.Input("a", {2, 1}).Input("b", {}).Input("c", {2}).Output("y");
  IntAttribute(gemm.Node("Gemm", {"a", "b", "c"}, {"y"}, "gemm"), "transB", 1);
  absl::Status status = ImportError(gemm.Bytes());
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("op 'gemm' (Gemm): input 1 has rank 0, needs 2"));

  ModelBuilder conv;
  conv.Input("x", {7, 6, 1, 5}).Input("w", {}).Output("y");
  conv.Node("Conv", {"x", "w"}, {"y"}, "conv");
  EXPECT_THAT(ImportError(conv.Bytes()).message(), HasSubstr("op 'conv' (Conv): input 1 has rank 0, needs 4"));

  ModelBuilder transpose;
  transpose.Input("x", {1, 1, 4, 4}).Input("w", {1}).Output("y");
  IntsAttribute(transpose.Node("ConvTranspose", {"x", "w"}, {"y"}, "up"), "kernel_shape", {1, 1});
  EXPECT_THAT(ImportError(transpose.Bytes()).message(), HasSubstr("op 'up' (ConvTranspose): input 1 has rank 1"));

  ModelBuilder roi;
  roi.Input("x", {1, 3}).Input("rois", {2, 5}).Output("y");
  IntsAttribute(roi.Node("MaxRoiPool", {"x", "rois"}, {"y"}, "roi"), "pooled_shape", {});
  EXPECT_THAT(ImportError(roi.Bytes()).message(), HasSubstr("op 'roi' (MaxRoiPool): input 0 has rank 2, needs 4"));

  // MaxUnpool dereferences the type of its indices unchecked: without one,
  // the node is not inferred and the missing shape is the error.
  ModelBuilder unpool;
  unpool.Input("x", {1, 1, 4, 4}).Output("y");
  IntsAttribute(unpool.Node("MaxUnpool", {"x", "ghost"}, {"y"}, "unpool"), "kernel_shape", {2, 2});
  status = ImportError(unpool.Bytes());
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("tensor 'ghost' (input of op 'unpool') has no inferred shape"));
  // Nor with indices whose type is not a tensor type
  // (fuzz/regressions/fuzz_onnx_import/maxunpool_indices_without_tensor_type.onnx).
  ModelBuilder untyped;
  untyped.Input("x", {1, 1, 4, 4}).Output("y");
  onnx::ValueInfoProto* indices = untyped.model().mutable_graph()->add_input();
  indices->set_name("i");
  indices->mutable_type();  // no tensor type
  IntsAttribute(untyped.Node("MaxUnpool", {"x", "i"}, {"y"}, "unpool"), "kernel_shape", {2, 2});
  status = ImportError(untyped.Bytes());
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("tensor 'i' (graph input) has no inferred shape"));
}

TEST(OnnxImportTest, FuzzRegressionAxesAndRecurrentRanks) {
  // Found by fuzz/fuzz_onnx_ops; each crashed ONNX 1.12 (SIGSEGV).
  // LSTM-1 on a 1-D X reads dims 0 and 1.
  ModelBuilder lstm;
  lstm.model().mutable_opset_import(0)->set_version(1);
  lstm.Input("x", {4}).Input("w", {1, 8, 3}).Input("r", {1, 8, 2}).Output("y");
  IntAttribute(lstm.Node("LSTM", {"x", "w", "r"}, {"y"}, "lstm"), "hidden_size", 2);
  absl::Status status = ImportError(lstm.Bytes());
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("op 'lstm' (LSTM): input 0 has rank 1, needs 3"));

  // GatherND-12 with a negative batch_dims indexes dims below 0.
  ModelBuilder gather;
  gather.model().mutable_opset_import(0)->set_version(12);
  gather.Input("data", {2, 3}).Output("y");
  gather.model().mutable_graph()->add_input()->CopyFrom(gather.model().graph().input(0));
  gather.model().mutable_graph()->mutable_input(1)->set_name("indices");
  gather.model().mutable_graph()->mutable_input(1)->mutable_type()->mutable_tensor_type()->set_elem_type(
      onnx::TensorProto::INT64);
  IntAttribute(gather.Node("GatherND", {"data", "indices"}, {"y"}, "gather"), "batch_dims", -3);
  EXPECT_THAT(ImportError(gather.Bytes()).message(),
              HasSubstr("op 'gather' (GatherND): batch_dims must not be negative, found -3"));

  // LayerNormalization with an axis below -rank, or on a scalar.
  ModelBuilder norm;
  norm.model().mutable_opset_import(0)->set_version(17);
  norm.Input("x", {2, 3}).Output("y").Output("mean");
  IntAttribute(norm.Node("LayerNormalization", {"x"}, {"y", "mean"}, "norm"), "axis", -3);
  EXPECT_THAT(ImportError(norm.Bytes()).message(),
              HasSubstr("op 'norm' (LayerNormalization): axis -3 is out of range for input 0 of rank 2"));
  ModelBuilder scalar;
  scalar.model().mutable_opset_import(0)->set_version(17);
  scalar.Input("x", {}).Output("y").Output("mean");
  scalar.Node("LayerNormalization", {"x"}, {"y", "mean"}, "norm");
  EXPECT_THAT(ImportError(scalar.Bytes()).message(), HasSubstr("axis -1 is out of range for input 0 of rank 0"));

  // Any axis beyond -rank-1..rank is refused.
  ModelBuilder softmax;
  softmax.Input("x", {2, 3}).Output("y");
  IntAttribute(softmax.Node("Softmax", {"x"}, {"y"}, "softmax"), "axis", 5);
  EXPECT_THAT(ImportError(softmax.Bytes()).message(),
              HasSubstr("op 'softmax' (Softmax): axis 5 is out of range for input 0 of rank 2"));
  // In range, it imports.
  softmax.model().mutable_graph()->mutable_node(0)->mutable_attribute(0)->set_i(-2);
  absl::StatusOr<Graph> g = ImportOnnxModel(softmax.Bytes(), {});
  ASSERT_TRUE(g.ok()) << g.status();
}

TEST(OnnxImportTest, FuzzRegressionShapeInputsCannotMakeHugeRanks) {
  // ConstantOfShape of a declared [2^31] input: ONNX allocated 2^31 dims
  // (out of memory). Expand and Reshape read their shape input the same way.
  ModelBuilder constant;
  constant.model().mutable_opset_import(0)->set_version(10);
  constant.Input("shape", {int64_t{1} << 31}).Output("y");
  constant.model().mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->set_elem_type(
      onnx::TensorProto::INT64);
  constant.Node("ConstantOfShape", {"shape"}, {"y"}, "fill");
  absl::Status status = ImportError(constant.Bytes());
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(),
              HasSubstr("op 'fill' (ConstantOfShape): input 0 gives the output rank 2147483648, more than 1024"));

  ModelBuilder expand;
  expand.Input("x", {}).Input("shape", {int64_t{1} << 40}).Output("y");
  expand.model().mutable_graph()->mutable_input(1)->mutable_type()->mutable_tensor_type()->set_elem_type(
      onnx::TensorProto::INT64);
  expand.Node("Expand", {"x", "shape"}, {"y"}, "expand");
  EXPECT_THAT(ImportError(expand.Bytes()).message(), HasSubstr("op 'expand' (Expand): input 1 gives the output rank"));
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
  b.Initializer("w", {64, 64})->set_raw_data(std::string(64 * 64 * 4, '\1'));        // 16 KiB: stripped
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
  EXPECT_EQ(BytesOf(*after, "r"), 64 * 4);       // Reshape still inferred from the kept shape
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
