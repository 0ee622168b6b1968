#include "core/onnx/serenity_ops.h"

#include <exception>
#include <mutex>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "onnx/defs/schema.h"
#include "onnx/defs/shape_inference.h"
#include "onnx/onnx_pb.h"

namespace serenity {
namespace {

// Inputs 0 and 1 of a ConvAccumulate node as a Conv node's (X, W), with its
// attributes, for ONNX's Conv shape inference; the output type is kept here.
class ConvView final : public onnx::InferenceContext {
 public:
  explicit ConvView(onnx::InferenceContext& node) : node_(node) {}

  const onnx::AttributeProto* getAttribute(const std::string& name) const override { return node_.getAttribute(name); }
  size_t getNumInputs() const override { return 2; }
  const onnx::TypeProto* getInputType(size_t index) const override { return node_.getInputType(index); }
  const onnx::TensorProto* getInputData(size_t index) const override { return node_.getInputData(index); }
  size_t getNumOutputs() const override { return 1; }
  onnx::TypeProto* getOutputType(size_t) override { return &output_; }
  onnx::GraphInferencer* getGraphAttributeInferencer(const std::string&) override { return nullptr; }
  const onnx::SparseTensorProto* getInputSparseData(size_t index) const override {
    return node_.getInputSparseData(index);
  }
  const onnx::TensorShapeProto* getSymbolicInput(size_t index) const override { return node_.getSymbolicInput(index); }

  const onnx::TypeProto& output() const { return output_; }

 private:
  onnx::InferenceContext& node_;
  onnx::TypeProto output_;
};

// A node's inference context from the value types known after inference.
class NodeView final : public onnx::InferenceContext {
 public:
  NodeView(const onnx::NodeProto& node, const std::function<const onnx::TypeProto*(const std::string&)>& type_of)
      : node_(node), type_of_(type_of) {}

  const onnx::AttributeProto* getAttribute(const std::string& name) const override {
    for (const onnx::AttributeProto& attr : node_.attribute()) {
      if (attr.name() == name) return &attr;
    }
    return nullptr;
  }
  size_t getNumInputs() const override { return static_cast<size_t>(node_.input_size()); }
  const onnx::TypeProto* getInputType(size_t index) const override {
    return index < getNumInputs() ? type_of_(node_.input(static_cast<int>(index))) : nullptr;
  }
  const onnx::TensorProto* getInputData(size_t) const override { return nullptr; }
  size_t getNumOutputs() const override { return static_cast<size_t>(node_.output_size()); }
  onnx::TypeProto* getOutputType(size_t) override { return &output_; }
  onnx::GraphInferencer* getGraphAttributeInferencer(const std::string&) override { return nullptr; }
  const onnx::SparseTensorProto* getInputSparseData(size_t) const override { return nullptr; }
  const onnx::TensorShapeProto* getSymbolicInput(size_t) const override { return nullptr; }

