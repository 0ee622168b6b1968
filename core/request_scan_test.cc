#include "core/request_scan.h"

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>

#include "core/onnx/onnx_import.h"
#include "core/plan_proto.h"
#include "gmock/gmock.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/stubs/logging.h"
#include "google/protobuf/wire_format_lite.h"
#include "gtest/gtest.h"
#include "onnx/onnx_pb.h"
#include "serenity/v1/scheduler.pb.h"
#include "tests/testing/test_graph.h"

namespace serenity {
namespace {

using ::google::protobuf::internal::WireFormatLite;
using ::testing::HasSubstr;

const std::string kModels = SERENITY_SHARED_DIR "/bench/models/";

// The field numbers request_scan.cc spells out for ONNX.
static_assert(onnx::ModelProto::kGraphFieldNumber == 7);
static_assert(onnx::GraphProto::kNodeFieldNumber == 1);
static_assert(onnx::GraphProto::kNameFieldNumber == 2);
static_assert(onnx::GraphProto::kInitializerFieldNumber == 5);
static_assert(onnx::GraphProto::kSparseInitializerFieldNumber == 15);
static_assert(onnx::GraphProto::kInputFieldNumber == 11);
static_assert(onnx::GraphProto::kOutputFieldNumber == 12);
static_assert(onnx::GraphProto::kValueInfoFieldNumber == 13);
static_assert(onnx::NodeProto::kInputFieldNumber == 1);
static_assert(onnx::NodeProto::kOutputFieldNumber == 2);
static_assert(onnx::NodeProto::kNameFieldNumber == 3);
static_assert(onnx::NodeProto::kOpTypeFieldNumber == 4);
static_assert(onnx::ValueInfoProto::kNameFieldNumber == 1);
static_assert(onnx::TensorProto::kNameFieldNumber == 8);
static_assert(onnx::TensorProto::kFloatDataFieldNumber == 4);
static_assert(onnx::TensorProto::kInt32DataFieldNumber == 5);
static_assert(onnx::TensorProto::kStringDataFieldNumber == 6);
static_assert(onnx::TensorProto::kInt64DataFieldNumber == 7);
static_assert(onnx::TensorProto::kRawDataFieldNumber == 9);
static_assert(onnx::TensorProto::kDoubleDataFieldNumber == 10);
static_assert(onnx::TensorProto::kUint64DataFieldNumber == 11);

// The shape a parsed request has, counted on the message; wire_bytes is
// `wire_bytes` when given, else the message's serialized size.
RequestShape ShapeOf(const v1::PlanRequest& request, int64_t wire_bytes = -1) {
  RequestShape s;
  s.wire_bytes = wire_bytes >= 0 ? wire_bytes : static_cast<int64_t>(request.ByteSizeLong());
  const v1::Graph& g = request.graph();
  s.ops = g.ops_size();
  s.tensors = g.tensors_size();
  s.graph_inputs = g.inputs_size();
  s.graph_outputs = g.outputs_size();
  s.name_bytes = static_cast<int64_t>(g.name().size());
  for (const v1::Op& op : g.ops()) {
    s.op_inputs += op.inputs_size();
    s.op_outputs += op.outputs_size();
    s.name_bytes += static_cast<int64_t>(op.name().size() + op.type().size());
    for (const std::string& name : op.inputs()) s.name_bytes += static_cast<int64_t>(name.size());
    for (const std::string& name : op.outputs()) s.name_bytes += static_cast<int64_t>(name.size());
  }
  for (const v1::Tensor& t : g.tensors()) {
    s.shape_dims += t.shape_size();
    s.name_bytes += static_cast<int64_t>(t.name().size());
  }
  for (const std::string& name : g.inputs()) s.name_bytes += static_cast<int64_t>(name.size());
  for (const std::string& name : g.outputs()) s.name_bytes += static_cast<int64_t>(name.size());
  s.option_entries = request.options().dim_values_size() + request.options().workspace_bytes_size();
  s.given_order = request.given_order().indices_size() + request.given_order().names_size();
  for (const std::string& name : request.given_order().names()) s.name_bytes += static_cast<int64_t>(name.size());
  return s;
}

// Compares the graph counts; name_bytes only where the request carries no
// option maps (their entries are counted whole, keys and values).
void ExpectSameCounts(const RequestShape& got, const RequestShape& want, bool names = true) {
  EXPECT_EQ(got.wire_bytes, want.wire_bytes);
  EXPECT_EQ(got.onnx, want.onnx);
  EXPECT_EQ(got.ops, want.ops);
  EXPECT_EQ(got.tensors, want.tensors);
  EXPECT_EQ(got.graph_inputs, want.graph_inputs);
  EXPECT_EQ(got.graph_outputs, want.graph_outputs);
  EXPECT_EQ(got.op_inputs, want.op_inputs);
  EXPECT_EQ(got.op_outputs, want.op_outputs);
  EXPECT_EQ(got.shape_dims, want.shape_dims);
  if (names) {
    EXPECT_EQ(got.name_bytes, want.name_bytes);
  }
  EXPECT_EQ(got.option_entries, want.option_entries);
  EXPECT_EQ(got.given_order, want.given_order);
}

v1::PlanRequest RandomRequest(int num_ops, std::mt19937& rng) {
  v1::PlanRequest request;
  *request.mutable_graph() = GraphSpecToProto(testing::RandomDag(num_ops, rng));
  request.set_model_name("random");
  request.mutable_options()->set_algorithm("baseline");
  return request;
}

TEST(RequestScanTest, CountsEqualTheParsedMessageOnRandomGraphs) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    v1::PlanRequest request = RandomRequest(1 + trial % 60, rng);
    if (trial % 3 == 0) {
      request.mutable_given_order()->add_indices(0);
      request.mutable_given_order()->add_indices(300);  // a two-byte varint
      request.mutable_given_order()->add_names("op_name");
    }
    const std::string bytes = request.SerializeAsString();
    absl::StatusOr<RequestShape> shape = ScanPlanRequest(bytes);
    ASSERT_TRUE(shape.ok()) << shape.status();
    ExpectSameCounts(*shape, ShapeOf(request));
    EXPECT_GT(shape->ops, 0);
    EXPECT_GT(shape->shape_dims, -1);
  }
}

