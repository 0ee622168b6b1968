#include "core/onnx/onnx_import.h"

#include <climits>
#include <exception>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "core/graph/dtype.h"
#include "core/util/status_macros.h"
#include "onnx/onnx_pb.h"
#include "onnx/shape_inference/implementation.h"

namespace serenity {
namespace {

absl::StatusOr<onnx::ModelProto> ParseModel(absl::string_view bytes) {
  onnx::ModelProto model;
  if (bytes.empty() || bytes.size() > static_cast<size_t>(INT_MAX) ||
      !model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return absl::InvalidArgumentError(
        absl::StrCat("not a valid ONNX model: ", bytes.size(), " bytes that do not parse as a ModelProto"));
  }
  return model;
}

int64_t SaturatingMul(int64_t a, int64_t b) {
  int64_t out;
  return __builtin_mul_overflow(a, b, &out) ? INT64_MAX : out;
}

int64_t Elements(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n = SaturatingMul(n, d);
  return n;
}

void FixDims(onnx::ValueInfoProto& value, const OnnxImportOptions& options) {
  if (!value.type().has_tensor_type() || !value.type().tensor_type().has_shape()) return;
  for (onnx::TensorShapeProto_Dimension& dim : *value.mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim()) {
    if (!dim.has_dim_param()) continue;
    auto it = options.dim_values.find(dim.dim_param());
    if (it != options.dim_values.end()) dim.set_dim_value(it->second);
  }
}

absl::Status CheckSupported(const onnx::NodeProto& node, const std::string& name) {
  const std::string& type = node.op_type();
  bool subgraph = type == "If" || type == "Loop" || type == "Scan";
  for (const onnx::AttributeProto& attr : node.attribute()) {
    subgraph = subgraph || attr.type() == onnx::AttributeProto::GRAPH ||
               attr.type() == onnx::AttributeProto::GRAPHS || attr.has_g() || attr.graphs_size() > 0;
  }
  if (!subgraph) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("op '", name, "' (", type,
                                                 ") is unsupported: control-flow ops (If, Loop, Scan) and ops "
                                                 "with subgraph attributes cannot be scheduled statically"));
}

// Shape and dtype of a Constant node's value.
TensorSpec ConstantSpec(const onnx::NodeProto& node, const std::string& output) {
  TensorSpec spec{output, {}, 1, -1, true};
  for (const onnx::AttributeProto& attr : node.attribute()) {
    if (attr.name() == "value" && attr.has_t()) {
      spec.shape.assign(attr.t().dims().begin(), attr.t().dims().end());
      spec.dtype = attr.t().data_type();
    } else if (attr.name() == "sparse_value" && attr.has_sparse_tensor()) {
      spec.shape.assign(attr.sparse_tensor().dims().begin(), attr.sparse_tensor().dims().end());
      spec.dtype = attr.sparse_tensor().values().data_type();
    } else if (attr.name() == "value_float") {
      spec.dtype = onnx::TensorProto::FLOAT;
    } else if (attr.name() == "value_floats") {
      spec.shape = {attr.floats_size()};
      spec.dtype = onnx::TensorProto::FLOAT;
    } else if (attr.name() == "value_int") {
      spec.dtype = onnx::TensorProto::INT64;
    } else if (attr.name() == "value_ints") {
      spec.shape = {attr.ints_size()};
      spec.dtype = onnx::TensorProto::INT64;
    } else if (attr.name() == "value_string" || attr.name() == "value_strings") {
      spec.bytes = 0;  // strings have no fixed size; weights are not scheduled
      spec.dtype = onnx::TensorProto::STRING;
    }
  }
  return spec;
}

// The TensorSpec of an activation from its (inferred) type.
absl::StatusOr<TensorSpec> ActivationSpec(const std::string& name, const onnx::TypeProto* type,
                                          const std::string& role, const OnnxImportOptions& options) {
  if (type == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("tensor '", name, "' (", role, ") has no inferred shape"));
  }
  if (!type->has_tensor_type()) {
    return absl::InvalidArgumentError(
        absl::StrCat("tensor '", name, "' (", role, ") is not a tensor (sequence, map and optional types are unsupported)"));
  }
  const onnx::TypeProto_Tensor& tensor = type->tensor_type();
  if (!tensor.has_shape()) {
    return absl::InvalidArgumentError(absl::StrCat("tensor '", name, "' (", role, ") has no inferred shape"));
  }
  TensorSpec spec{name, {}, tensor.elem_type(), -1, false};
  for (int i = 0; i < tensor.shape().dim_size(); ++i) {
    const onnx::TensorShapeProto_Dimension& dim = tensor.shape().dim(i);
    if (dim.has_dim_value()) {
      spec.shape.push_back(dim.dim_value());
    } else if (dim.has_dim_param() && options.dim_values.contains(dim.dim_param())) {
      spec.shape.push_back(options.dim_values.at(dim.dim_param()));
    } else if (dim.has_dim_param()) {
      return absl::InvalidArgumentError(absl::StrCat("tensor '", name, "' (", role, ") has symbolic dimension '",
                                                     dim.dim_param(), "'; fix it with --dim ", dim.dim_param(),
                                                     "=N (dim_values in the request)"));
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("tensor '", name, "' (", role, ") has an unknown dimension ", i));
    }
  }
  return spec;
}

