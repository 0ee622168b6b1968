#include "core/onnx/primitive_catalogue.h"

#include <climits>
#include <cstdint>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "core/onnx/onnx_import.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "onnx/onnx_pb.h"
#include "serenity/v1/scheduler.pb.h"

namespace serenity {
namespace {

// A small float model; initializers carry dims only (no weights).
class Model {
 public:
  Model() {
    model_.set_ir_version(8);
    model_.add_opset_import()->set_version(13);
    model_.mutable_graph()->set_name("catalogue");
  }
  Model& Input(const std::string& name, const std::vector<int64_t>& dims) {
    SetType(model_.mutable_graph()->add_input(), name, dims);
    return *this;
  }
  // A shape given in value_info (what shape inference would also find).
  Model& ValueInfo(const std::string& name, const std::vector<int64_t>& dims) {
    SetType(model_.mutable_graph()->add_value_info(), name, dims);
    return *this;
  }
  Model& Weight(const std::string& name, const std::vector<int64_t>& dims) {
    onnx::TensorProto* t = model_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(1);
    for (int64_t d : dims) t->add_dims(d);
    return *this;
  }
  Model& Output(const std::string& name) {
    model_.mutable_graph()->add_output()->set_name(name);
    return *this;
  }
  onnx::NodeProto* Node(const std::string& type, const std::vector<std::string>& inputs, const std::string& output,
                        const std::string& name) {
    onnx::NodeProto* node = model_.mutable_graph()->add_node();
    node->set_op_type(type);
    node->set_name(name);
    for (const std::string& in : inputs) node->add_input(in);
    node->add_output(output);
    return node;
  }
  static void Ints(onnx::NodeProto* node, const std::string& name, const std::vector<int64_t>& values) {
    onnx::AttributeProto* a = node->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t v : values) a->add_ints(v);
  }
  static void Int(onnx::NodeProto* node, const std::string& name, int64_t value) {
    onnx::AttributeProto* a = node->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(value);
  }

  // The catalogue of every op, by op name, through the importer.
  std::vector<std::vector<Primitive>> Catalogue() const {
    const std::string bytes = model_.SerializeAsString();
    absl::StatusOr<GraphSpec> spec = OnnxToGraphSpec(bytes, {});
    EXPECT_TRUE(spec.ok()) << spec.status();
    if (!spec.ok()) return {};
    absl::StatusOr<std::vector<std::vector<Primitive>>> out = CatalogueAlternatives(bytes, *spec);
    EXPECT_TRUE(out.ok()) << out.status();
    return out.ok() ? *out : std::vector<std::vector<Primitive>>();
  }

 private:
  static void SetType(onnx::ValueInfoProto* v, const std::string& name, const std::vector<int64_t>& dims) {
    v->set_name(name);
    onnx::TypeProto_Tensor* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(1);
    for (int64_t d : dims) t->mutable_shape()->add_dim()->set_dim_value(d);
  }
  onnx::ModelProto model_;
};

// The model's numbers, written out again from docs/primitives.md (and
// bench/make_primitives.py) for the check.
struct Expected {
  std::string name;
  double time_us;
  int64_t workspace_bytes;
  int64_t weight_bytes = 0;
};

void ExpectAlternatives(const std::vector<Primitive>& got, const std::vector<Expected>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got[i].name, want[i].name);
    EXPECT_DOUBLE_EQ(got[i].time_us, want[i].time_us) << want[i].name;
    EXPECT_EQ(got[i].workspace_bytes, want[i].workspace_bytes) << want[i].name;
    EXPECT_TRUE(got[i].layout.empty());
    EXPECT_EQ(got[i].weight_bytes, want[i].weight_bytes) << want[i].name;
  }
}

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// direct and im2col of a Conv with these dims.
std::vector<Expected> DirectIm2col(int64_t n, int64_t m, int64_t ho, int64_t wo, int64_t cg, int64_t k) {
  const double macs = static_cast<double>(n * m * ho * wo * cg * k * k);
  return {{"direct", macs / 2000, 0}, {"im2col", macs / 8000, 4 * n * cg * k * k * ho * wo}};
}

