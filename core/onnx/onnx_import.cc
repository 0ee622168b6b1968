#include "core/onnx/onnx_import.h"

#include <algorithm>
#include <climits>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "core/graph/dtype.h"
#include "core/onnx/serenity_ops.h"
#include "core/util/saturating.h"
#include "core/util/status_macros.h"
#include "onnx/defs/schema.h"
#include "onnx/defs/tensor_proto_util.h"
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
    subgraph = subgraph || attr.type() == onnx::AttributeProto::GRAPH || attr.type() == onnx::AttributeProto::GRAPHS ||
               attr.has_g() || attr.graphs_size() > 0;
  }
  if (!subgraph) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("op '", name, "' (", type,
                                                 ") is unsupported: control-flow ops (If, Loop, Scan) and ops "
                                                 "with subgraph attributes are not supported"));
}

// --- Guards for ONNX shape inference ----------------------------------------
//
// ONNX's shape inference (1.12, the system libonnx) trusts its input in places
// a hostile model can reach (found by fuzz/fuzz_onnx_import and
// fuzz/fuzz_onnx_ops): a zero stride or blocksize, a Split without outputs, a
// zero split size, or a -1 over an overflowed element count divides by zero
// (SIGFPE); raw_data whose length is not a whole number of elements overflows
// the buffer it is parsed into; inputs of a rank the op does not allow, an
// out-of-range axis or batch_dims, or an untyped input are indexed or
// dereferenced unchecked (SIGSEGV); auto_pad SAME computes a remainder by
// repeated subtraction, taking time proportional to dim / stride; and a shape
// input declared 2^40 long becomes an output of rank 2^40. The checks below
// turn every such input into an InvalidArgument before ONNX acts on it: what
// the model states is checked up front (CheckBeforeShapeInference), what
// depends on inferred shapes as inference reaches each node
// (GuardedSchemaRegistry, CheckNodeContext).

// Largest dim / stride accepted for auto_pad SAME (about a second of ONNX's
// remainder loop).
constexpr int64_t kMaxSamePadSteps = int64_t{1} << 31;

// Largest rank a shape input may give an output (ConstantOfShape, Expand and
// Reshape turn the length of a 1-D input into the output rank: a declared
// length of 2^40 made ONNX allocate 2^40 dims).
constexpr int64_t kMaxRank = 1024;

using AttributeLookup = std::function<const onnx::AttributeProto*(const std::string&)>;

// Attributes that ONNX divides by or squares without checking: strides,
// dilations and kernel_shape must be positive (as the ONNX spec says), and
// blocksize must lie in 1..2^31-1 (so that its square fits 64 bits).
absl::Status CheckInferenceAttributes(const AttributeLookup& attribute) {
  for (const char* name : {"strides", "dilations", "kernel_shape"}) {
    const onnx::AttributeProto* attr = attribute(name);
    if (attr == nullptr) continue;
    for (int64_t v : attr->ints()) {
      if (v < 1) return absl::InvalidArgumentError(absl::StrCat("attribute ", name, " must be positive, found ", v));
    }
  }
  if (const onnx::AttributeProto* attr = attribute("blocksize"); attr != nullptr && attr->has_i()) {
    if (attr->i() < 1 || attr->i() > INT32_MAX) {
      return absl::InvalidArgumentError(absl::StrCat("attribute blocksize must lie in 1..2^31-1, found ", attr->i()));
    }
  }
  return absl::OkStatus();
}

// A tensor stored in the model (initializer or attribute value): no negative
// dims, and raw_data, when present, exactly as long as dims and data type say.
absl::Status CheckTensorData(const onnx::TensorProto& tensor, const std::string& what) {
  for (int64_t d : tensor.dims()) {
    if (d < 0) return absl::InvalidArgumentError(absl::StrCat(what, " has negative dimension ", d));
  }
  if (!tensor.has_raw_data() || tensor.data_location() == onnx::TensorProto::EXTERNAL) return absl::OkStatus();
  absl::StatusOr<int64_t> bytes = TensorBytes({tensor.dims().begin(), tensor.dims().end()}, tensor.data_type());
  if (!bytes.ok()) return absl::OkStatus();  // no fixed element size: ONNX does not parse it
  if (static_cast<uint64_t>(*bytes) != tensor.raw_data().size()) {
    return absl::InvalidArgumentError(absl::StrCat(what, " has ", tensor.raw_data().size(),
                                                   " bytes of raw_data where its dims and data type need ", *bytes));
  }
  return absl::OkStatus();
}

absl::Status CheckSparseTensorData(const onnx::SparseTensorProto& tensor, const std::string& what) {
  for (int64_t d : tensor.dims()) {
    if (d < 0) return absl::InvalidArgumentError(absl::StrCat(what, " has negative dimension ", d));
  }
  RETURN_IF_ERROR(CheckTensorData(tensor.values(), absl::StrCat(what, " (values)")));
  return CheckTensorData(tensor.indices(), absl::StrCat(what, " (indices)"));
}

// Declared shapes: dims must not be negative.
absl::Status CheckDeclaredDims(const onnx::ValueInfoProto& value) {
  if (!value.type().has_tensor_type() || !value.type().tensor_type().has_shape()) return absl::OkStatus();
  for (const onnx::TensorShapeProto_Dimension& dim : value.type().tensor_type().shape().dim()) {
    if (dim.has_dim_value() && dim.dim_value() < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("tensor '", value.name(), "' has negative dimension ", dim.dim_value()));
    }
  }
  return absl::OkStatus();
}