// Multiply-accumulates of the compute-heavy ops, from shapes.
int64_t Macs(const onnx::NodeProto& node, const absl::flat_hash_map<std::string, const TensorSpec*>& specs) {
  auto shape = [&](int input) -> const std::vector<int64_t>* {
    if (input >= node.input_size() || node.input(input).empty()) return nullptr;
    auto it = specs.find(node.input(input));
    return it == specs.end() ? nullptr : &it->second->shape;
  };
  if (node.output_size() == 0) return 0;
  auto out_it = specs.find(node.output(0));
  if (out_it == specs.end()) return 0;
  const int64_t out_elements = Elements(out_it->second->shape);
  const std::string& type = node.op_type();
  if (type == "Conv" || type == "ConvTranspose") {
    const std::vector<int64_t>* w = shape(1);
    if (w == nullptr || w->size() < 2) return 0;
    if (type == "ConvTranspose") {
      // W is [C_in, C_out/group, k...]: each input element feeds C_out/group * k outputs.
      const std::vector<int64_t>* x = shape(0);
      return x == nullptr ? 0 : SaturatingMul(Elements(*x), Elements(std::vector<int64_t>(w->begin() + 1, w->end())));
    }
    return SaturatingMul(out_elements, Elements(std::vector<int64_t>(w->begin() + 1, w->end())));
  }
  if (type == "Gemm" || type == "MatMul") {
    const std::vector<int64_t>* a = shape(0);
    if (a == nullptr || a->empty()) return 0;
    int64_t k = a->back();
    if (type == "Gemm") {
      for (const onnx::AttributeProto& attr : node.attribute()) {
        if (attr.name() == "transA" && attr.i() != 0 && a->size() == 2) k = (*a)[0];
      }
    }
    return SaturatingMul(out_elements, k);
  }
  return 0;
}

}  // namespace