TEST(RequestScanTest, CountsOptionEntries) {
  std::mt19937 rng(1);
  v1::PlanRequest request = RandomRequest(5, rng);
  (*request.mutable_options()->mutable_dim_values())["batch"] = 1;
  (*request.mutable_options()->mutable_workspace_bytes())["a"] = 10;
  (*request.mutable_options()->mutable_workspace_bytes())["b"] = 20;
  absl::StatusOr<RequestShape> shape = ScanPlanRequest(request.SerializeAsString());
  ASSERT_TRUE(shape.ok()) << shape.status();
  EXPECT_EQ(shape->option_entries, 3);
  ExpectSameCounts(*shape, ShapeOf(request), /*names=*/false);
}

TEST(RequestScanTest, ShapeDimsCountPackedAndUnpackedValues) {
  v1::PlanRequest request;
  v1::Tensor* t = request.mutable_graph()->add_tensors();
  t->set_name("t");
  for (int64_t d : {int64_t{1}, int64_t{300}, int64_t{70000}, int64_t{-1}, int64_t{1} << 40}) t->add_shape(d);
  std::string bytes = request.SerializeAsString();
  absl::StatusOr<RequestShape> shape = ScanPlanRequest(bytes);
  ASSERT_TRUE(shape.ok()) << shape.status();
  EXPECT_EQ(shape->shape_dims, 5);
  EXPECT_EQ(shape->tensors, 1);

  // The same tensor with its dims unpacked (one varint field each), which
  // the parser accepts too.
  std::string tensor;
  {
    google::protobuf::io::StringOutputStream out(&tensor);
    google::protobuf::io::CodedOutputStream coded(&out);
    WireFormatLite::WriteString(v1::Tensor::kNameFieldNumber, "t", &coded);
    for (int64_t d : {int64_t{7}, int64_t{8}, int64_t{9}})
      WireFormatLite::WriteInt64(v1::Tensor::kShapeFieldNumber, d, &coded);
  }
  std::string graph;
  {
    google::protobuf::io::StringOutputStream out(&graph);
    google::protobuf::io::CodedOutputStream coded(&out);
    WireFormatLite::WriteBytes(v1::Graph::kTensorsFieldNumber, tensor, &coded);
  }
  std::string unpacked;
  {
    google::protobuf::io::StringOutputStream out(&unpacked);
    google::protobuf::io::CodedOutputStream coded(&out);
    WireFormatLite::WriteBytes(v1::PlanRequest::kGraphFieldNumber, graph, &coded);
  }
  v1::PlanRequest parsed;
  ASSERT_TRUE(parsed.ParseFromString(unpacked));
  ASSERT_EQ(parsed.graph().tensors(0).shape_size(), 3);
  shape = ScanPlanRequest(unpacked);
  ASSERT_TRUE(shape.ok()) << shape.status();
  EXPECT_EQ(shape->shape_dims, 3);
}