 private:
  const onnx::NodeProto& node_;
  const std::function<const onnx::TypeProto*(const std::string&)>& type_of_;
  onnx::TypeProto output_;
};

// The shape of a tensor type with a shape, or null.
const onnx::TensorShapeProto* ShapeOf(const onnx::TypeProto* type) {
  if (type == nullptr || !type->has_tensor_type() || !type->tensor_type().has_shape()) return nullptr;
  return &type->tensor_type().shape();
}

std::string DimsText(const onnx::TensorShapeProto& shape) {
  std::vector<std::string> dims;
  for (const onnx::TensorShapeProto_Dimension& d : shape.dim()) {
    dims.push_back(d.has_dim_value() ? absl::StrCat(d.dim_value()) : d.has_dim_param() ? d.dim_param() : "?");
  }
  return absl::StrCat("[", absl::StrJoin(dims, ", "), "]");
}

onnx::OpSchema ConvAccumulateSchema() {
  onnx::OpSchema schema(kConvAccumulateOp, __FILE__, __LINE__);
  schema.SetDomain(kSerenityDomain)
      .SinceVersion(kSerenityOpsetVersion)
      .SetDoc("Y = ACC + Conv(X, W), written into ACC's memory (see core/onnx/serenity_ops.h).")
      .Input(0, "X", "Conv's input: (N x C x D1 x ... x Dn).", "T")
      .Input(1, "W", "Conv's weight: (M x C/group x k1 x ... x kn).", "T")
      .Input(2, "ACC", "The running sum, Conv(X, W)'s shape; read by this op only.", "T")
      .Output(0, "Y", "ACC + Conv(X, W), in ACC's memory.", "T")
      .TypeConstraint("T", {"tensor(float16)", "tensor(float)", "tensor(double)"},
                      "Conv's element types; X, W and ACC share one.")
      .Attr("auto_pad", "As Conv's.", onnx::AttributeProto::STRING, std::string("NOTSET"))
      .Attr("kernel_shape", "As Conv's.", onnx::AttributeProto::INTS, /*required=*/false)
      .Attr("dilations", "As Conv's.", onnx::AttributeProto::INTS, /*required=*/false)
      .Attr("strides", "As Conv's.", onnx::AttributeProto::INTS, /*required=*/false)
      .Attr("pads", "As Conv's.", onnx::AttributeProto::INTS, /*required=*/false)
      .Attr("group", "As Conv's.", onnx::AttributeProto::INT, static_cast<int64_t>(1))
      .TypeAndShapeInferenceFunction([](onnx::InferenceContext& ctx) {
        onnx::TypeProto output;
        output.Clear();
        absl::Status status = InferConvAccumulate(ctx, &output);
        if (!status.ok()) fail_shape_inference(std::string(status.message()));
        if (output.value_case() != onnx::TypeProto::VALUE_NOT_SET) *ctx.getOutputType(0) = output;
      });
  return schema;
}

}  // namespace

void RegisterSerenityOpSchemas() {
  static std::once_flag once;
  std::call_once(once, [] {
    // The standard schemas first (the registry loads them lazily).
    onnx::OpSchemaRegistry::Schema("Conv", onnx::ONNX_DOMAIN);
    onnx::OpSchemaRegistry::DomainToVersionRange& ranges = onnx::OpSchemaRegistry::DomainToVersionRange::Instance();
    if (ranges.Map().count(kSerenityDomain) == 0) {
      ranges.AddDomainToVersion(kSerenityDomain, kSerenityOpsetVersion, kSerenityOpsetVersion);
    }
    if (onnx::OpSchemaRegistry::Schema(kConvAccumulateOp, kSerenityOpsetVersion, kSerenityDomain) == nullptr) {
      onnx::OpSchema schema = ConvAccumulateSchema();
      onnx::OpSchemaRegistry::OpSchemaRegisterOnce once_registered(schema);
    }
  });
}

namespace {

// Registered at static initialization too, before any thread can read the
// ONNX registry (a service runs imports, rewrites and exports in parallel,
// and registering inserts into the registry's maps). This object file is
// linked whenever the importer or the export is.
[[maybe_unused]] const bool kRegisteredAtStart = (RegisterSerenityOpSchemas(), true);

}  // namespace

absl::Status InferConvAccumulate(onnx::InferenceContext& ctx, onnx::TypeProto* output) {
  if (ctx.getNumInputs() != 3 || ctx.getNumOutputs() != 1) {
    return absl::InvalidArgumentError(absl::StrCat("ConvAccumulate takes 3 inputs (X, W, ACC) and gives 1 output, ",
                                                   "not ", ctx.getNumInputs(), " and ", ctx.getNumOutputs()));
  }
  const onnx::TensorShapeProto* x = ShapeOf(ctx.getInputType(0));
  const onnx::TensorShapeProto* w = ShapeOf(ctx.getInputType(1));
  const onnx::TensorShapeProto* acc = ShapeOf(ctx.getInputType(2));
  if (x == nullptr || w == nullptr || acc == nullptr) return absl::OkStatus();
  const int32_t type = ctx.getInputType(0)->tensor_type().elem_type();
  if (ctx.getInputType(1)->tensor_type().elem_type() != type ||
      ctx.getInputType(2)->tensor_type().elem_type() != type) {
    return absl::InvalidArgumentError(absl::StrCat("X, W and ACC must have one element type, found ", type, ", ",
                                                   ctx.getInputType(1)->tensor_type().elem_type(), " and ",
                                                   ctx.getInputType(2)->tensor_type().elem_type()));
  }
  if (x->dim_size() < 3 || w->dim_size() != x->dim_size() || acc->dim_size() != x->dim_size()) {
    return absl::InvalidArgumentError(absl::StrCat("X ", DimsText(*x), ", W ", DimsText(*w), " and ACC ",
                                                   DimsText(*acc), " must have one rank of at least 3"));
  }
  int64_t group = 1;
  if (const onnx::AttributeProto* attr = ctx.getAttribute("group"); attr != nullptr) group = attr->i();
  if (group < 1) return absl::InvalidArgumentError(absl::StrCat("group must be positive, found ", group));
  if (x->dim(1).has_dim_value() && w->dim(1).has_dim_value() &&
      (w->dim(1).dim_value() > INT64_MAX / group || x->dim(1).dim_value() != w->dim(1).dim_value() * group)) {
    return absl::InvalidArgumentError(absl::StrCat("X ", DimsText(*x), " has ", x->dim(1).dim_value(),
                                                   " channels, but W ", DimsText(*w), " with group ", group, " takes ",
                                                   DimsText(*w), "[1] * group"));
  }
  if (w->dim(0).has_dim_value() && w->dim(0).dim_value() % group != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("W ", DimsText(*w), " has ", w->dim(0).dim_value(), " filters, not a multiple of group ", group));
  }
  const onnx::OpSchema* conv = onnx::OpSchemaRegistry::Schema("Conv", onnx::ONNX_DOMAIN);
  if (conv == nullptr || !conv->has_type_and_shape_inference_function()) {
    return absl::InternalError("ONNX has no Conv shape inference");
  }
  ConvView view(ctx);
  try {
    conv->GetTypeAndShapeInferenceFunction()(view);
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("as a Conv of X ", DimsText(*x), " and W ", DimsText(*w), ": ", e.what()));
  }
  const onnx::TensorShapeProto* y = ShapeOf(&view.output());
  if (y != nullptr) {
    bool same = y->dim_size() == acc->dim_size();
    for (int i = 0; same && i < y->dim_size(); ++i) {
      same = !y->dim(i).has_dim_value() || !acc->dim(i).has_dim_value() ||
             y->dim(i).dim_value() == acc->dim(i).dim_value();
    }
    if (!same) {
      return absl::InvalidArgumentError(
          absl::StrCat("Conv(X, W) has shape ", DimsText(*y), " but ACC has ", DimsText(*acc), ": they must be equal"));
    }
  }
  if (output != nullptr) *output = *ctx.getInputType(2);
  return absl::OkStatus();
}