TEST(PrimitiveCatalogueTest, Conv3x3Stride1GetsWinograd) {
  // x[2,3,7,9] * w[5,3,3,3], pads 1: y[2,5,7,9].
  Model model;
  model.Input("x", {2, 3, 7, 9}).Weight("w", {5, 3, 3, 3}).Output("y");
  Model::Ints(model.Node("Conv", {"x", "w"}, "y", "conv"), "pads", {1, 1, 1, 1});
  const std::vector<std::vector<Primitive>> catalogue = model.Catalogue();
  ASSERT_EQ(catalogue.size(), 1u);
  const double macs = 2.0 * 5 * 7 * 9 * 3 * 3 * 3;
  std::vector<Expected> want = DirectIm2col(2, 5, 7, 9, 3, 3);
  const int64_t tiles2 = 2 * CeilDiv(7, 2) * CeilDiv(9, 2);  // 2 * 4 * 5
  const int64_t tiles4 = 2 * CeilDiv(7, 4) * CeilDiv(9, 4);  // 2 * 2 * 3
  // w, the op's own weight, is 4 * 5 * 3 * 9 = 540 bytes: transformed
  // 16/9 and 4 times as many.
  want.push_back({"winograd23", macs / 18000, 4 * 16 * (3 + 5) * tiles2, 960});
  want.push_back({"winograd43", macs / 32000, 4 * 36 * (3 + 5) * tiles4, 2160});
  ExpectAlternatives(catalogue[0], want);
  EXPECT_EQ(catalogue[0][2].workspace_bytes, 4 * 16 * 8 * 40);
  EXPECT_EQ(catalogue[0][3].workspace_bytes, 4 * 36 * 8 * 12);
}

TEST(PrimitiveCatalogueTest, Conv1x1Stride1IsDirectAlone) {
  Model model;
  model.Input("x", {1, 8, 5, 5}).Weight("w", {16, 8, 1, 1}).Output("y");
  model.Node("Conv", {"x", "w"}, "y", "pointwise");
  const std::vector<std::vector<Primitive>> catalogue = model.Catalogue();
  ASSERT_EQ(catalogue.size(), 1u);
  ExpectAlternatives(catalogue[0], {{"direct", 1.0 * 16 * 5 * 5 * 8 / 2000, 0}});
}

TEST(PrimitiveCatalogueTest, Conv1x1Stride2GetsIm2col) {
  // A strided 1x1 needs its patch matrix (the sampled pixels).
  Model model;
  model.Input("x", {1, 8, 6, 6}).Weight("w", {4, 8, 1, 1}).Output("y");
  Model::Ints(model.Node("Conv", {"x", "w"}, "y", "strided"), "strides", {2, 2});
  const std::vector<std::vector<Primitive>> catalogue = model.Catalogue();
  ASSERT_EQ(catalogue.size(), 1u);
  ExpectAlternatives(catalogue[0], DirectIm2col(1, 4, 3, 3, 8, 1));
}

TEST(PrimitiveCatalogueTest, StridedDilatedDepthwiseAndGroupedConvsGetNoWinograd) {
  // Reads activations made by other ops; one output shape is in value_info.
  Model model;
  model.Input("x", {1, 8, 10, 10})
      .Weight("w_s2", {8, 8, 3, 3})
      .Weight("w_dw", {8, 1, 3, 3})
      .Weight("w_g", {6, 4, 3, 3})
      .Weight("w_dil", {6, 6, 3, 3})
      .ValueInfo("s2", {1, 8, 5, 5})
      .Output("dil");
  onnx::NodeProto* s2 = model.Node("Conv", {"x", "w_s2"}, "s2", "s2");
  Model::Ints(s2, "strides", {2, 2});
  Model::Ints(s2, "pads", {1, 1, 1, 1});
  onnx::NodeProto* dw = model.Node("Conv", {"s2", "w_dw"}, "dw", "depthwise");
  Model::Int(dw, "group", 8);
  Model::Ints(dw, "pads", {1, 1, 1, 1});
  onnx::NodeProto* g = model.Node("Conv", {"dw", "w_g"}, "g", "grouped");
  Model::Int(g, "group", 2);  // 8 channels in two groups of 4, no padding: 3x3
  onnx::NodeProto* dil = model.Node("Conv", {"g", "w_dil"}, "dil", "dilated");
  Model::Ints(dil, "dilations", {2, 2});
  Model::Ints(dil, "pads", {2, 2, 2, 2});
  const std::vector<std::vector<Primitive>> catalogue = model.Catalogue();
  ASSERT_EQ(catalogue.size(), 4u);
  ExpectAlternatives(catalogue[0], DirectIm2col(1, 8, 5, 5, 8, 3));
  ExpectAlternatives(catalogue[1], DirectIm2col(1, 8, 5, 5, 1, 3));
  ExpectAlternatives(catalogue[2], DirectIm2col(1, 6, 3, 3, 4, 3));
  ExpectAlternatives(catalogue[3], DirectIm2col(1, 6, 3, 3, 6, 3));
}