// Everything a model states that shape inference would trip over.
absl::Status CheckBeforeShapeInference(const onnx::ModelProto& model, const std::vector<std::string>& names) {
  const onnx::GraphProto& graph = model.graph();
  for (const auto* list : {&graph.input(), &graph.output(), &graph.value_info()}) {
    for (const onnx::ValueInfoProto& v : *list) RETURN_IF_ERROR(CheckDeclaredDims(v));
  }
  for (const onnx::TensorProto& init : graph.initializer()) {
    RETURN_IF_ERROR(CheckTensorData(init, absl::StrCat("initializer '", init.name(), "'")));
  }
  for (const onnx::SparseTensorProto& init : graph.sparse_initializer()) {
    RETURN_IF_ERROR(CheckSparseTensorData(init, absl::StrCat("sparse initializer '", init.values().name(), "'")));
  }
  // Model-local functions are bodies ONNX infers too.
  std::vector<std::pair<const onnx::NodeProto*, std::string>> nodes;
  for (int i = 0; i < graph.node_size(); ++i) nodes.emplace_back(&graph.node(i), names[i]);
  for (const onnx::FunctionProto& function : model.functions()) {
    for (const onnx::NodeProto& node : function.node()) {
      nodes.emplace_back(&node, absl::StrCat(node.name().empty() ? node.op_type() : node.name(), " in function '",
                                             function.name(), "'"));
    }
  }
  for (const auto& [node, name] : nodes) {
    const std::string op = absl::StrCat("op '", name, "' (", node->op_type(), ")");
    absl::Status attributes = CheckInferenceAttributes([node = node](const std::string& attr_name) {
      for (const onnx::AttributeProto& attr : node->attribute()) {
        if (attr.name() == attr_name) return &attr;
      }
      return static_cast<const onnx::AttributeProto*>(nullptr);
    });
    if (!attributes.ok()) return absl::InvalidArgumentError(absl::StrCat(op, ": ", attributes.message()));
    for (const onnx::AttributeProto& attr : node->attribute()) {
      const std::string what = absl::StrCat("attribute ", attr.name(), " of ", op);
      if (attr.has_t()) RETURN_IF_ERROR(CheckTensorData(attr.t(), what));
      for (const onnx::TensorProto& t : attr.tensors()) RETURN_IF_ERROR(CheckTensorData(t, what));
      if (attr.has_sparse_tensor()) RETURN_IF_ERROR(CheckSparseTensorData(attr.sparse_tensor(), what));
      for (const onnx::SparseTensorProto& t : attr.sparse_tensors()) RETURN_IF_ERROR(CheckSparseTensorData(t, what));
    }
  }
  return absl::OkStatus();
}

// Integer values of a constant input (int32 or int64); nullopt otherwise.
std::optional<std::vector<int64_t>> IntegerData(const onnx::TensorProto* tensor) {
  if (tensor == nullptr) return std::nullopt;
  if (tensor->data_type() == onnx::TensorProto::INT64) return onnx::ParseData<int64_t>(tensor);
  if (tensor->data_type() == onnx::TensorProto::INT32) {
    std::vector<int32_t> values = onnx::ParseData<int32_t>(tensor);
    return std::vector<int64_t>(values.begin(), values.end());
  }
  return std::nullopt;
}

// Rank of input `i` when inference knows its shape.
std::optional<int> InputRank(onnx::InferenceContext& ctx, size_t i) {
  if (i >= ctx.getNumInputs()) return std::nullopt;
  const onnx::TypeProto* type = ctx.getInputType(i);
  if (type == nullptr || !type->has_tensor_type() || !type->tensor_type().has_shape()) return std::nullopt;
  return type->tensor_type().shape().dim_size();
}

// True when a required input (not optional in `schema`) has no type, a type
// that is not a tensor (no type at all, a sequence, a map), or a tensor type
// without a shape. Some ONNX inference functions dereference such inputs
// unchecked (MaxUnpool reads dim 1 of its indices' tensor shape); the
// importer rejects the model later anyway, as every activation needs a
// shape, so inference of the node is skipped.
bool MissingRequiredInputShape(const onnx::OpSchema& schema, onnx::InferenceContext& ctx) {
  const std::vector<onnx::OpSchema::FormalParameter>& formals = schema.inputs();
  for (size_t i = 0; i < ctx.getNumInputs() && !formals.empty(); ++i) {
    const onnx::OpSchema::FormalParameter& formal = formals[std::min(i, formals.size() - 1)];
    if (i >= formals.size() && formal.GetOption() != onnx::OpSchema::Variadic) break;
    if (formal.GetOption() == onnx::OpSchema::Optional) continue;
    const onnx::TypeProto* type = ctx.getInputType(i);
    if (type == nullptr || !type->has_tensor_type() || !type->tensor_type().has_shape()) return true;
  }
  return false;
}