TEST(RequestScanTest, ScansAScoreRequestsPlanRequest) {
  std::mt19937 rng(3);
  v1::ScoreRequest score;
  score.set_id("candidate-1");
  *score.mutable_request() = RandomRequest(30, rng);
  score.set_full_plan(true);
  const std::string bytes = score.SerializeAsString();
  absl::StatusOr<RequestShape> shape = ScanScoreRequest(bytes);
  ASSERT_TRUE(shape.ok()) << shape.status();
  RequestShape want = ShapeOf(score.request());
  want.wire_bytes = static_cast<int64_t>(bytes.size());
  ExpectSameCounts(*shape, want);

  v1::ScoreRequest empty;
  empty.set_id("x");
  shape = ScanScoreRequest(empty.SerializeAsString());
  ASSERT_TRUE(shape.ok()) << shape.status();
  EXPECT_EQ(shape->ops, 0);
  EXPECT_EQ(shape->wire_bytes, static_cast<int64_t>(empty.ByteSizeLong()));

  // A PlanRequest is not read as a ScoreRequest's fields: its graph (field
  // 1) would be the id there, a string; the scan then finds no request.
  shape = ScanScoreRequest(score.request().SerializeAsString());
  if (shape.ok()) {
    EXPECT_EQ(shape->ops, 0);
  }
}