absl::Status CheckConvAccumulateNode(const onnx::NodeProto& node, const std::string& name,
                                     const std::function<const onnx::TypeProto*(const std::string&)>& type_of) {
  NodeView view(node, type_of);
  absl::Status status = InferConvAccumulate(view, /*output=*/nullptr);
  if (status.ok()) return status;
  return absl::InvalidArgumentError(absl::StrCat("op '", name, "' (", kConvAccumulateOp, "): ", status.message()));
}

absl::Status CheckSerenityNodes(const onnx::ModelProto& model, const std::vector<std::string>& names) {
  const onnx::GraphProto& graph = model.graph();
  int64_t imported = -1;  // the model's serenity opset version, -1 if none
  for (const onnx::OperatorSetIdProto& opset : model.opset_import()) {
    if (opset.domain() == kSerenityDomain) imported = opset.version();
  }
  absl::flat_hash_set<std::string> not_produced;  // graph inputs and weights
  for (const onnx::ValueInfoProto& v : graph.input()) not_produced.insert(v.name());
  for (const onnx::TensorProto& t : graph.initializer()) not_produced.insert(t.name());
  for (const onnx::SparseTensorProto& t : graph.sparse_initializer()) not_produced.insert(t.values().name());
  absl::flat_hash_map<std::string, int> producer;
  for (int i = 0; i < graph.node_size(); ++i) {
    for (const std::string& out : graph.node(i).output()) {
      if (!out.empty()) producer.emplace(out, i);
    }
  }
  absl::flat_hash_set<std::string> outputs;
  for (const onnx::ValueInfoProto& v : graph.output()) outputs.insert(v.name());
  // Readers of each accumulator: (node, input index).
  absl::flat_hash_map<std::string, std::vector<std::pair<int, int>>> readers;
  for (int i = 0; i < graph.node_size(); ++i) {
    const onnx::NodeProto& node = graph.node(i);
    if (node.domain() != kSerenityDomain || node.op_type() != kConvAccumulateOp || node.input_size() < 3) continue;
    readers[node.input(2)];
  }
  for (int i = 0; i < graph.node_size(); ++i) {
    const onnx::NodeProto& node = graph.node(i);
    for (int j = 0; j < node.input_size(); ++j) {
      auto it = readers.find(node.input(j));
      if (it != readers.end()) it->second.emplace_back(i, j);
    }
  }

  for (int i = 0; i < graph.node_size(); ++i) {
    const onnx::NodeProto& node = graph.node(i);
    if (node.domain() != kSerenityDomain) continue;
    const std::string op = absl::StrCat("op '", names[i], "' (", node.domain(), ".", node.op_type(), ")");
    if (node.op_type() != kConvAccumulateOp) {
      return absl::InvalidArgumentError(
          absl::StrCat(op, ": the serenity domain has one op, ", kConvAccumulateOp, " (version 1)"));
    }
    if (imported < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          op, ": the model uses domain 'serenity' without importing it (opset_import domain \"serenity\" version ",
          kSerenityOpsetVersion, ")"));
    }
    if (imported != kSerenityOpsetVersion) {
      return absl::InvalidArgumentError(absl::StrCat(op, ": the model imports domain 'serenity' at version ", imported,
                                                     "; only version ", kSerenityOpsetVersion, " exists"));
    }
    if (node.input_size() != 3 || node.output_size() != 1 || node.output(0).empty()) {
      return absl::InvalidArgumentError(absl::StrCat(op, ": takes 3 inputs (X, W, ACC) and gives 1 output, not ",
                                                     node.input_size(), " and ", node.output_size()));
    }
    for (const std::string& in : node.input()) {
      if (in.empty()) return absl::InvalidArgumentError(absl::StrCat(op, ": no input is optional"));
    }
    const std::string& acc = node.input(2);
    auto made = producer.find(acc);
    if (not_produced.contains(acc) || made == producer.end() ||
        (graph.node(made->second).op_type() == "Constant" && graph.node(made->second).domain().empty())) {
      return absl::InvalidArgumentError(absl::StrCat(
          op, ": the accumulator '", acc,
          "' must be an activation that an op produces (not a graph input, initializer or Constant), as the output "
          "is written into its memory"));
    }
    if (outputs.contains(acc)) {
      return absl::InvalidArgumentError(
          absl::StrCat(op, ": the accumulator '", acc,
                       "' is a graph output, which the output, written into its memory, would change"));
    }
    for (const auto& [reader, index] : readers.at(acc)) {
      if (reader == i && index == 2) continue;
      return absl::InvalidArgumentError(
          absl::StrCat(op, ": the accumulator '", acc, "' is also read by ", reader == i ? "this op's input " : "op '",
                       reader == i ? absl::StrCat(index) : absl::StrCat(names[reader], "'"),
                       "; the output is written into its memory, so it may have no other reader"));
    }
  }
  return absl::OkStatus();
}

}  // namespace serenity