// Ranks the ONNX spec fixes and some ONNX 1.12 inference functions index
// without checking (reading past the dims they were given).
absl::Status CheckInputRanks(const onnx::OpSchema& schema, onnx::InferenceContext& ctx) {
  if (schema.domain() != onnx::ONNX_DOMAIN) return absl::OkStatus();
  const std::string& type = schema.Name();
  auto require = [&](size_t i, int rank) -> absl::Status {
    std::optional<int> actual = InputRank(ctx, i);
    if (!actual.has_value() || *actual == rank) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat("input ", i, " has rank ", *actual, ", needs ", rank));
  };
  auto same_rank = [&](size_t i, size_t j) -> absl::Status {
    std::optional<int> a = InputRank(ctx, i);
    return a.has_value() ? require(j, *a) : absl::OkStatus();
  };
  auto at_least = [&](size_t i, int rank) -> absl::Status {
    std::optional<int> actual = InputRank(ctx, i);
    if (!actual.has_value() || *actual >= rank) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat("input ", i, " has rank ", *actual, ", needs at least ", rank));
  };
  if (type == "Gemm") {
    RETURN_IF_ERROR(require(0, 2));
    return require(1, 2);
  }
  // The weights' dims give the kernel shape, one per spatial dim of X.
  if (type == "Conv" || type == "ConvInteger" || type == "ConvTranspose" || type == "MaxUnpool") {
    return same_rank(0, 1);
  }
  if (type == "QLinearConv") return same_rank(0, 3);
  if (type == "MaxRoiPool") return require(0, 4);
  if (type == "DFT" || type == "STFT") return at_least(0, 2);
  if (type == "RNN" || type == "GRU" || type == "LSTM") return require(0, 3);
  if (type == "ConstantOfShape" || type == "Expand" || type == "Reshape") {
    const size_t shape_input = type == "ConstantOfShape" ? 0 : 1;
    const onnx::TypeProto* shape = shape_input < ctx.getNumInputs() ? ctx.getInputType(shape_input) : nullptr;
    if (shape != nullptr && shape->has_tensor_type() && shape->tensor_type().shape().dim_size() == 1 &&
        shape->tensor_type().shape().dim(0).dim_value() > kMaxRank) {
      return absl::InvalidArgumentError(absl::StrCat("input ", shape_input, " gives the output rank ",
                                                     shape->tensor_type().shape().dim(0).dim_value(), ", more than ",
                                                     kMaxRank));
    }
  }
  if (type == "GatherND") {
    const onnx::AttributeProto* batch_dims = ctx.getAttribute("batch_dims");
    std::optional<int> data = InputRank(ctx, 0), indices = InputRank(ctx, 1);
    if (batch_dims != nullptr && batch_dims->i() < 0) {
      return absl::InvalidArgumentError(absl::StrCat("batch_dims must not be negative, found ", batch_dims->i()));
    }
    if (batch_dims != nullptr && data.has_value() && indices.has_value() &&
        batch_dims->i() >= std::min(*data, *indices)) {
      return absl::InvalidArgumentError(absl::StrCat("batch_dims ", batch_dims->i(), " must be below the ranks of ",
                                                     "data and indices (", *data, ", ", *indices, ")"));
    }
  }
  return absl::OkStatus();
}

// An `axis` attribute beyond every range the ONNX ops allow (-r-1..r for
// input 0 of rank r): some inference functions index dims with it unchecked.
absl::Status CheckAxis(const onnx::OpSchema& schema, onnx::InferenceContext& ctx) {
  const onnx::AttributeProto* axis = ctx.getAttribute("axis");
  std::optional<int> rank = InputRank(ctx, 0);
  if (schema.domain() != onnx::ONNX_DOMAIN || !rank.has_value()) return absl::OkStatus();
  if (schema.Name() == "LayerNormalization") {
    // Normalizes over dims axis.. (default -1): the axis must name a dim.
    const int64_t value = axis != nullptr ? axis->i() : -1;
    if (value < -*rank || value >= *rank) {
      return absl::InvalidArgumentError(absl::StrCat("axis ", value, " is out of range for input 0 of rank ", *rank));
    }
  }
  if (axis == nullptr) return absl::OkStatus();
  if (axis->i() < -*rank - 1 || axis->i() > *rank) {
    return absl::InvalidArgumentError(absl::StrCat("axis ", axis->i(), " is out of range for input 0 of rank ", *rank));
  }
  return absl::OkStatus();
}