TEST(RequestScanTest, RepeatedGraphFieldsMergeAndALaterModelReplacesTheGraph) {
  std::mt19937 rng(5);
  v1::PlanRequest a = RandomRequest(10, rng);
  v1::PlanRequest b = RandomRequest(7, rng);
  const std::string merged = a.SerializeAsString() + b.SerializeAsString();
  v1::PlanRequest parsed;
  ASSERT_TRUE(parsed.ParseFromString(merged));
  absl::StatusOr<RequestShape> shape = ScanPlanRequest(merged);
  ASSERT_TRUE(shape.ok()) << shape.status();
  ExpectSameCounts(*shape, ShapeOf(parsed, static_cast<int64_t>(merged.size())));
  EXPECT_EQ(shape->ops, 17);

  v1::PlanRequest onnx;
  onnx::ModelProto model;
  model.mutable_graph()->add_node()->set_op_type("Relu");
  onnx.set_onnx_model(model.SerializeAsString());
  shape = ScanPlanRequest(a.SerializeAsString() + onnx.SerializeAsString());
  ASSERT_TRUE(shape.ok()) << shape.status();
  EXPECT_TRUE(shape->onnx);
  EXPECT_EQ(shape->ops, 1);
  // And a Graph after the ONNX model replaces it again.
  shape = ScanPlanRequest(onnx.SerializeAsString() + b.SerializeAsString());
  ASSERT_TRUE(shape.ok()) << shape.status();
  EXPECT_FALSE(shape->onnx);
  EXPECT_EQ(shape->ops, 7);
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(RequestScanTest, CountsTheSharedOnnxModels) {
  int models = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kModels)) {
    if (entry.path().extension() != ".onnx") continue;
    SCOPED_TRACE(entry.path().string());
    ++models;
    const std::string bytes = ReadFile(entry.path().string());
    onnx::ModelProto model;
    ASSERT_TRUE(model.ParseFromString(bytes));
    const onnx::GraphProto& g = model.graph();

    v1::PlanRequest request;
    request.set_onnx_model(bytes);
    request.set_model_name(entry.path().filename().string());
    absl::StatusOr<RequestShape> shape = ScanPlanRequest(request.SerializeAsString());
    ASSERT_TRUE(shape.ok()) << shape.status();
    EXPECT_TRUE(shape->onnx);
    EXPECT_EQ(shape->wire_bytes, static_cast<int64_t>(request.ByteSizeLong()));
    EXPECT_EQ(shape->onnx_model_bytes, static_cast<int64_t>(bytes.size()));
    EXPECT_EQ(shape->ops, g.node_size());
    EXPECT_EQ(shape->graph_inputs, g.input_size());
    EXPECT_EQ(shape->graph_outputs, g.output_size());
    EXPECT_EQ(shape->onnx_value_infos, g.value_info_size());
    EXPECT_EQ(shape->onnx_initializers, g.initializer_size() + g.sparse_initializer_size());
    int64_t op_inputs = 0, op_outputs = 0, names = static_cast<int64_t>(g.name().size());
    for (const onnx::NodeProto& node : g.node()) {
      op_inputs += node.input_size();
      op_outputs += node.output_size();
      names += static_cast<int64_t>(node.name().size() + node.op_type().size());
      for (const std::string& s : node.input()) names += static_cast<int64_t>(s.size());
      for (const std::string& s : node.output()) names += static_cast<int64_t>(s.size());
    }
    int64_t payload = 0;
    for (const onnx::TensorProto& t : g.initializer()) {
      names += static_cast<int64_t>(t.name().size());
      payload += static_cast<int64_t>(t.raw_data().size());
    }
    for (const auto* list : {&g.input(), &g.output(), &g.value_info()}) {
      for (const onnx::ValueInfoProto& v : *list) names += static_cast<int64_t>(v.name().size());
    }
    EXPECT_EQ(shape->op_inputs, op_inputs);
    EXPECT_EQ(shape->op_outputs, op_outputs);
    EXPECT_EQ(shape->tensors, g.initializer_size() + g.sparse_initializer_size() + g.input_size() + op_outputs);
    EXPECT_EQ(shape->name_bytes, names);
    EXPECT_GE(shape->onnx_initializer_bytes, payload);

    // The tensor count bounds the graph the import builds.
    absl::StatusOr<GraphSpec> spec = OnnxToGraphSpec(bytes, {});
    ASSERT_TRUE(spec.ok()) << spec.status();
    EXPECT_EQ(shape->ops, static_cast<int64_t>(spec->ops.size()));
    EXPECT_GE(shape->tensors, static_cast<int64_t>(spec->tensors.size()));
  }
  EXPECT_GT(models, 10);
}

TEST(RequestScanTest, CountsInitializerPayloads) {
  onnx::ModelProto model;
  onnx::GraphProto* g = model.mutable_graph();
  g->add_node()->set_op_type("Relu");
  onnx::TensorProto* raw = g->add_initializer();
  raw->set_name("w");
  raw->set_raw_data(std::string(100000, 'x'));
  onnx::TensorProto* floats = g->add_initializer();
  floats->set_name("f");
  for (int i = 0; i < 1000; ++i) floats->add_float_data(1.0f);
  v1::PlanRequest request;
  request.set_onnx_model(model.SerializeAsString());
  absl::StatusOr<RequestShape> shape = ScanPlanRequest(request.SerializeAsString());
  ASSERT_TRUE(shape.ok()) << shape.status();
  EXPECT_EQ(shape->onnx_initializers, 2);
  // Payloads as on the wire: lengths with their tags and length prefixes.
  EXPECT_GE(shape->onnx_initializer_bytes, 100000 + 4000);
  EXPECT_LE(shape->onnx_initializer_bytes, 100000 + 4000 + 16);
}