absl::StatusOr<GraphSpec> OnnxToGraphSpec(absl::string_view model_bytes, const OnnxImportOptions& options) {
  ASSIGN_OR_RETURN(onnx::ModelProto model, ParseModel(model_bytes));
  if (!model.has_graph() || model.graph().node_size() == 0) {
    return absl::InvalidArgumentError("ONNX graph has no nodes");
  }
  for (const auto& [dim, value] : options.dim_values) {
    if (value < 0) return absl::InvalidArgumentError(absl::StrCat("dimension '", dim, "' must not be negative"));
  }

  // Names first, so errors can name ops; reject what cannot be scheduled.
  const onnx::GraphProto& graph = model.graph();
  std::vector<std::string> names;
  absl::flat_hash_set<std::string> taken;
  for (int i = 0; i < graph.node_size(); ++i) {
    const onnx::NodeProto& node = graph.node(i);
    std::string name = node.name().empty() ? absl::StrCat(node.op_type(), "_", i) : node.name();
    while (taken.contains(name)) absl::StrAppend(&name, "_", i);
    taken.insert(name);
    RETURN_IF_ERROR(CheckSupported(node, name));
    names.push_back(std::move(name));
  }

  onnx::GraphProto* mutable_graph = model.mutable_graph();
  for (onnx::ValueInfoProto& v : *mutable_graph->mutable_input()) FixDims(v, options);
  for (onnx::ValueInfoProto& v : *mutable_graph->mutable_output()) FixDims(v, options);
  for (onnx::ValueInfoProto& v : *mutable_graph->mutable_value_info()) FixDims(v, options);
  try {
    onnx::shape_inference::InferShapes(model);
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("ONNX shape inference failed: ", e.what()));
  }

  // Known types by value name; a ValueInfo without a type says nothing.
  absl::flat_hash_map<std::string, const onnx::TypeProto*> types;
  for (const auto* list : {&graph.value_info(), &graph.input(), &graph.output()}) {
    for (const onnx::ValueInfoProto& v : *list) {
      if (v.type().value_case() != onnx::TypeProto::VALUE_NOT_SET) types[v.name()] = &v.type();
    }
  }

  GraphSpec spec;
  spec.name = graph.name();
  absl::flat_hash_map<std::string, size_t> tensor_index;
  auto add = [&](TensorSpec t) {
    tensor_index.emplace(t.name, spec.tensors.size());
    spec.tensors.push_back(std::move(t));
  };
  for (const onnx::TensorProto& init : graph.initializer()) {
    if (tensor_index.contains(init.name())) continue;
    TensorSpec t{init.name(), {init.dims().begin(), init.dims().end()}, init.data_type(), -1, true};
    if (init.data_type() == onnx::TensorProto::STRING) t.bytes = 0;
    add(std::move(t));
  }
  for (int i = 0; i < graph.node_size(); ++i) {
    const onnx::NodeProto& node = graph.node(i);
    if (node.op_type() != "Constant" || !(node.domain().empty() || node.domain() == "ai.onnx")) continue;
    for (const std::string& out : node.output()) {
      if (!out.empty() && !tensor_index.contains(out)) add(ConstantSpec(node, out));
    }
  }
  auto add_activation = [&](const std::string& name, const std::string& role) -> absl::Status {
    if (name.empty() || tensor_index.contains(name)) return absl::OkStatus();
    auto it = types.find(name);
    ASSIGN_OR_RETURN(TensorSpec t, ActivationSpec(name, it == types.end() ? nullptr : it->second, role, options));
    add(std::move(t));
    return absl::OkStatus();
  };
  for (const onnx::ValueInfoProto& v : graph.input()) {
    RETURN_IF_ERROR(add_activation(v.name(), "graph input"));
    spec.inputs.push_back(v.name());  // Graph::Build skips initializers listed as inputs
  }
  for (int i = 0; i < graph.node_size(); ++i) {
    const onnx::NodeProto& node = graph.node(i);
    for (const std::string& in : node.input()) {
      RETURN_IF_ERROR(add_activation(in, absl::StrCat("input of op '", names[i], "'")));
    }
    for (const std::string& out : node.output()) {
      RETURN_IF_ERROR(add_activation(out, absl::StrCat("output of op '", names[i], "'")));
    }
  }
  for (const onnx::ValueInfoProto& v : graph.output()) {
    RETURN_IF_ERROR(add_activation(v.name(), "graph output"));
    spec.outputs.push_back(v.name());
  }

  absl::flat_hash_map<std::string, const TensorSpec*> by_name;
  for (const TensorSpec& t : spec.tensors) by_name[t.name] = &t;
  for (int i = 0; i < graph.node_size(); ++i) {
    const onnx::NodeProto& node = graph.node(i);
    OpSpec op;
    op.name = names[i];
    op.type = node.domain().empty() || node.domain() == "ai.onnx" ? node.op_type()
                                                                   : absl::StrCat(node.domain(), "::", node.op_type());
    op.inputs.assign(node.input().begin(), node.input().end());
    op.outputs.assign(node.output().begin(), node.output().end());
    op.macs = Macs(node, by_name);
    spec.ops.push_back(std::move(op));
  }

  absl::flat_hash_map<std::string, size_t> op_index;
  for (size_t i = 0; i < spec.ops.size(); ++i) op_index[spec.ops[i].name] = i;
  for (const auto& [name, bytes] : options.workspace_bytes) {
    auto it = op_index.find(name);
    if (it == op_index.end()) {
      return absl::InvalidArgumentError(absl::StrCat("workspace given for unknown op '", name, "'"));
    }
    if (bytes < 0) return absl::InvalidArgumentError(absl::StrCat("workspace of op '", name, "' is negative"));
    spec.ops[it->second].workspace_bytes = bytes;
  }
  return spec;
}

absl::StatusOr<Graph> ImportOnnxModel(absl::string_view model_bytes, const OnnxImportOptions& options) {
  ASSIGN_OR_RETURN(GraphSpec spec, OnnxToGraphSpec(model_bytes, options));
  return Graph::Build(std::move(spec));
}

namespace {

// Drops `tensor`'s payload when its logical size exceeds `max_kept_bytes`.
void StripTensor(onnx::TensorProto& tensor, int64_t max_kept_bytes) {
  absl::StatusOr<int64_t> bytes = TensorBytes({tensor.dims().begin(), tensor.dims().end()}, tensor.data_type());
  if (bytes.ok() && *bytes <= max_kept_bytes) return;
  tensor.clear_raw_data();
  tensor.clear_float_data();
  tensor.clear_int32_data();
  tensor.clear_string_data();
  tensor.clear_int64_data();
  tensor.clear_double_data();
  tensor.clear_uint64_data();
  tensor.clear_external_data();
  tensor.clear_data_location();
}

}  // namespace

absl::StatusOr<std::string> StripWeightData(absl::string_view model_bytes, int64_t max_kept_bytes) {
  ASSIGN_OR_RETURN(onnx::ModelProto model, ParseModel(model_bytes));
  onnx::GraphProto* graph = model.mutable_graph();
  for (onnx::TensorProto& init : *graph->mutable_initializer()) StripTensor(init, max_kept_bytes);
  for (onnx::NodeProto& node : *graph->mutable_node()) {
    if (node.op_type() != "Constant") continue;
    for (onnx::AttributeProto& attr : *node.mutable_attribute()) {
      if (attr.has_t()) StripTensor(*attr.mutable_t(), max_kept_bytes);
    }
  }
  return model.SerializeAsString();
}

}  // namespace serenity