// What depends on the shapes inference has found so far, for one node. Sets
// `*skip` when the node's inference must not run (and the model will be
// rejected for a missing shape later).
absl::Status CheckNodeContext(const onnx::OpSchema& schema, onnx::InferenceContext& ctx, bool* skip) {
  *skip = false;
  RETURN_IF_ERROR(CheckInferenceAttributes([&ctx](const std::string& name) { return ctx.getAttribute(name); }));
  if (MissingRequiredInputShape(schema, ctx)) {
    *skip = true;
    return absl::OkStatus();
  }
  RETURN_IF_ERROR(CheckInputRanks(schema, ctx));
  RETURN_IF_ERROR(CheckAxis(schema, ctx));
  if (ctx.getNumOutputs() < static_cast<size_t>(std::max(schema.min_output(), 0))) {
    return absl::InvalidArgumentError(
        absl::StrCat("has ", ctx.getNumOutputs(), " outputs, needs at least ", schema.min_output()));
  }
  // Input shapes: no negative dims, element counts within 64 bits.
  for (size_t i = 0; i < ctx.getNumInputs(); ++i) {
    const onnx::TypeProto* type = ctx.getInputType(i);
    if (type == nullptr || !type->has_tensor_type() || !type->tensor_type().has_shape()) continue;
    int64_t elements = 1;
    for (const onnx::TensorShapeProto_Dimension& dim : type->tensor_type().shape().dim()) {
      if (!dim.has_dim_value()) continue;
      if (dim.dim_value() < 0) {
        return absl::InvalidArgumentError(absl::StrCat("input ", i, " has negative dimension ", dim.dim_value()));
      }
      if (__builtin_mul_overflow(elements, dim.dim_value(), &elements)) {
        return absl::InvalidArgumentError(absl::StrCat("input ", i, " has more than 2^63 elements"));
      }
    }
  }
  // auto_pad SAME: ONNX's remainder loop runs dim / stride times.
  const onnx::AttributeProto* auto_pad = ctx.getAttribute("auto_pad");
  if (auto_pad != nullptr && auto_pad->s().rfind("SAME", 0) == 0 && ctx.getNumInputs() > 0) {
    const onnx::TypeProto* type = ctx.getInputType(0);
    const onnx::AttributeProto* strides = ctx.getAttribute("strides");
    if (type != nullptr && type->has_tensor_type() && strides != nullptr) {
      const onnx::TensorShapeProto& shape = type->tensor_type().shape();
      for (int i = 0; i < strides->ints_size() && 2 + i < shape.dim_size(); ++i) {
        if (shape.dim(2 + i).has_dim_value() && shape.dim(2 + i).dim_value() / strides->ints(i) > kMaxSamePadSteps) {
          return absl::InvalidArgumentError(absl::StrCat("input dimension ", shape.dim(2 + i).dim_value(),
                                                         " is too large for auto_pad ", auto_pad->s(), " with stride ",
                                                         strides->ints(i)));
        }
      }
    }
  }
  if (schema.domain() == onnx::ONNX_DOMAIN) {
    // Reshape: the product of the target dims (0 copies an input dim) must
    // fit 64 bits, or ONNX's -1 inference divides by a wrapped product.
    if (schema.Name() == "Reshape" && ctx.getNumInputs() > 1) {
      if (std::optional<std::vector<int64_t>> target = IntegerData(ctx.getInputData(1))) {
        const onnx::TypeProto* type = ctx.getInputType(0);
        int64_t product = 1;
        for (size_t i = 0; i < target->size(); ++i) {
          int64_t factor = (*target)[i];
          if (factor == 0 && type != nullptr && type->has_tensor_type() &&
              static_cast<int>(i) < type->tensor_type().shape().dim_size()) {
            factor = type->tensor_type().shape().dim(static_cast<int>(i)).dim_value();
          }
          if (factor > 0 && __builtin_mul_overflow(product, factor, &product)) {
            return absl::InvalidArgumentError("the target shape has more than 2^63 elements");
          }
        }
      }
    }
    // SplitToSequence: a scalar split size must be positive.
    if (schema.Name() == "SplitToSequence" && ctx.getNumInputs() > 1 && ctx.getInputData(1) != nullptr &&
        ctx.getInputData(1)->dims_size() == 0) {
      std::optional<std::vector<int64_t>> split = IntegerData(ctx.getInputData(1));
      if (split.has_value() && !split->empty() && (*split)[0] < 1) {
        return absl::InvalidArgumentError(absl::StrCat("split size must be positive, found ", (*split)[0]));
      }
    }
  }
  return absl::OkStatus();
}

// The ONNX schema registry with every inference function wrapped in
// CheckNodeContext. The first refusal is kept (with the op type) and the node
// fails inference.
class GuardedSchemaRegistry final : public onnx::ISchemaRegistry {
 public:
  const onnx::OpSchema* GetSchema(const std::string& key, const int max_version,
                                  const std::string& domain) const override {
    const onnx::OpSchema* schema = onnx::OpSchemaRegistry::Schema(key, max_version, domain);
    if (schema == nullptr || !schema->has_type_and_shape_inference_function()) return schema;
    std::unique_ptr<onnx::OpSchema>& guarded = guarded_[schema];
    if (guarded == nullptr) {
      guarded = std::make_unique<onnx::OpSchema>(*schema);
      guarded->TypeAndShapeInferenceFunction(
          [this, schema, inner = schema->GetTypeAndShapeInferenceFunction()](onnx::InferenceContext& ctx) {
            bool skip = false;
            absl::Status status = CheckNodeContext(*schema, ctx, &skip);
            if (!status.ok()) {
              if (refusal_.ok()) {
                refusal_ = status;
                refused_type_ = schema->Name();
                refused_domain_ = schema->domain();
              }
              fail_shape_inference(std::string(status.message()));
            }
            if (!skip) inner(ctx);
          });
    }
    return guarded.get();
  }

  const absl::Status& refusal() const { return refusal_; }
  const std::string& refused_type() const { return refused_type_; }
  const std::string& refused_domain() const { return refused_domain_; }

 private:
  mutable absl::flat_hash_map<const onnx::OpSchema*, std::unique_ptr<onnx::OpSchema>> guarded_;
  mutable absl::Status refusal_;
  mutable std::string refused_type_;
  mutable std::string refused_domain_;
};