TEST(PrimitiveCatalogueTest, GemmNaiveAndPacked) {
  // Gemm(A^T, B): A[5,3] transposed is [3,5]; B[5,7]: M 3, K 5, N 7.
  Model model;
  model.Input("a", {5, 3}).Weight("b", {5, 7}).Weight("c", {7}).Output("y").Output("v");
  Model::Int(model.Node("Gemm", {"a", "b", "c"}, "y", "gemm"), "transA", 1);
  // A classifier row: [1,7] by B^T of [4,7]: a matrix-vector product.
  model.Weight("fc", {4, 7}).Input("row", {1, 7});
  Model::Int(model.Node("Gemm", {"row", "fc"}, "v", "gemv"), "transB", 1);
  const std::vector<std::vector<Primitive>> catalogue = model.Catalogue();
  ASSERT_EQ(catalogue.size(), 2u);
  const double macs = 3.0 * 5 * 7;
  ExpectAlternatives(catalogue[0], {{"naive", macs / 2000, 0}, {"packed", macs / 8000, 4 * (3 * 5 + 5 * 7)}});
  ExpectAlternatives(catalogue[1], {{"naive", 1.0 * 7 * 4 / 2000, 0}});
}

TEST(PrimitiveCatalogueTest, MatMulBatchedAndVector) {
  // [2,4,3,5] x [5,6]: 8 products of [3,5] by [5,6]; a 1-D A is a row.
  Model model;
  model.Input("a", {2, 4, 3, 5}).Weight("b", {5, 6}).Input("v", {5}).Output("y").Output("z");
  model.Node("MatMul", {"a", "b"}, "y", "batched");
  model.Node("MatMul", {"v", "b"}, "z", "vector");
  model.Node("Relu", {"y"}, "r", "relu");
  model.Output("r");
  // [4,5] x [5]: a 1-D B is a column, N = 1.
  model.Input("m", {4, 5}).Output("column");
  model.Node("MatMul", {"m", "v"}, "column", "column");
  const std::vector<std::vector<Primitive>> catalogue = model.Catalogue();
  ASSERT_EQ(catalogue.size(), 4u);
  const double macs = 8.0 * 3 * 5 * 6;
  ExpectAlternatives(catalogue[0], {{"naive", macs / 2000, 0}, {"packed", macs / 8000, 4 * (3 * 5 + 5 * 6)}});
  ExpectAlternatives(catalogue[1], {{"naive", 30.0 / 2000, 0}});
  EXPECT_TRUE(catalogue[2].empty());  // not a Conv, Gemm or MatMul
  ExpectAlternatives(catalogue[3], {{"naive", 20.0 / 2000, 0}});
}

TEST(PrimitiveCatalogueTest, NumbersThatDoNotFitGiveNothing) {
  ConvGeometry huge;
  huge.n = huge.m = huge.ho = huge.wo = huge.cg = int64_t{1} << 12;  // 2^60 MACs: beyond 10^12 us
  EXPECT_TRUE(ConvCatalogue(huge).empty());
  huge.kh = huge.kw = int64_t{1} << 20;  // MACs beyond 2^63
  EXPECT_TRUE(ConvCatalogue(huge).empty());
  MatMulGeometry wide{1, int64_t{1} << 40, int64_t{1} << 40, 2};
  EXPECT_TRUE(MatMulCatalogue(wide).empty());
  ConvGeometry small;
  EXPECT_EQ(ConvCatalogue(small).size(), 1u);  // 1x1 stride 1: direct
}

