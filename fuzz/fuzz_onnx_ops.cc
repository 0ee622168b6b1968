// libFuzzer target: structure-aware ONNX import. The bytes choose one ONNX op
// schema (any version, any domain ONNX knows), its inputs (typed graph inputs
// of random rank and dims, small constant initializers, or omitted), its
// outputs and its attributes; the model is then imported with
// OnnxToGraphSpec and built with Graph::Build.
//
// ONNX's shape inference lives in the uninstrumented system libonnx, so
// byte-level mutation of whole models (fuzz_onnx_import) reaches few of its
// op-specific paths; building one well-formed node per input reaches them
// all. Any crash, hang or sanitizer report is a bug in the importer's guards
// (core/onnx/onnx_import.cc).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/graph/graph.h"
#include "core/onnx/onnx_import.h"
#include "fuzzer/FuzzedDataProvider.h"
#include "onnx/defs/schema.h"
#include "onnx/onnx_pb.h"

namespace {

const std::vector<onnx::OpSchema>& Schemas() {
  static const auto* schemas = new std::vector<onnx::OpSchema>(onnx::OpSchemaRegistry::get_all_schemas_with_history());
  return *schemas;
}

int64_t PickInt(FuzzedDataProvider& in) {
  static constexpr int64_t kInts[] = {
      -3, -2, -1, 0, 1, 2, 3, 4, 5, 8, 64, int64_t{1} << 31, int64_t{1} << 32, int64_t{1} << 62, INT64_MAX, INT64_MIN};
  return in.ConsumeBool() ? in.PickValueInArray(kInts) : in.ConsumeIntegralInRange<int64_t>(-4, 16);
}

int64_t PickDim(FuzzedDataProvider& in) {
  static constexpr int64_t kDims[] = {0, 1, 1, 2, 3, 4, 5, 7, 8, 16, 224, int64_t{1} << 31, int64_t{1} << 40};
  return in.PickValueInArray(kDims);
}

std::string PickString(FuzzedDataProvider& in) {
  static const char* const kStrings[] = {
      "",         "SAME_UPPER", "SAME_LOWER", "VALID",      "NOTSET",       "constant",      "reflect", "edge",
      "nearest",  "linear",     "cubic",      "half_pixel", "asymmetric",   "align_corners", "floor",   "ceil",
      "DCR",      "CRD",        "ij,jk->ik",  "ii->i",      "...ij->...ji", "bij,bjk->bik",  "i,i",     "tanh",
      "Sigmoid",  "relu",       "none",       "mean",       "sum",          "max",           "LEFT",    "RIGHT",
      "bilinear", "zeros",      "border"};
  return in.PickValueInArray(kStrings);
}

int32_t PickElemType(FuzzedDataProvider& in) {
  static constexpr int32_t kTypes[] = {1, 1, 1, 7, 7, 6, 9, 10, 11, 2, 3, 8, 16, 0};
  return in.PickValueInArray(kTypes);
}

void FillTensor(FuzzedDataProvider& in, onnx::TensorProto* t) {
  const int32_t type = in.ConsumeBool() ? onnx::TensorProto::INT64 : PickElemType(in);
  t->set_data_type(type);
  const int rank = in.ConsumeIntegralInRange(0, 2);
  int64_t count = 1;
  for (int d = 0; d < rank; ++d) {
    const int64_t dim = in.ConsumeIntegralInRange<int64_t>(0, 4);
    t->add_dims(dim);
    count *= dim;
  }
  for (int64_t i = 0; i < count; ++i) {
    switch (type) {
      case onnx::TensorProto::INT64:
        t->add_int64_data(PickInt(in));
        break;
      case onnx::TensorProto::FLOAT:
        t->add_float_data(static_cast<float>(PickInt(in)));
        break;
      case onnx::TensorProto::STRING:
        t->add_string_data(PickString(in));
        break;
      case onnx::TensorProto::DOUBLE:
        t->add_double_data(static_cast<double>(PickInt(in)));
        break;
      default:
        t->add_int32_data(static_cast<int32_t>(in.ConsumeIntegralInRange(-3, 8)));
        break;
    }
  }
  if (in.ConsumeIntegralInRange(0, 15) == 0) t->set_raw_data(in.ConsumeBytesAsString(in.ConsumeIntegralInRange(0, 17)));
}

void SetTensorType(FuzzedDataProvider& in, onnx::TypeProto* type) {
  onnx::TypeProto_Tensor* tensor = type->mutable_tensor_type();
  tensor->set_elem_type(PickElemType(in));
  if (in.ConsumeIntegralInRange(0, 15) == 0) return;  // no shape
  onnx::TensorShapeProto* shape = tensor->mutable_shape();
  const int rank = in.ConsumeIntegralInRange(0, 6);
  for (int d = 0; d < rank; ++d) {
    onnx::TensorShapeProto_Dimension* dim = shape->add_dim();
    switch (in.ConsumeIntegralInRange(0, 15)) {
      case 0:
        dim->set_dim_param("N");
        break;
      case 1:
        break;  // unknown
      case 2:
        dim->set_dim_value(-in.ConsumeIntegralInRange<int64_t>(1, 3));
        break;
      default:
        dim->set_dim_value(PickDim(in));
        break;
    }
  }
}

void AddAttribute(FuzzedDataProvider& in, const std::string& name, onnx::AttributeProto::AttributeType type,
                  onnx::NodeProto* node) {
  onnx::AttributeProto* a = node->add_attribute();
  a->set_name(name);
  a->set_type(type);
  const int n = in.ConsumeIntegralInRange(0, 6);
  switch (type) {
    case onnx::AttributeProto::INT:
      a->set_i(PickInt(in));
      break;
    case onnx::AttributeProto::INTS:
      for (int i = 0; i < n; ++i) a->add_ints(PickInt(in));
      break;
    case onnx::AttributeProto::FLOAT:
      a->set_f(static_cast<float>(PickInt(in)) / 2);
      break;
    case onnx::AttributeProto::FLOATS:
      for (int i = 0; i < n; ++i) a->add_floats(static_cast<float>(PickInt(in)));
      break;
    case onnx::AttributeProto::STRING:
      a->set_s(PickString(in));
      break;
    case onnx::AttributeProto::STRINGS:
      for (int i = 0; i < n; ++i) a->add_strings(PickString(in));
      break;
    case onnx::AttributeProto::TENSOR:
      FillTensor(in, a->mutable_t());
      break;
    case onnx::AttributeProto::TYPE_PROTO:
      SetTensorType(in, a->mutable_tp());
      break;
    default:
      break;  // graphs are rejected before inference
  }
}

std::string BuildModel(FuzzedDataProvider& in) {
  const std::vector<onnx::OpSchema>& schemas = Schemas();
  const onnx::OpSchema& schema = schemas[in.ConsumeIntegralInRange<size_t>(0, schemas.size() - 1)];
  onnx::ModelProto model;
  model.set_ir_version(8);
  onnx::OperatorSetIdProto* opset = model.add_opset_import();
  opset->set_domain(schema.domain());
  opset->set_version(schema.since_version() + in.ConsumeIntegralInRange(0, 1));
  if (!schema.domain().empty()) {
    onnx::OperatorSetIdProto* standard = model.add_opset_import();
    standard->set_domain("");
    standard->set_version(17);
  }
  onnx::GraphProto* graph = model.mutable_graph();
  graph->set_name("g");
  onnx::NodeProto* node = graph->add_node();
  node->set_op_type(schema.Name());
  node->set_domain(schema.domain());
  node->set_name("n");

  const int max_inputs = std::min(schema.max_input(), schema.min_input() + 3);
  const int inputs = in.ConsumeIntegralInRange(std::max(0, schema.min_input() - 1), std::max(0, max_inputs));
  for (int i = 0; i < inputs; ++i) {
    const std::string name = "in" + std::to_string(i);
    switch (in.ConsumeIntegralInRange(0, 9)) {
      case 0:
        node->add_input("");
        break;  // omitted optional input
      case 1:
      case 2: {
        onnx::TensorProto* init = graph->add_initializer();
        init->set_name(name);
        FillTensor(in, init);
        node->add_input(name);
        break;
      }
      case 3:
        node->add_input("in0");
        break;  // a repeated input
      default: {
        onnx::ValueInfoProto* v = graph->add_input();
        v->set_name(name);
        SetTensorType(in, v->mutable_type());
        node->add_input(name);
        break;
      }
    }
  }
  const int max_outputs = std::min(schema.max_output(), schema.min_output() + 2);
  const int outputs = in.ConsumeIntegralInRange(std::max(0, schema.min_output() - 1), std::max(0, max_outputs));
  for (int i = 0; i < outputs; ++i) {
    const std::string name = "out" + std::to_string(i);
    node->add_output(name);
    graph->add_output()->set_name(name);
  }
  for (const auto& [name, attribute] : schema.attributes()) {
    if (in.ConsumeIntegralInRange(0, 3) == 0) continue;
    // Mostly the declared type; sometimes another.
    onnx::AttributeProto::AttributeType type = attribute.type;
    if (in.ConsumeIntegralInRange(0, 15) == 0) {
      type = static_cast<onnx::AttributeProto::AttributeType>(in.ConsumeIntegralInRange(1, 8));
    }
    AddAttribute(in, name, type, node);
  }
  return model.SerializeAsString();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  const std::string bytes = BuildModel(in);
  // SERENITY_FUZZ_DUMP=path writes the model (to replay a crash as .onnx).
  if (const char* dump = std::getenv("SERENITY_FUZZ_DUMP")) {
    std::ofstream(dump, std::ios::binary) << bytes;
  }
  absl::StatusOr<serenity::GraphSpec> spec = serenity::OnnxToGraphSpec(bytes, serenity::OnnxImportOptions());
  if (!spec.ok()) return 0;
  absl::StatusOr<serenity::Graph> graph = serenity::Graph::Build(*std::move(spec));
  return 0;
}