// The refusal of `registry` as InvalidArgument naming the op: the first node
// of the refused type whose outputs inference left untyped.
absl::Status RefusalStatus(const GuardedSchemaRegistry& registry, const onnx::GraphProto& graph,
                           const std::vector<std::string>& names) {
  absl::flat_hash_set<std::string> typed;
  for (const auto* list : {&graph.value_info(), &graph.output()}) {
    for (const onnx::ValueInfoProto& v : *list) {
      if (v.type().value_case() != onnx::TypeProto::VALUE_NOT_SET) typed.insert(v.name());
    }
  }
  for (int i = 0; i < graph.node_size(); ++i) {
    const onnx::NodeProto& node = graph.node(i);
    const bool same_domain = node.domain() == registry.refused_domain() ||
                             (IsDefaultDomain(node.domain()) && registry.refused_domain() == onnx::ONNX_DOMAIN);
    if (node.op_type() != registry.refused_type() || !same_domain) continue;
    bool untyped = node.output_size() == 0;
    for (const std::string& out : node.output()) untyped = untyped || (!out.empty() && !typed.contains(out));
    if (!untyped) continue;
    return absl::InvalidArgumentError(
        absl::StrCat("op '", names[i], "' (", node.op_type(), "): ", registry.refusal().message()));
  }
  return absl::InvalidArgumentError(
      absl::StrCat("an op of type ", registry.refused_type(), ": ", registry.refusal().message()));
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
absl::StatusOr<TensorSpec> SpecFromType(const std::string& name, const onnx::TypeProto* type, const std::string& role,
                                        const OnnxImportOptions& options) {
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
int64_t Macs(const onnx::NodeProto& node, const absl::flat_hash_map<absl::string_view, const TensorSpec*>& specs) {
  auto shape = [&](int index, bool output) -> const std::vector<int64_t>* {
    const auto& names = output ? node.output() : node.input();
    if (index >= names.size() || names.Get(index).empty()) return nullptr;
    auto it = specs.find(names.Get(index));
    return it == specs.end() ? nullptr : &it->second->shape;
  };
  const std::vector<int64_t>* out = shape(0, /*output=*/true);
  const std::vector<int64_t>* a = shape(0, /*output=*/false);
  const std::vector<int64_t>* w = shape(1, /*output=*/false);
  const bool accumulate = node.domain() == kSerenityDomain && node.op_type() == kConvAccumulateOp;
  if (out == nullptr || a == nullptr || (!IsDefaultDomain(node.domain()) && !accumulate)) return 0;
  const std::string& type = node.op_type();
  if (type == "Conv" || accumulate) {
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

// CheckSerenityNodes, which has nothing to check (and is not run) when no
// node is of the serenity domain.
absl::Status CheckSerenityDomain(const onnx::ModelProto& model, const std::vector<std::string>& names) {
  for (const onnx::NodeProto& node : model.graph().node()) {
    if (node.domain() == kSerenityDomain) return CheckSerenityNodes(model, names);
  }
  return absl::OkStatus();
}

// Fixes the symbolic dims `options` gives, checks what ONNX's inference
// would trip over, and runs it (guarded) on `model`, whose nodes are named
// `names`.
absl::Status InferShapesGuarded(onnx::ModelProto* model, const std::vector<std::string>& names,
                                const OnnxImportOptions& options) {
  onnx::GraphProto* mutable_graph = model->mutable_graph();
  for (onnx::ValueInfoProto& v : *mutable_graph->mutable_input()) FixDims(v, options);
  for (onnx::ValueInfoProto& v : *mutable_graph->mutable_output()) FixDims(v, options);
  for (onnx::ValueInfoProto& v : *mutable_graph->mutable_value_info()) FixDims(v, options);
  RETURN_IF_ERROR(CheckBeforeShapeInference(*model, names));
  const onnx::GraphProto& graph = model->graph();
  GuardedSchemaRegistry registry;
  try {
    onnx::shape_inference::InferShapes(*model, &registry);
  } catch (const std::exception& e) {
    if (!registry.refusal().ok()) return RefusalStatus(registry, graph, names);
    return absl::InvalidArgumentError(absl::StrCat("ONNX shape inference failed: ", e.what()));
  } catch (...) {
    if (!registry.refusal().ok()) return RefusalStatus(registry, graph, names);
    return absl::InvalidArgumentError("ONNX shape inference failed with an unknown exception");
  }
  if (!registry.refusal().ok()) return RefusalStatus(registry, graph, names);
  return absl::OkStatus();
}

// The spec of a value known without its type, or nullopt.
using KnownSpec = std::function<std::optional<TensorSpec>(const std::string&)>;

// The GraphSpec of `graph` (nodes named `names`) once shape inference has
// run: `type_of` gives each value's type (null when not known), unless
// `known` (when given) gives its spec. The checks of ConvAccumulate nodes
// and everything after inference.
absl::StatusOr<GraphSpec> BuildGraphSpec(const onnx::GraphProto& graph, const std::vector<std::string>& names,
                                         const OnnxImportOptions& options,
                                         const std::function<const onnx::TypeProto*(const std::string&)>& type_of,
                                         const KnownSpec& known_spec = nullptr) {
  // The shapes of serenity.ConvAccumulate, whose inference, when it fails,
  // only leaves its output untyped (or as the model declares it).
  // Initializers have types of their own that inference does not record.
  bool accumulates = false;
  for (const onnx::NodeProto& node : graph.node()) {
    accumulates = accumulates || (node.domain() == kSerenityDomain && node.op_type() == kConvAccumulateOp);
  }
  absl::flat_hash_map<std::string, onnx::TypeProto> weight_types;
  auto add_weight_type = [&weight_types](const std::string& name, int32_t dtype, const auto& dims) {
    onnx::TypeProto_Tensor* tensor = weight_types[name].mutable_tensor_type();
    tensor->set_elem_type(dtype);
    tensor->mutable_shape();  // a scalar has a shape with no dims
    for (int64_t d : dims) tensor->mutable_shape()->add_dim()->set_dim_value(d);
  };
  for (const onnx::TensorProto& init : graph.initializer()) {
    if (accumulates) add_weight_type(init.name(), init.data_type(), init.dims());
  }
  for (const onnx::SparseTensorProto& init : graph.sparse_initializer()) {
    if (accumulates) add_weight_type(init.values().name(), init.values().data_type(), init.dims());
  }
  const std::function<const onnx::TypeProto*(const std::string&)> known =
      [&](const std::string& name) -> const onnx::TypeProto* {
    auto it = weight_types.find(name);
    return it != weight_types.end() ? &it->second : type_of(name);
  };
  for (int i = 0; i < graph.node_size(); ++i) {
    const onnx::NodeProto& node = graph.node(i);
    if (node.domain() != kSerenityDomain || node.op_type() != kConvAccumulateOp) continue;
    RETURN_IF_ERROR(CheckConvAccumulateNode(node, names[i], known));
  }

  GraphSpec spec;
  spec.name = graph.name();
  // Keyed by views of the graph's names (spec.tensors moves as it grows).
  absl::flat_hash_map<absl::string_view, size_t> tensor_index;
  const size_t expected = graph.initializer_size() + 2 * static_cast<size_t>(graph.node_size());
  tensor_index.reserve(expected);
  spec.tensors.reserve(expected);
  auto add = [&](absl::string_view key, TensorSpec t) {
    tensor_index.emplace(key, spec.tensors.size());
    spec.tensors.push_back(std::move(t));
  };

  // Weights: initializers (dense, then sparse, sized as dense), then
  // Constant outputs.
  for (const onnx::TensorProto& init : graph.initializer()) {
    if (tensor_index.contains(init.name())) continue;
    TensorSpec t{init.name(), {init.dims().begin(), init.dims().end()}, init.data_type(), -1, true};
    if (init.data_type() == onnx::TensorProto::STRING) t.bytes = 0;
    add(init.name(), std::move(t));
  }
  for (const onnx::SparseTensorProto& init : graph.sparse_initializer()) {
    const std::string& name = init.values().name();
    if (tensor_index.contains(name)) continue;
    add(name, TensorSpec{name, {init.dims().begin(), init.dims().end()}, init.values().data_type(), -1, true});
  }
  for (int i = 0; i < graph.node_size(); ++i) {
    const onnx::NodeProto& node = graph.node(i);
    if (node.op_type() != "Constant" || !IsDefaultDomain(node.domain())) continue;
    for (const std::string& out : node.output()) {
      if (out.empty() || tensor_index.contains(out)) continue;
      std::optional<TensorSpec> t = ConstantSpec(node, out);
      if (!t.has_value() && known_spec != nullptr) {
        t = known_spec(out);
        if (t.has_value()) t->is_weight = true;
      }
      if (!t.has_value()) {
        ASSIGN_OR_RETURN(t, SpecFromType(out, type_of(out), absl::StrCat("output of op '", names[i], "'"), options));
        t->is_weight = true;
      }
      add(out, std::move(*t));
    }
  }

  // Activations: every other value a node or the graph touches.
  // `role` names the use ("graph input", or with `op` "input of op '<op>'"),
  // spelled out only for a message.
  auto add_activation = [&](const std::string& name, absl::string_view role,
                            const std::string* op = nullptr) -> absl::Status {
    if (name.empty() || tensor_index.contains(name)) return absl::OkStatus();
    if (known_spec != nullptr) {
      if (std::optional<TensorSpec> t = known_spec(name); t.has_value()) {
        add(name, *std::move(t));
        return absl::OkStatus();
      }
    }
    const onnx::TypeProto* type = type_of(name);
    ASSIGN_OR_RETURN(
        TensorSpec t,
        SpecFromType(name, type, op == nullptr ? std::string(role) : absl::StrCat(role, " of op '", *op, "'"),
                     options));
    add(name, std::move(t));
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
      RETURN_IF_ERROR(add_activation(in, "input", &names[i]));
    }
    for (const std::string& out : node.output()) {
      RETURN_IF_ERROR(add_activation(out, "output", &names[i]));
    }
  }
  for (const onnx::ValueInfoProto& v : graph.output()) {
    RETURN_IF_ERROR(add_activation(v.name(), "graph output"));
    spec.outputs.push_back(v.name());
  }

  // Ops. MACs are capped so that their sum cannot overflow in Graph::Build.
  absl::flat_hash_map<absl::string_view, const TensorSpec*> by_name;
  by_name.reserve(tensor_index.size());
  for (const auto& [name, i] : tensor_index) by_name[name] = &spec.tensors[i];
  spec.ops.reserve(graph.node_size());
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
  if (!options.workspace_bytes.empty()) {
    for (size_t i = 0; i < spec.ops.size(); ++i) op_index[spec.ops[i].name] = i;
  }
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

}  // namespace

absl::StatusOr<GraphSpec> OnnxToGraphSpec(absl::string_view model_bytes, const OnnxImportOptions& options) {
  ASSIGN_OR_RETURN(onnx::ModelProto model, ParseModel(model_bytes));
  return OnnxModelToGraphSpec(std::move(model), options);
}

absl::StatusOr<GraphSpec> OnnxModelToGraphSpec(onnx::ModelProto model, const OnnxImportOptions& options) {
  if (!model.has_graph() || model.graph().node_size() == 0) {
    return absl::InvalidArgumentError("ONNX graph has no nodes");
  }
  for (const auto& [dim, value] : options.dim_values) {
    if (value < 0) return absl::InvalidArgumentError(absl::StrCat("dimension '", dim, "' must not be negative"));
  }

  // Names first, so errors can name ops; reject what cannot be scheduled.
  const onnx::GraphProto& graph = model.graph();
  const std::vector<std::string> names = ImporterNodeNames(graph);
  for (int i = 0; i < graph.node_size(); ++i) RETURN_IF_ERROR(CheckSupported(graph.node(i), names[i]));
  RegisterSerenityOpSchemas();
  RETURN_IF_ERROR(CheckSerenityDomain(model, names));
  RETURN_IF_ERROR(InferShapesGuarded(&model, names, options));

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
  return BuildGraphSpec(graph, names, options, type_of);
}

namespace {

// The op type the importer gives `node`.
std::string OpTypeOf(const onnx::NodeProto& node) {
  return IsDefaultDomain(node.domain()) ? node.op_type() : absl::StrCat(node.domain(), "::", node.op_type());
}

// True when `base` has an op named `name` of `node`'s type with exactly its
// inputs and outputs (none of them empty).
bool SameOp(const onnx::NodeProto& node, const std::string& name, const Graph& base) {
  const std::optional<OpId> id = base.FindOp(name);
  if (!id.has_value()) return false;
  const Op& op = base.op(*id);
  if (op.inputs.size() != static_cast<size_t>(node.input_size()) ||
      op.outputs.size() != static_cast<size_t>(node.output_size())) {
    return false;
  }
  for (int i = 0; i < node.input_size(); ++i) {
    if (base.tensor(op.inputs[i]).name != node.input(i)) return false;
  }
  for (int i = 0; i < node.output_size(); ++i) {
    if (base.tensor(op.outputs[i]).name != node.output(i)) return false;
  }
  return op.type == OpTypeOf(node);
}

// The type of a tensor of `base`.
onnx::TypeProto TypeOfTensor(const Tensor& tensor) {
  onnx::TypeProto type;
  onnx::TypeProto_Tensor* t = type.mutable_tensor_type();
  t->set_elem_type(tensor.dtype);
  t->mutable_shape();  // a scalar has a shape with no dims
  for (int64_t d : tensor.shape) t->mutable_shape()->add_dim()->set_dim_value(d);
  return type;
}

// OnnxModelToGraphSpecFrom without the fallback: any error means only that
// the shortcut does not apply.
absl::StatusOr<GraphSpec> ImportChangedNodes(const onnx::ModelProto& model, const OnnxImportOptions& options,
                                             const Graph& base) {
  if (!model.has_graph() || model.graph().node_size() == 0) return absl::InvalidArgumentError("no nodes");
  for (const auto& [dim, value] : options.dim_values) {
    if (value < 0) return absl::InvalidArgumentError("negative dimension");
  }
  const onnx::GraphProto& graph = model.graph();
  const std::vector<std::string> names = ImporterNodeNames(graph);
  for (int i = 0; i < graph.node_size(); ++i) RETURN_IF_ERROR(CheckSupported(graph.node(i), names[i]));
  RegisterSerenityOpSchemas();
  RETURN_IF_ERROR(CheckSerenityDomain(model, names));

  // Where each value of the model comes from.
  absl::flat_hash_map<absl::string_view, int> initializer, sparse, input, output, info, producer;
  for (int i = 0; i < graph.initializer_size(); ++i) initializer.emplace(graph.initializer(i).name(), i);
  for (int i = 0; i < graph.sparse_initializer_size(); ++i)
    sparse.emplace(graph.sparse_initializer(i).values().name(), i);
  for (int i = 0; i < graph.input_size(); ++i) input.emplace(graph.input(i).name(), i);
  for (int i = 0; i < graph.output_size(); ++i) output.emplace(graph.output(i).name(), i);
  for (int i = 0; i < graph.value_info_size(); ++i) info.emplace(graph.value_info(i).name(), i);
  for (int i = 0; i < graph.node_size(); ++i) {
    for (const std::string& out : graph.node(i).output()) producer.emplace(out, i);
  }

  // The nodes base does not have, and the Constants they read, make a model
  // of their own: inferred alone, with every other value they read given
  // as base has it (or as the model states it).
  std::vector<bool> changed(graph.node_size(), false);
  absl::flat_hash_set<absl::string_view> made_here;  // outputs of changed nodes
  for (int i = 0; i < graph.node_size(); ++i) {
    if (SameOp(graph.node(i), names[i], base)) continue;
    changed[i] = true;
    made_here.insert(graph.node(i).output().begin(), graph.node(i).output().end());
  }
  onnx::ModelProto part;
  part.set_ir_version(model.ir_version());
  *part.mutable_opset_import() = model.opset_import();
  *part.mutable_functions() = model.functions();
  onnx::GraphProto* sub = part.mutable_graph();
  sub->set_name(graph.name());
  std::vector<int> constants;  // unchanged Constant nodes the changed ones read
  absl::flat_hash_set<absl::string_view> given;
  for (int i = 0; i < graph.node_size(); ++i) {
    if (!changed[i]) continue;
    for (const std::string& in : graph.node(i).input()) {
      if (in.empty() || made_here.contains(in) || !given.insert(in).second) continue;
      if (auto it = initializer.find(in); it != initializer.end()) {
        *sub->add_initializer() = graph.initializer(it->second);
        if (auto listed = input.find(in); listed != input.end()) *sub->add_input() = graph.input(listed->second);
      } else if (auto it = sparse.find(in); it != sparse.end()) {
        *sub->add_sparse_initializer() = graph.sparse_initializer(it->second);
        if (auto listed = input.find(in); listed != input.end()) *sub->add_input() = graph.input(listed->second);
      } else if (auto it = input.find(in); it != input.end()) {
        *sub->add_input() = graph.input(it->second);
      } else if (auto made = producer.find(in); made != producer.end() &&
                                                graph.node(made->second).op_type() == "Constant" &&
                                                IsDefaultDomain(graph.node(made->second).domain())) {
        constants.push_back(made->second);
      } else if (std::optional<TensorId> t = base.FindTensor(in); t.has_value()) {
        onnx::ValueInfoProto* v = sub->add_input();
        v->set_name(in);
        *v->mutable_type() = TypeOfTensor(base.tensor(*t));
      }
    }
  }
  std::sort(constants.begin(), constants.end());
  constants.erase(std::unique(constants.begin(), constants.end()), constants.end());
  std::vector<std::string> sub_names;
  std::vector<int> sub_nodes = constants;
  for (int i = 0; i < graph.node_size(); ++i) {
    if (changed[i]) sub_nodes.push_back(i);
  }
  for (int i : sub_nodes) {
    *sub->add_node() = graph.node(i);
    sub_names.push_back(names[i]);
    for (const std::string& out : graph.node(i).output()) {
      if (auto it = info.find(out); it != info.end()) *sub->add_value_info() = graph.value_info(it->second);
      if (auto it = output.find(out); it != output.end()) *sub->add_output() = graph.output(it->second);
    }
  }
  if (!sub_nodes.empty()) RETURN_IF_ERROR(InferShapesGuarded(&part, sub_names, options));

  // Types: the part's, then base's (made as asked for).
  absl::flat_hash_map<std::string, const onnx::TypeProto*> types;
  for (const auto* list : {&sub->value_info(), &sub->input(), &sub->output()}) {
    for (const onnx::ValueInfoProto& v : *list) {
      if (v.type().value_case() != onnx::TypeProto::VALUE_NOT_SET) types[v.name()] = &v.type();
    }
  }
  absl::flat_hash_map<std::string, std::unique_ptr<onnx::TypeProto>> from_base;
  const std::function<const onnx::TypeProto*(const std::string&)> type_of =
      [&](const std::string& name) -> const onnx::TypeProto* {
    if (auto it = types.find(name); it != types.end()) return it->second;
    std::unique_ptr<onnx::TypeProto>& made = from_base[name];
    if (made == nullptr) {
      const std::optional<TensorId> t = base.FindTensor(name);
      if (!t.has_value()) return nullptr;
      made = std::make_unique<onnx::TypeProto>(TypeOfTensor(base.tensor(*t)));
    }
    return made.get();
  };
  // A value base has that a changed node now makes must keep base's type:
  // the unchanged nodes reading it were typed by it.
  for (int i : sub_nodes) {
    for (const std::string& out : graph.node(i).output()) {
      const std::optional<TensorId> t = base.FindTensor(out);
      if (!t.has_value()) continue;
      auto it = types.find(out);
      if (it == types.end()) return absl::InvalidArgumentError("a changed value without a type");
      ASSIGN_OR_RETURN(TensorSpec spec, SpecFromType(out, it->second, "output", options));
      if (spec.shape != base.tensor(*t).shape || spec.dtype != base.tensor(*t).dtype) {
        return absl::InvalidArgumentError("a changed value of another type");
      }
    }
  }
  const KnownSpec known = [&](const std::string& name) -> std::optional<TensorSpec> {
    if (types.contains(name)) return std::nullopt;
    const std::optional<TensorId> t = base.FindTensor(name);
    if (!t.has_value()) return std::nullopt;
    return TensorSpec{name, base.tensor(*t).shape, base.tensor(*t).dtype, -1, false};
  };
  return BuildGraphSpec(graph, names, options, type_of, known);
}

}  // namespace

absl::StatusOr<GraphSpec> OnnxModelToGraphSpecFrom(const onnx::ModelProto& model, const OnnxImportOptions& options,
                                                   const Graph& base) {
  absl::StatusOr<GraphSpec> spec = ImportChangedNodes(model, options, base);
  if (spec.ok()) return spec;
  return OnnxModelToGraphSpec(model, options);
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

std::vector<std::string> ImporterNodeNames(const onnx::GraphProto& graph) {
  std::vector<std::string> names;
  absl::flat_hash_set<std::string> taken;
  for (int i = 0; i < graph.node_size(); ++i) {
    const onnx::NodeProto& node = graph.node(i);
    std::string name = node.name().empty() ? absl::StrCat(node.op_type(), "_", i) : node.name();
    while (taken.contains(name)) absl::StrAppend(&name, "_", i);
    taken.insert(name);
    names.push_back(std::move(name));
  }
  return names;
}

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