TEST(PrimitiveCatalogueTest, NeedsOneOpPerNode) {
  onnx::GraphProto graph;
  graph.add_node()->set_op_type("Relu");
  EXPECT_EQ(CatalogueAlternatives(graph, GraphSpec()).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CatalogueAlternatives("not a model", GraphSpec()).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(PrimitiveCatalogueTest, WinogradFilterBytesRoundsUp) {
  EXPECT_EQ(WinogradFilterBytes(2, 36 * 9), std::optional<int64_t>(36 * 16));
  EXPECT_EQ(WinogradFilterBytes(4, 36 * 9), std::optional<int64_t>(36 * 36));
  EXPECT_EQ(WinogradFilterBytes(2, 10), std::optional<int64_t>(18));  // 160 / 9 = 17.8
  EXPECT_EQ(WinogradFilterBytes(4, 10), std::optional<int64_t>(40));
  EXPECT_EQ(WinogradFilterBytes(2, 0), std::optional<int64_t>(0));
  EXPECT_EQ(WinogradFilterBytes(2, INT64_MAX / 16 * 9), std::optional<int64_t>(INT64_MAX / 16 * 16));
  EXPECT_EQ(WinogradFilterBytes(2, INT64_MAX), std::nullopt);
  EXPECT_EQ(WinogradFilterBytes(4, INT64_MAX / 2), std::nullopt);
  EXPECT_EQ(WinogradFilterBytes(3, 9), std::nullopt);
  EXPECT_EQ(WinogradFilterBytes(2, -9), std::nullopt);
}

// On a real Conv with a float16 filter and a bias (its own weights) and one
// whose filter another Conv reads too: built into a Graph, the Winograd
// alternatives' weight_bytes are OwnWeightBytes with the filter's bytes
// transformed, and Graph::Build accepts them.
TEST(PrimitiveCatalogueTest, WinogradWeightBytesReplaceTheFilter) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(13);
  onnx::GraphProto* g = model.mutable_graph();
  g->set_name("weights");
  const auto value = [](onnx::ValueInfoProto* v, const std::string& name, const std::vector<int64_t>& dims) {
    v->set_name(name);
    onnx::TypeProto_Tensor* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(10);  // float16
    for (int64_t d : dims) t->mutable_shape()->add_dim()->set_dim_value(d);
  };
  const auto weight = [&](const std::string& name, const std::vector<int64_t>& dims) {
    onnx::TensorProto* t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(10);
    for (int64_t d : dims) t->add_dims(d);
  };
  const auto conv = [&](const std::string& name, const std::vector<std::string>& inputs, const std::string& out) {
    onnx::NodeProto* node = g->add_node();
    node->set_op_type("Conv");
    node->set_name(name);
    for (const std::string& in : inputs) node->add_input(in);
    node->add_output(out);
    Model::Ints(node, "pads", {1, 1, 1, 1});
  };
  value(g->add_input(), "x", {1, 4, 6, 6});
  weight("w", {4, 4, 3, 3});  // own: 2 * 144 = 288 bytes
  weight("b", {4});           // own: 8 bytes
  weight("shared", {4, 4, 3, 3});
  conv("own", {"x", "w", "b"}, "y");
  conv("first", {"y", "shared"}, "z1");
  conv("second", {"z1", "shared"}, "z2");
  g->add_output()->set_name("z2");
  const std::string bytes = model.SerializeAsString();
  absl::StatusOr<GraphSpec> spec = OnnxToGraphSpec(bytes, {});
  ASSERT_TRUE(spec.ok()) << spec.status();
  absl::StatusOr<std::vector<std::vector<Primitive>>> catalogue = CatalogueAlternatives(bytes, *spec);
  ASSERT_TRUE(catalogue.ok()) << catalogue.status();
  for (size_t i = 0; i < spec->ops.size(); ++i) spec->ops[i].alternatives = (*catalogue)[i];
  absl::StatusOr<Graph> graph = Graph::Build(*spec);
  ASSERT_TRUE(graph.ok()) << graph.status();
  ASSERT_EQ(graph->num_ops(), 3);
  const std::vector<Primitive>& own = graph->op(0).alternatives;
  ASSERT_EQ(own.size(), 4u);
  const int64_t filter = graph->tensor(graph->op(0).inputs[1]).bytes;
  EXPECT_EQ(filter, 2 * 4 * 4 * 9);
  EXPECT_EQ(OwnWeightBytes(*graph, 0), filter + 8);
  EXPECT_EQ(own[0].weight_bytes, 0);  // direct
  EXPECT_EQ(own[1].weight_bytes, 0);  // im2col
  EXPECT_EQ(own[2].name, "winograd23");
  EXPECT_EQ(own[2].weight_bytes, OwnWeightBytes(*graph, 0) - filter + filter * 16 / 9);
  EXPECT_EQ(own[2].weight_bytes, 512 + 8);
  EXPECT_EQ(own[3].name, "winograd43");
  EXPECT_EQ(own[3].weight_bytes, 4 * filter + 8);
  for (OpId u : {1, 2}) {  // "shared" is no one's own: its weights stay as given
    ASSERT_EQ(graph->op(u).alternatives.size(), 4u);
    EXPECT_EQ(OwnWeightBytes(*graph, u), 0);
    for (const Primitive& p : graph->op(u).alternatives) EXPECT_EQ(p.weight_bytes, 0) << p.name;
  }
}

std::string Read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << path;
  std::stringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

// The Conv model is bench/make_primitives.py's: on the repository's sample
// models, the catalogue gives every Conv exactly the alternatives the script
// wrote into testdata/<model>.primitives.json (regenerate with
// `/usr/bin/python3 bench/make_primitives.py models/M.onnx >
// core/onnx/testdata/M.primitives.json`).
TEST(PrimitiveCatalogueTest, ConvsMatchBenchMakePrimitives) {
  for (const char* name : {"inception_cell", "mobilenet_heads", "randwire_small"}) {
    SCOPED_TRACE(name);
    const std::string bytes = Read(absl::StrCat(SERENITY_SOURCE_DIR "/models/", name, ".onnx"));
    v1::PrimitiveSet script;
    ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(
                    Read(absl::StrCat(SERENITY_SOURCE_DIR "/core/onnx/testdata/", name, ".primitives.json")), &script)
                    .ok());
    absl::StatusOr<GraphSpec> spec = OnnxToGraphSpec(bytes, {});
    ASSERT_TRUE(spec.ok()) << spec.status();
    absl::StatusOr<std::vector<std::vector<Primitive>>> catalogue = CatalogueAlternatives(bytes, *spec);
    ASSERT_TRUE(catalogue.ok()) << catalogue.status();
    absl::flat_hash_map<std::string, const v1::OpPrimitives*> by_op;
    for (const v1::OpPrimitives& entry : script.ops()) by_op[entry.op()] = &entry;
    size_t convs = 0;
    size_t winograd_weights = 0;
    for (size_t i = 0; i < spec->ops.size(); ++i) {
      if (spec->ops[i].type != "Conv") continue;
      ++convs;
      auto it = by_op.find(spec->ops[i].name);
      ASSERT_NE(it, by_op.end()) << spec->ops[i].name;
      const std::vector<Primitive>& got = (*catalogue)[i];
      ASSERT_EQ(got.size(), static_cast<size_t>(it->second->alternatives_size())) << spec->ops[i].name;
      for (size_t k = 0; k < got.size(); ++k) {
        const v1::Primitive& want = it->second->alternatives(static_cast<int>(k));
        EXPECT_EQ(got[k].name, want.name());
        EXPECT_EQ(got[k].time_us, want.time_us()) << spec->ops[i].name << " " << want.name();
        EXPECT_EQ(got[k].workspace_bytes, want.workspace_bytes()) << spec->ops[i].name << " " << want.name();
        EXPECT_EQ(got[k].weight_bytes, want.weight_bytes()) << spec->ops[i].name << " " << want.name();
        winograd_weights += got[k].weight_bytes > 0 ? 1 : 0;
      }
    }
    EXPECT_EQ(convs, static_cast<size_t>(script.ops_size()));
    EXPECT_GT(convs, 0u);
    EXPECT_GT(winograd_weights, 0u);  // the models' 3x3 convolutions have weights of their own
  }
}

}  // namespace
}  // namespace serenity
