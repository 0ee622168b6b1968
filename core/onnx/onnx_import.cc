#include "core/onnx/onnx_import.h"

#include <algorithm>
#include <climits>
#include <exception>
#include <optional>
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

bool IsDefaultDomain(const std::string& domain) { return domain.empty() || domain == "ai.onnx"; }

// a * b for non-negative operands, clamped to INT64_MAX.
int64_t SaturatingMul(int64_t a, int64_t b) {
  int64_t out;
  return __builtin_mul_overflow(a, b, &out) ? INT64_MAX : out;
}

// Product of dims[first:], clamped.
int64_t Product(const std::vector<int64_t>& dims, size_t first = 0) {
  int64_t n = 1;
  for (size_t i = first; i < dims.size(); ++i) n = SaturatingMul(n, dims[i]);
  return n;
}

// Replaces every dim_param of `value` that `options` gives a value for.
void FixDims(onnx::ValueInfoProto& value, const OnnxImportOptions& options) {
  if (!value.type().has_tensor_type() || !value.type().tensor_type().has_shape()) return;
  for (onnx::TensorShapeProto_Dimension& dim :
       *value.mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim()) {
    if (!dim.has_dim_param()) continue;
    auto it = options.dim_values.find(dim.dim_param());
    if (it != options.dim_values.end()) dim.set_dim_value(it->second);  // oneof: clears dim_param
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
                                                 "with subgraph attributes are not supported"));
}

// Shape and dtype of a Constant node's output from its value attribute;
// nullopt when no attribute tells (the inferred type is used then). STRING
// values count as 0 bytes: weights are not placed in the arena.
std::optional<TensorSpec> ConstantSpec(const onnx::NodeProto& node, const std::string& output) {
  TensorSpec spec{output, {}, onnx::TensorProto::FLOAT, -1, true};
  for (const onnx::AttributeProto& attr : node.attribute()) {
    const std::string& a = attr.name();
    if (a == "value" && attr.has_t()) {
      spec.shape.assign(attr.t().dims().begin(), attr.t().dims().end());
      spec.dtype = attr.t().data_type();
    } else if (a == "sparse_value" && attr.has_sparse_tensor()) {
      spec.shape.assign(attr.sparse_tensor().dims().begin(), attr.sparse_tensor().dims().end());
      spec.dtype = attr.sparse_tensor().values().data_type();
    } else if (a == "value_float") {
      spec.dtype = onnx::TensorProto::FLOAT;
    } else if (a == "value_floats") {
      spec.shape = {attr.floats_size()};
      spec.dtype = onnx::TensorProto::FLOAT;
    } else if (a == "value_int") {
      spec.dtype = onnx::TensorProto::INT64;
    } else if (a == "value_ints") {
      spec.shape = {attr.ints_size()};
      spec.dtype = onnx::TensorProto::INT64;
    } else if (a == "value_string" || a == "value_strings") {
      if (a == "value_strings") spec.shape = {attr.strings_size()};
      spec.dtype = onnx::TensorProto::STRING;
    } else {
      continue;
    }
    if (spec.dtype == onnx::TensorProto::STRING) spec.bytes = 0;
    return spec;
  }
  return std::nullopt;
}

// The TensorSpec of a value from its (inferred) type. `role` says where the
// value is used, for messages.
absl::StatusOr<TensorSpec> SpecFromType(const std::string& name, const onnx::TypeProto* type,
                                        const std::string& role, const OnnxImportOptions& options) {
  if (type == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("tensor '", name, "' (", role, ") has no inferred shape"));
  }
  if (!type->has_tensor_type()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "tensor '", name, "' (", role, ") is not a tensor (sequence, map and optional types are unsupported)"));
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
      continue;
    }
    if (dim.has_dim_param()) {
      auto it = options.dim_values.find(dim.dim_param());
      if (it != options.dim_values.end()) {
        spec.shape.push_back(it->second);
        continue;
      }
      return absl::InvalidArgumentError(absl::StrCat("tensor '", name, "' (", role, ") has symbolic dimension '",
                                                     dim.dim_param(), "'; fix it with --dim ", dim.dim_param(),
                                                     "=N (dim_values in a request)"));
    }
    return absl::InvalidArgumentError(
        absl::StrCat("tensor '", name, "' (", role, ") has unknown dimension ", i, " after shape inference"));
  }
  return spec;
}