TEST(RequestScanTest, TruncatedRequestsAreInvalidArguments) {
  std::mt19937 rng(11);
  v1::PlanRequest request = RandomRequest(20, rng);
  request.mutable_given_order()->add_indices(3);
  const std::string bytes = request.SerializeAsString();
  int refused = 0;
  for (size_t n = 0; n < bytes.size(); ++n) {
    const std::string prefix = bytes.substr(0, n);
    v1::PlanRequest parsed;
    const bool parses = parsed.ParseFromString(prefix);
    absl::StatusOr<RequestShape> shape = ScanPlanRequest(prefix);
    if (parses) {
      ASSERT_TRUE(shape.ok()) << "prefix " << n << ": " << shape.status();
      ExpectSameCounts(*shape, ShapeOf(parsed, static_cast<int64_t>(n)));
    } else if (!shape.ok()) {
      ++refused;
      EXPECT_EQ(shape.status().code(), absl::StatusCode::kInvalidArgument);
      EXPECT_THAT(shape.status().message(), HasSubstr("the request is not a valid serenity.v1.PlanRequest message"));
    }
  }
  // Cut inside the graph: the outer length runs past the end.
  EXPECT_GT(refused, static_cast<int>(bytes.size()) / 2);
  absl::StatusOr<RequestShape> cut = ScanPlanRequest(bytes.substr(0, bytes.size() / 2));
  EXPECT_EQ(cut.status().code(), absl::StatusCode::kInvalidArgument);
}

// Random bit flips and garbage: never a crash; whatever the parser accepts
// the scan accepts, with the parsed message's counts.
TEST(RequestScanTest, CorruptedRequestsAreRefusedOrCountedLikeTheParser) {
  google::protobuf::LogSilencer quiet;  // the parser logs every bad UTF-8 string
  std::mt19937 rng(13);
  int both_ok = 0, refused = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    std::string bytes = RandomRequest(1 + trial % 12, rng).SerializeAsString();
    if (trial % 10 == 0) {
      for (char& c : bytes) c = static_cast<char>(rng());
    } else {
      const int flips = 1 + trial % 4;
      for (int f = 0; f < flips; ++f) {
        bytes[rng() % bytes.size()] ^= static_cast<char>(1 << (rng() % 8));
      }
    }
    v1::PlanRequest parsed;
    const bool parses = parsed.ParseFromString(bytes);
    absl::StatusOr<RequestShape> shape = ScanPlanRequest(bytes);
    if (!shape.ok()) {
      ++refused;
      // The one refusal the parser does not share: onnx_model bytes (a
      // flipped tag can turn the graph into them) are walked too.
      if (parses && parsed.model_case() == v1::PlanRequest::kOnnxModel) {
        EXPECT_THAT(shape.status().message(), HasSubstr("onnx_model is not a valid ONNX ModelProto"));
        continue;
      }
      EXPECT_FALSE(parses) << "trial " << trial << ": " << shape.status();
      EXPECT_EQ(shape.status().code(), absl::StatusCode::kInvalidArgument);
      continue;
    }
    if (!parses) continue;
    ++both_ok;
    if (shape->onnx) {
      EXPECT_EQ(parsed.model_case(), v1::PlanRequest::kOnnxModel);
      continue;
    }
    SCOPED_TRACE(trial);
    ExpectSameCounts(*shape, ShapeOf(parsed, static_cast<int64_t>(bytes.size())), /*names=*/false);
  }
  EXPECT_GT(both_ok, 100);
  EXPECT_GT(refused, 100);
}

