#include "core/rewrite/per_channel.h"

#include <cstring>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"

namespace serenity {
namespace {

bool DefaultDomain(const onnx::NodeProto& node) { return node.domain().empty() || node.domain() == "ai.onnx"; }

bool OneOf(absl::string_view type, std::initializer_list<absl::string_view> types) {
  for (absl::string_view t : types) {
    if (type == t) return true;
  }
  return false;
}

bool IsUnary(absl::string_view type) {
  return OneOf(type, {"Relu",        "LeakyRelu", "Elu",   "Selu",     "Celu",     "Sigmoid",
                      "HardSigmoid", "HardSwish", "Tanh",  "Softplus", "Softsign", "ThresholdedRelu",
                      "Neg",         "Abs",       "Exp",   "Log",      "Sqrt",     "Reciprocal",
                      "Floor",       "Ceil",      "Round", "Sign",     "Erf",      "Sin",
                      "Cos",         "Identity",  "Clip"});
}

bool IsPool(absl::string_view type) {
  return OneOf(type, {"MaxPool", "AveragePool", "LpPool", "GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool"});
}

bool IsBinary(absl::string_view type) { return OneOf(type, {"Add", "Sub", "Mul", "Div", "PRelu", "Pow"}); }

// The constant tensor `name`: an initializer or a Constant node's value.
const onnx::TensorProto* ConstantTensor(const std::string& name, const onnx::GraphProto& graph,
                                        const ModelIndex& index) {
  if (auto it = index.initializers.find(name); it != index.initializers.end()) return &graph.initializer(it->second);
  auto it = index.producer.find(name);
  if (it == index.producer.end()) return nullptr;
  const onnx::NodeProto& node = graph.node(it->second);
  if (node.op_type() != "Constant" || !DefaultDomain(node)) return nullptr;
  for (const onnx::AttributeProto& attr : node.attribute()) {
    if (attr.name() == "value" && attr.has_t()) return &attr.t();
  }
  return nullptr;
}

bool IsConstant(const std::string& name, const onnx::GraphProto& graph, const ModelIndex& index) {
  return ConstantTensor(name, graph, index) != nullptr;
}

// The integers of constant `t` (INT32 or INT64, typed or raw); nullopt
// when it has no data (stripped or external) or another type.
std::optional<std::vector<int64_t>> ConstantInts(const onnx::TensorProto& t) {
  if (t.data_location() == onnx::TensorProto::EXTERNAL) return std::nullopt;
  std::vector<int64_t> values;
  if (t.data_type() == onnx::TensorProto::INT64) {
    values.assign(t.int64_data().begin(), t.int64_data().end());
    if (values.empty() && !t.raw_data().empty()) {
      values.resize(t.raw_data().size() / sizeof(int64_t));
      std::memcpy(values.data(), t.raw_data().data(), values.size() * sizeof(int64_t));
    }
  } else if (t.data_type() == onnx::TensorProto::INT32) {
    values.assign(t.int32_data().begin(), t.int32_data().end());
    if (values.empty() && !t.raw_data().empty()) {
      std::vector<int32_t> raw(t.raw_data().size() / sizeof(int32_t));
      std::memcpy(raw.data(), t.raw_data().data(), raw.size() * sizeof(int32_t));
      values.assign(raw.begin(), raw.end());
    }
  } else {
    return std::nullopt;
  }
  int64_t elements = 1;
  for (int64_t d : t.dims()) elements *= d;
  if (static_cast<int64_t>(values.size()) != elements) return std::nullopt;
  return values;
}

// Opset 10+ Slice (starts, ends, axes, steps as inputs) that leaves the
// channel axis whole. With an axes constant that has data: no axis is 1
// (a negative axis counts from the data's rank, which must then be known
// from the shapes the model states or from `rank_hint`). Otherwise (no axes: every axis from
// 0; or axes without data, as in a stripped model): the stated shapes of
// the data and the output have the same channel count, and every step is
// known to be positive (no steps input, or steps with data): a Slice with
// positive steps that keeps all C channels takes them all, in order. (A
// step of -1 along axis 1 would keep the count and reverse the channels:
// then the Slice is not per-channel.) Steps without any data (a stripped
// model, whose recipe is applied to the model with its data, where this is
// checked again) are taken as positive, and `assumption` says so.
bool IsChannelKeepingSlice(const onnx::NodeProto& node, const std::string& data, const onnx::GraphProto& graph,
                           const ModelIndex& index, int rank_hint, std::string* assumption) {
  if (node.input(0) != data || node.input_size() < 3) return false;
  for (int i = 1; i < node.input_size(); ++i) {
    if (!node.input(i).empty() && !IsConstant(node.input(i), graph, index)) return false;
  }
  auto in = index.shapes.find(data);
  auto out = index.shapes.find(node.output(0));
  const int rank = in != index.shapes.end()    ? static_cast<int>(in->second.size())
                   : out != index.shapes.end() ? static_cast<int>(out->second.size())
                                               : rank_hint;
  const bool has_axes = node.input_size() > 3 && !node.input(3).empty();
  if (has_axes) {
    const onnx::TensorProto* axes = ConstantTensor(node.input(3), graph, index);
    if (axes == nullptr) return false;
    if (std::optional<std::vector<int64_t>> values = ConstantInts(*axes); values.has_value()) {
      for (int64_t axis : *values) {
        if (axis < 0 && rank == 0) return false;  // cannot tell which axis
        if ((axis < 0 ? axis + rank : axis) == 1) return false;
      }
      return true;
    }
  }
  const bool has_steps = node.input_size() > 4 && !node.input(4).empty();
  bool steps_unknown = false;
  if (has_steps) {
    const onnx::TensorProto* steps = ConstantTensor(node.input(4), graph, index);
    if (steps == nullptr) return false;
    std::optional<std::vector<int64_t>> values = ConstantInts(*steps);
    if (values.has_value()) {
      for (int64_t step : *values) {
        if (step <= 0) return false;
      }
    } else if (steps->data_location() == onnx::TensorProto::EXTERNAL || steps->raw_data().empty()) {
      steps_unknown = true;  // stripped: see below
    } else {
      return false;
    }
  }
  if (in == index.shapes.end() || out == index.shapes.end() || rank < 2 || out->second.size() != in->second.size()) {
    return false;
  }
  if (out->second[1] != in->second[1]) return false;
  if (steps_unknown) {
    *assumption = absl::StrCat("Slice '", node.name(),
                               "': its steps have no data (a stripped model), taken as positive since the stated "
                               "shapes keep the channel count; applying the recipe to the model with its data checks "
                               "them");
  }
  return true;
}

}  // namespace

bool IsPerChannelOp(const onnx::NodeProto& node, const std::string& data, const onnx::GraphProto& graph,
                    const ModelIndex& index, std::string* assumption, int rank_hint) {
  if (!DefaultDomain(node) || node.output_size() != 1 || node.input_size() < 1) return false;
  int reads = 0;
  for (const std::string& in : node.input()) reads += in == data ? 1 : 0;
  if (reads != 1) return false;
  const std::string& type = node.op_type();
  if (IsUnary(type) || IsPool(type)) {
    if (node.input(0) != data) return false;
    for (int i = 1; i < node.input_size(); ++i) {  // Clip's min and max
      if (!node.input(i).empty() && !IsConstant(node.input(i), graph, index)) return false;
    }
    return true;
  }
  if (type == "BatchNormalization") {
    if (node.input(0) != data || node.input_size() != 5) return false;
    for (const onnx::AttributeProto& attr : node.attribute()) {
      if (attr.name() == "training_mode" && attr.i() != 0) return false;
    }
    for (int i = 1; i < 5; ++i) {
      if (!index.initializers.contains(node.input(i))) return false;
    }
    return true;
  }
  if (type == "Slice") {
    std::string unused;
    return IsChannelKeepingSlice(node, data, graph, index, rank_hint, assumption != nullptr ? assumption : &unused);
  }
  if (IsBinary(type)) {
    if (node.input_size() != 2) return false;
    // Opset < 7 broadcasting (attributes broadcast and axis) aligns the
    // constant at `axis`, not at the trailing axes: not handled.
    for (const onnx::AttributeProto& attr : node.attribute()) {
      if (attr.name() == "broadcast" || attr.name() == "axis") return false;
    }
    if (type == "PRelu" && node.input(0) != data) return false;
    const std::string& other = node.input(0) == data ? node.input(1) : node.input(0);
    return IsConstant(other, graph, index);
  }
  return false;
}

absl::StatusOr<onnx::NodeProto> PartOfPerChannelOp(const onnx::NodeProto& node, const onnx::GraphProto& graph,
                                                   const ModelIndex& index, const std::string& data, int rank,
                                                   int64_t channels, int64_t begin, int64_t end,
                                                   const std::string& input, const std::string& name,
                                                   const std::string& output, const SliceWeight& slice) {
  const auto refuse = [&](absl::string_view why) {
    return absl::FailedPreconditionError(
        absl::StrCat(node.op_type(), " '", node.name(), "' not pushed through: ", why));
  };
  onnx::NodeProto part = node;
  part.set_name(name);
  part.set_output(0, output);
  for (int i = 0; i < part.input_size(); ++i) {
    const std::string& in = node.input(i);
    if (in == data) {
      part.set_input(i, input);
      continue;
    }
    if (in.empty() || node.op_type() == "Slice") continue;  // Slice's constants name spatial axes
    const onnx::TensorProto* constant = ConstantTensor(in, graph, index);
    if (constant == nullptr) return refuse(absl::StrCat("'", in, "' is no constant"));
    // Broadcasting aligns trailing axes: the data's channel axis 1 is the
    // constant's axis r - rank + 1 (BatchNormalization's parameters are
    // one value per channel).
    const int r = constant->dims_size();
    int axis = node.op_type() == "BatchNormalization" ? 0 : r - rank + 1;
    if (node.op_type() == "BatchNormalization" && r != 1) return refuse("a parameter is not one value per channel");
    if (r > rank) return refuse(absl::StrCat("'", in, "' has more axes than the data"));
    if (axis < 0 || constant->dims(axis) == 1) continue;  // the same for every channel
    if (constant->dims(axis) != channels) {
      return refuse(
          absl::StrCat("'", in, "' has ", constant->dims(axis), " values along the channel axis, not ", channels));
    }
    // A Constant node's value has no name of its own: its slice is named
    // after the tensor the node makes.
    onnx::TensorProto named;
    if (constant->name() != in) {
      named = *constant;
      named.set_name(in);
      constant = &named;
    }
    absl::StatusOr<std::string> sliced = slice(*constant, axis, begin, end);
    if (!sliced.ok()) return refuse(sliced.status().message());
    part.set_input(i, *std::move(sliced));
  }
  return part;
}

}  // namespace serenity