// Multiply-accumulates of the compute-heavy ops, from shapes.
int64_t Macs(const onnx::NodeProto& node, const absl::flat_hash_map<std::string, const TensorSpec*>& specs) {
  auto shape = [&](int index, bool output) -> const std::vector<int64_t>* {
    const auto& names = output ? node.output() : node.input();
    if (index >= names.size() || names.Get(index).empty()) return nullptr;
    auto it = specs.find(names.Get(index));
    return it == specs.end() ? nullptr : &it->second->shape;
  };
  const std::vector<int64_t>* out = shape(0, /*output=*/true);
  const std::vector<int64_t>* a = shape(0, /*output=*/false);
  const std::vector<int64_t>* w = shape(1, /*output=*/false);
  if (out == nullptr || a == nullptr || !IsDefaultDomain(node.domain())) return 0;
  const std::string& type = node.op_type();
  if (type == "Conv") {
    // W is [M, C/group, k...]: every output element takes C/group * k MACs.
    return w == nullptr || w->size() < 2 ? 0 : SaturatingMul(Product(*out), Product(*w, 1));
  }
  if (type == "ConvTranspose") {
    // W is [C, M/group, k...]: every input element feeds M/group * k outputs
    // (the inserted zeros of a strided ConvTranspose cost nothing).
    return w == nullptr || w->size() < 2 ? 0 : SaturatingMul(Product(*a), Product(*w, 1));
  }
  if (type == "Gemm" || type == "MatMul") {
    if (a->empty()) return 0;
    int64_t k = a->back();
    if (type == "Gemm" && a->size() == 2) {
      for (const onnx::AttributeProto& attr : node.attribute()) {
        if (attr.name() == "transA" && attr.i() != 0) k = (*a)[0];
      }
    }
    return SaturatingMul(Product(*out), k);  // M*N outputs, K MACs each
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
  } catch (...) {
    return absl::InvalidArgumentError("ONNX shape inference failed with an unknown exception");
  }

  // Known types by value name; a ValueInfo without a type says nothing.
  absl::flat_hash_map<std::string, const onnx::TypeProto*> types;
  for (const auto* list : {&graph.value_info(), &graph.input(), &graph.output()}) {
    for (const onnx::ValueInfoProto& v : *list) {
      if (v.type().value_case() != onnx::TypeProto::VALUE_NOT_SET) types[v.name()] = &v.type();
    }
  }
  auto type_of = [&types](const std::string& name) -> const onnx::TypeProto* {
    auto it = types.find(name);
    return it == types.end() ? nullptr : it->second;
  };

  GraphSpec spec;
  spec.name = graph.name();
  absl::flat_hash_map<std::string, size_t> tensor_index;
  auto add = [&](TensorSpec t) {
    tensor_index.emplace(t.name, spec.tensors.size());
    spec.tensors.push_back(std::move(t));
  };

  // Weights: initializers (dense, then sparse, sized as dense), then
  // Constant outputs.
  for (const onnx::TensorProto& init : graph.initializer()) {
    if (tensor_index.contains(init.name())) continue;
    TensorSpec t{init.name(), {init.dims().begin(), init.dims().end()}, init.data_type(), -1, true};
    if (init.data_type() == onnx::TensorProto::STRING) t.bytes = 0;
    add(std::move(t));
  }
  for (const onnx::SparseTensorProto& init : graph.sparse_initializer()) {
    const std::string& name = init.values().name();
    if (tensor_index.contains(name)) continue;
    add(TensorSpec{name, {init.dims().begin(), init.dims().end()}, init.values().data_type(), -1, true});
  }
  for (int i = 0; i < graph.node_size(); ++i) {
    const onnx::NodeProto& node = graph.node(i);
    if (node.op_type() != "Constant" || !IsDefaultDomain(node.domain())) continue;
    for (const std::string& out : node.output()) {
      if (out.empty() || tensor_index.contains(out)) continue;
      std::optional<TensorSpec> t = ConstantSpec(node, out);
      if (!t.has_value()) {
        ASSIGN_OR_RETURN(t, SpecFromType(out, type_of(out), absl::StrCat("output of op '", names[i], "'"), options));
        t->is_weight = true;
      }
      add(std::move(*t));
    }
  }

  // Activations: every other value a node or the graph touches.
  auto add_activation = [&](const std::string& name, const std::string& role) -> absl::Status {
    if (name.empty() || tensor_index.contains(name)) return absl::OkStatus();
    ASSIGN_OR_RETURN(TensorSpec t, SpecFromType(name, type_of(name), role, options));
    add(std::move(t));
    return absl::OkStatus();
  };
  for (const onnx::ValueInfoProto& v : graph.input()) {
    if (tensor_index.contains(v.name())) continue;  // an initializer listed as input (IR < 4 style)
    RETURN_IF_ERROR(add_activation(v.name(), "graph input"));
    spec.inputs.push_back(v.name());
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

  // Ops. MACs are capped so that their sum cannot overflow in Graph::Build.
  absl::flat_hash_map<std::string, const TensorSpec*> by_name;
  for (const TensorSpec& t : spec.tensors) by_name[t.name] = &t;
  const int64_t max_macs = INT64_MAX / graph.node_size();
  for (int i = 0; i < graph.node_size(); ++i) {
    const onnx::NodeProto& node = graph.node(i);
    OpSpec op;
    op.name = names[i];
    op.type = IsDefaultDomain(node.domain()) ? node.op_type() : absl::StrCat(node.domain(), "::", node.op_type());
    op.inputs.assign(node.input().begin(), node.input().end());
    op.outputs.assign(node.output().begin(), node.output().end());
    op.macs = std::min(Macs(node, by_name), max_macs);
    spec.ops.push_back(std::move(op));
  }

  absl::flat_hash_map<std::string, size_t> op_index;
  for (size_t i = 0; i < spec.ops.size(); ++i) op_index[spec.ops[i].name] = i;
  for (const auto& [name, bytes] : options.workspace_bytes) {
    auto it = op_index.find(name);
    if (it == op_index.end()) {
      return absl::InvalidArgumentError(absl::StrCat("workspace given for unknown op '", name, "'"));
    }
    if (bytes < 0) {
      return absl::InvalidArgumentError(absl::StrCat("workspace of op '", name, "' is negative: ", bytes));
    }
    spec.ops[it->second].workspace_bytes = bytes;
  }
  return spec;
}

absl::StatusOr<Graph> ImportOnnxModel(absl::string_view model_bytes, const OnnxImportOptions& options) {
  ASSIGN_OR_RETURN(GraphSpec spec, OnnxToGraphSpec(model_bytes, options));
  return Graph::Build(std::move(spec));
}

namespace {

// Drops `tensor`'s payload when its logical size exceeds `max_kept_bytes` or
// is not known (STRING, bad dims).
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
  if (!model.has_graph()) return model.SerializeAsString();
  onnx::GraphProto* graph = model.mutable_graph();
  for (onnx::TensorProto& init : *graph->mutable_initializer()) StripTensor(init, max_kept_bytes);
  for (onnx::SparseTensorProto& init : *graph->mutable_sparse_initializer()) {
    StripTensor(*init.mutable_values(), max_kept_bytes);
    StripTensor(*init.mutable_indices(), max_kept_bytes);
  }
  for (onnx::NodeProto& node : *graph->mutable_node()) {
    if (node.op_type() != "Constant") continue;
    for (onnx::AttributeProto& attr : *node.mutable_attribute()) {
      if (attr.has_t()) StripTensor(*attr.mutable_t(), max_kept_bytes);
      if (attr.has_sparse_tensor()) {
        StripTensor(*attr.mutable_sparse_tensor()->mutable_values(), max_kept_bytes);
        StripTensor(*attr.mutable_sparse_tensor()->mutable_indices(), max_kept_bytes);
      }
    }
  }
  return model.SerializeAsString();
}

}  // namespace serenity