TEST(RequestScanTest, RefusesBadFraming) {
  auto code = [](const std::string& bytes) { return ScanPlanRequest(bytes).status().code(); };
  const auto kInvalid = absl::StatusCode::kInvalidArgument;
  EXPECT_EQ(code(""), absl::StatusCode::kOk);             // the empty message
  EXPECT_EQ(code(std::string("\x00", 1)), kInvalid);      // tag 0
  EXPECT_EQ(code("\x0a\xff\xff\xff\xff\x0f"), kInvalid);  // graph of 4 GiB
  EXPECT_EQ(code("\x0a\x05\x12\x10"), kInvalid);          // op runs past its graph
  EXPECT_EQ(code("\x0c"), kInvalid);                      // end group at top level
  EXPECT_EQ(code("\x0f"), kInvalid);                      // wire type 7
  EXPECT_EQ(code("\x0b"), kInvalid);                      // group never ended
  EXPECT_EQ(code("\x08\x80\x80"), kInvalid);              // varint cut short
  EXPECT_EQ(code("\x0a\x03\x1a\x02\x12"), kInvalid);      // packed... tensor name cut
  // Groups nested deeper than the parser allows (its recursion limit, 100).
  std::string deep;
  for (int i = 0; i < 5000; ++i) deep += "\x33";  // start group, field 6
  for (int i = 0; i < 5000; ++i) deep += "\x34";  // end group, field 6
  EXPECT_EQ(code(deep), kInvalid);
  v1::PlanRequest parsed;
  EXPECT_FALSE(parsed.ParseFromString(deep));
  // A packed dim list ending inside a varint.
  EXPECT_EQ(code("\x0a\x06\x1a\x04\x12\x02\x01\x80"), kInvalid);
  // onnx_model bytes that are not a ModelProto name ONNX.
  absl::Status bad_onnx = ScanPlanRequest("\x12\x02\x3a\x05").status();
  EXPECT_EQ(bad_onnx.code(), kInvalid);
  EXPECT_THAT(bad_onnx.message(), HasSubstr("onnx_model is not a valid ONNX ModelProto"));
}

// Writes a PlanRequest whose graph has `n` ops and `n` tensors straight to
// bytes (the repeated entries of one Graph message concatenated), without
// ever holding the message.
std::string HugeRequest(int n) {
  std::string op;
  {
    v1::Graph one;
    v1::Op* o = one.add_ops();
    o->set_name("op_000000");
    o->set_type("Relu");
    o->add_inputs("t_000000");
    o->add_outputs("t_000001");
    v1::Tensor* t = one.add_tensors();
    t->set_name("t_000001");
    t->add_shape(1);
    t->add_shape(64);
    op = one.SerializeAsString();
  }
  std::string graph;
  graph.reserve(op.size() * static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) graph += op;
  std::string out;
  google::protobuf::io::StringOutputStream stream(&out);
  google::protobuf::io::CodedOutputStream coded(&stream);
  WireFormatLite::WriteBytes(v1::PlanRequest::kGraphFieldNumber, graph, &coded);
  coded.Trim();
  return out;
}

TEST(RequestScanTest, CountsAMillionOpRequestWithoutBuildingIt) {
  const int n = 1000000;
  const std::string bytes = HugeRequest(n);
  absl::StatusOr<RequestShape> shape = ScanPlanRequest(bytes);
  ASSERT_TRUE(shape.ok()) << shape.status();
  EXPECT_EQ(shape->ops, n);
  EXPECT_EQ(shape->tensors, n);
  EXPECT_EQ(shape->op_inputs, n);
  EXPECT_EQ(shape->op_outputs, n);
  EXPECT_EQ(shape->shape_dims, 2 * n);
  EXPECT_EQ(shape->name_bytes, int64_t{n} * (9 + 4 + 8 + 8 + 8));
  EXPECT_EQ(shape->wire_bytes, static_cast<int64_t>(bytes.size()));
  // Reachability's bitsets are capped (no n^2/4 bytes): what remains grows
  // linearly, about 1,000 bytes per op and more.
  EXPECT_GT(EstimatePlanningBytes(*shape), int64_t{1000} * n);
  EXPECT_LT(EstimatePlanningBytes(*shape), int64_t{n} * n / 4);
}

TEST(RequestScanTest, EstimateGrowsWithTheGraph) {
  std::mt19937 rng(17);
  int64_t last = 0;
  for (int n : {10, 100, 1000}) {
    absl::StatusOr<RequestShape> shape = ScanPlanRequest(RandomRequest(n, rng).SerializeAsString());
    ASSERT_TRUE(shape.ok());
    const int64_t estimate = EstimatePlanningBytes(*shape);
    EXPECT_GT(estimate, last);
    EXPECT_GT(estimate, shape->wire_bytes);
    // The build's part leaves out reachability and the planner's buffers.
    EXPECT_GT(EstimateBuildBytes(*shape), shape->wire_bytes);
    EXPECT_LT(EstimateBuildBytes(*shape), estimate);
    last = estimate;
  }
  EXPECT_GT(EstimatePlanningBytes(RequestShape{}), 0);
}

}  // namespace
}  // namespace serenity
