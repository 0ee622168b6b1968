#include "core/onnx/primitive_catalogue.h"

#include <algorithm>
#include <climits>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "core/graph/dtype.h"
#include "onnx/onnx_pb.h"

namespace serenity {
namespace {

// Every size is counted in float32.
constexpr int64_t kElementBytes = 4;
// The model's rates, in MACs per microsecond: a plain loop, and a blocked
// GEMM (im2col's, packed), which Winograd F(2,3) and F(4,3) divide by 2.25
// and 4 multiplications.
constexpr double kDirectMacsPerUs = 2000.0;
constexpr double kGemmMacsPerUs = 8000.0;

// The product of `factors` (none negative), or nullopt beyond INT64_MAX.
std::optional<int64_t> CheckedProduct(std::initializer_list<int64_t> factors) {
  int64_t product = 1;
  for (int64_t f : factors) {
    if (__builtin_mul_overflow(product, f, &product)) return std::nullopt;
  }
  return product;
}

// Appends {name, macs / macs_per_us, bytes} to `out`; false (and nothing
// appended) when the time or the bytes do not fit.
bool Append(const char* name, int64_t macs, double macs_per_us, std::optional<int64_t> bytes,
            std::vector<Primitive>* out) {
  const double time_us = static_cast<double>(macs) / macs_per_us;
  if (!bytes.has_value() || !(time_us <= kMaxPrimitiveTimeUs)) return false;
  Primitive p;
  p.name = name;
  p.time_us = time_us;
  p.workspace_bytes = *bytes;
  out->push_back(std::move(p));
  return true;
}

const onnx::AttributeProto* FindAttribute(const onnx::NodeProto& node, const char* name) {
  for (const onnx::AttributeProto& a : node.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

// The two values of a 2-D Conv's ints attribute (default 1, 1); false when
// it has not two.
bool PairAttribute(const onnx::NodeProto& node, const char* name, int64_t* first, int64_t* second) {
  const onnx::AttributeProto* a = FindAttribute(node, name);
  if (a == nullptr) return true;  // (the defaults, already set)
  if (a->ints_size() != 2) return false;
  *first = a->ints(0);
  *second = a->ints(1);
  return true;
}

using Shapes = absl::flat_hash_map<absl::string_view, const std::vector<int64_t>*>;

// The shape of input (or output) `index` of `node`, or null.
const std::vector<int64_t>* ShapeOf(const onnx::NodeProto& node, int index, bool output, const Shapes& shapes) {
  const auto& names = output ? node.output() : node.input();
  if (index >= names.size() || names.Get(index).empty()) return nullptr;
  auto it = shapes.find(names.Get(index));
  if (it == shapes.end()) return nullptr;
  for (int64_t d : *it->second) {
    if (d < 0) return nullptr;
  }
  return it->second;
}

std::vector<Primitive> ConvNode(const onnx::NodeProto& node, const Shapes& shapes) {
  const std::vector<int64_t>* x = ShapeOf(node, 0, false, shapes);
  const std::vector<int64_t>* w = ShapeOf(node, 1, false, shapes);
  const std::vector<int64_t>* y = ShapeOf(node, 0, true, shapes);
  if (x == nullptr || w == nullptr || y == nullptr || x->size() != 4 || w->size() != 4 || y->size() != 4) return {};
  ConvGeometry conv;
  conv.n = (*x)[0];
  conv.c = (*x)[1];
  conv.m = (*w)[0];
  conv.cg = (*w)[1];
  conv.kh = (*w)[2];
  conv.kw = (*w)[3];
  conv.ho = (*y)[2];
  conv.wo = (*y)[3];
  if (const onnx::AttributeProto* group = FindAttribute(node, "group")) conv.group = group->i();
  if (!PairAttribute(node, "strides", &conv.stride_h, &conv.stride_w) ||
      !PairAttribute(node, "dilations", &conv.dilation_h, &conv.dilation_w)) {
    return {};
  }
  return ConvCatalogue(conv);
}

std::vector<Primitive> GemmNode(const onnx::NodeProto& node, const Shapes& shapes) {
  const std::vector<int64_t>* a = ShapeOf(node, 0, false, shapes);
  const std::vector<int64_t>* y = ShapeOf(node, 0, true, shapes);
  if (a == nullptr || y == nullptr || a->size() != 2 || y->size() != 2) return {};
  const onnx::AttributeProto* trans_a = FindAttribute(node, "transA");
  MatMulGeometry product;
  product.m = (*y)[0];
  product.n = (*y)[1];
  product.k = trans_a != nullptr && trans_a->i() != 0 ? (*a)[0] : (*a)[1];
  return MatMulCatalogue(product);
}

std::vector<Primitive> MatMulNode(const onnx::NodeProto& node, const Shapes& shapes) {
  const std::vector<int64_t>* a = ShapeOf(node, 0, false, shapes);
  const std::vector<int64_t>* b = ShapeOf(node, 1, false, shapes);
  const std::vector<int64_t>* y = ShapeOf(node, 0, true, shapes);
  if (a == nullptr || b == nullptr || y == nullptr || a->empty() || b->empty()) return {};
  MatMulGeometry product;
  product.k = a->back();
  product.m = a->size() >= 2 ? (*a)[a->size() - 2] : 1;
  product.n = b->size() >= 2 ? b->back() : 1;
  // Y is the batch dims, then M (when A is not 1-D), then N (when B is not).
  const size_t matrix_dims = (a->size() >= 2 ? 1 : 0) + (b->size() >= 2 ? 1 : 0);
  if (y->size() < matrix_dims) return {};
  for (size_t i = 0; i + matrix_dims < y->size(); ++i) {
    if (__builtin_mul_overflow(product.batch, (*y)[i], &product.batch)) return {};
  }
  return MatMulCatalogue(product);
}

// How many distinct ops of `spec` read each tensor, by name, a graph output
// counting one more.
absl::flat_hash_map<absl::string_view, int> ConsumerCounts(const GraphSpec& spec) {
  absl::flat_hash_map<absl::string_view, int> counts;
  for (const OpSpec& op : spec.ops) {
    for (size_t i = 0; i < op.inputs.size(); ++i) {
      const std::string& name = op.inputs[i];
      if (std::find(op.inputs.begin(), op.inputs.begin() + i, name) != op.inputs.begin() + i) continue;
      ++counts[name];
    }
  }
  // (A graph output counts as one more reader: it is nobody's own weight.)
  for (const std::string& name : spec.outputs) ++counts[name];
  return counts;
}

// The bytes the graph gives tensor `t` (Graph::Build's rule), or nullopt.
std::optional<int64_t> SpecBytes(const TensorSpec& t) {
  if (t.has_bytes || t.bytes >= 0) return t.bytes >= 0 ? std::optional<int64_t>(t.bytes) : std::nullopt;
  absl::StatusOr<int64_t> bytes = TensorBytes(t.shape, t.dtype);
  return bytes.ok() ? std::optional<int64_t>(*bytes) : std::nullopt;
}

// Gives the Winograd alternatives of Conv op `op` their weight_bytes: the
// op's own weights (the weight tensors only it reads) with its filter W
// transformed. Nothing when W is not one of its own weights; false when a
// number does not fit.
bool SetWinogradWeights(const OpSpec& op, const absl::flat_hash_map<absl::string_view, const TensorSpec*>& tensors,
                        const absl::flat_hash_map<absl::string_view, int>& consumers,
                        std::vector<Primitive>* alternatives) {
  const auto tile_of = [](const Primitive& p) { return p.name == "winograd23" ? 2 : p.name == "winograd43" ? 4 : 0; };
  if (op.inputs.size() < 2 ||
      std::none_of(alternatives->begin(), alternatives->end(), [&](const Primitive& p) { return tile_of(p) != 0; })) {
    return true;
  }
  const auto own = [&](const std::string& name) -> const TensorSpec* {
    auto t = tensors.find(name);
    auto c = consumers.find(name);
    if (t == tensors.end() || !t->second->is_weight || c == consumers.end() || c->second != 1) return nullptr;
    return t->second;
  };
  const TensorSpec* filter = own(op.inputs[1]);
  if (filter == nullptr) return true;
  int64_t own_bytes = 0;
  for (size_t i = 0; i < op.inputs.size(); ++i) {
    const std::string& name = op.inputs[i];
    const TensorSpec* t = own(name);
    if (t == nullptr || std::find(op.inputs.begin(), op.inputs.begin() + i, name) != op.inputs.begin() + i) continue;
    const std::optional<int64_t> bytes = SpecBytes(*t);
    if (!bytes.has_value() || __builtin_add_overflow(own_bytes, *bytes, &own_bytes)) return false;
  }
  const std::optional<int64_t> filter_bytes = SpecBytes(*filter);
  if (!filter_bytes.has_value()) return false;
  for (Primitive& p : *alternatives) {
    const int tile = tile_of(p);
    if (tile == 0) continue;
    const std::optional<int64_t> transformed = WinogradFilterBytes(tile, *filter_bytes);
    if (!transformed.has_value() || __builtin_add_overflow(own_bytes - *filter_bytes, *transformed, &p.weight_bytes)) {
      return false;
    }
  }
  return true;
}

}  // namespace

std::optional<int64_t> WinogradFilterBytes(int tile, int64_t filter_bytes) {
  if (filter_bytes < 0 || (tile != 2 && tile != 4)) return std::nullopt;
  // (tile + 2)^2 / 9 of the bytes, rounded up: q * s + ceil(r * s / 9) with
  // filter_bytes = 9 q + r, so that nothing overflows before the result.
  const int64_t s = (tile + 2) * (tile + 2);
  const int64_t q = filter_bytes / 9;
  const int64_t r = filter_bytes % 9;
  int64_t bytes = 0;
  if (__builtin_mul_overflow(q, s, &bytes) || __builtin_add_overflow(bytes, (r * s + 8) / 9, &bytes)) {
    return std::nullopt;
  }
  return bytes;
}

std::vector<Primitive> ConvCatalogue(const ConvGeometry& conv) {
  const std::optional<int64_t> macs = CheckedProduct({conv.n, conv.m, conv.ho, conv.wo, conv.cg, conv.kh, conv.kw});
  std::vector<Primitive> out;
  if (!macs.has_value() || !Append("direct", *macs, kDirectMacsPerUs, 0, &out)) return {};
  if (!(conv.kh == 1 && conv.kw == 1 && conv.stride_h == 1 && conv.stride_w == 1)) {
    const std::optional<int64_t> patches =
        CheckedProduct({kElementBytes, conv.n, conv.cg, conv.kh, conv.kw, conv.ho, conv.wo});
    if (!Append("im2col", *macs, kGemmMacsPerUs, patches, &out)) return {};
  }
  if (conv.kh == 3 && conv.kw == 3 && conv.stride_h == 1 && conv.stride_w == 1 && conv.dilation_h == 1 &&
      conv.dilation_w == 1 && conv.group == 1) {
    int64_t channels = 0;
    if (__builtin_add_overflow(conv.c, conv.m, &channels)) return {};
    const auto ceil_div = [](int64_t a, int64_t b) { return a / b + (a % b != 0 ? 1 : 0); };
    const std::optional<int64_t> tiles2 =
        CheckedProduct({kElementBytes * 16, channels, conv.n, ceil_div(conv.ho, 2), ceil_div(conv.wo, 2)});
    const std::optional<int64_t> tiles4 =
        CheckedProduct({kElementBytes * 36, channels, conv.n, ceil_div(conv.ho, 4), ceil_div(conv.wo, 4)});
    if (!Append("winograd23", *macs, kGemmMacsPerUs * 2.25, tiles2, &out) ||
        !Append("winograd43", *macs, kGemmMacsPerUs * 4, tiles4, &out)) {
      return {};
    }
  }
  return out;
}

std::vector<Primitive> MatMulCatalogue(const MatMulGeometry& product) {
  const std::optional<int64_t> macs = CheckedProduct({product.batch, product.m, product.k, product.n});
  std::vector<Primitive> out;
  if (!macs.has_value() || !Append("naive", *macs, kDirectMacsPerUs, 0, &out)) return {};
  if (product.m != 1 && product.n != 1) {
    const std::optional<int64_t> a = CheckedProduct({kElementBytes, product.m, product.k});
    const std::optional<int64_t> b = CheckedProduct({kElementBytes, product.k, product.n});
    int64_t panels = 0;
    if (!a.has_value() || !b.has_value() || __builtin_add_overflow(*a, *b, &panels) ||
        !Append("packed", *macs, kGemmMacsPerUs, panels, &out)) {
      return {};
    }
  }
  return out;
}

absl::StatusOr<std::vector<std::vector<Primitive>>> CatalogueAlternatives(const onnx::GraphProto& graph,
                                                                          const GraphSpec& spec) {
  if (spec.ops.size() != static_cast<size_t>(graph.node_size())) {
    return absl::InvalidArgumentError(absl::StrCat("the catalogue needs one op per ONNX node: ", spec.ops.size(),
                                                   " ops for ", graph.node_size(), " nodes"));
  }
  Shapes shapes;
  shapes.reserve(spec.tensors.size());
  absl::flat_hash_map<absl::string_view, const TensorSpec*> tensors;
  tensors.reserve(spec.tensors.size());
  for (const TensorSpec& t : spec.tensors) {
    shapes[t.name] = &t.shape;
    tensors.emplace(t.name, &t);
  }
  const absl::flat_hash_map<absl::string_view, int> consumers = ConsumerCounts(spec);
  std::vector<std::vector<Primitive>> out(spec.ops.size());
  for (int i = 0; i < graph.node_size(); ++i) {
    const onnx::NodeProto& node = graph.node(i);
    if (!node.domain().empty() && node.domain() != "ai.onnx") continue;
    if (node.op_type() == "Conv") {
      out[i] = ConvNode(node, shapes);
      if (!SetWinogradWeights(spec.ops[i], tensors, consumers, &out[i])) out[i].clear();
    } else if (node.op_type() == "Gemm") {
      out[i] = GemmNode(node, shapes);
    } else if (node.op_type() == "MatMul") {
      out[i] = MatMulNode(node, shapes);
    }
  }
  return out;
}

absl::StatusOr<std::vector<std::vector<Primitive>>> CatalogueAlternatives(absl::string_view model_bytes,
                                                                          const GraphSpec& spec) {
  onnx::ModelProto model;
  if (model_bytes.empty() || model_bytes.size() > static_cast<size_t>(INT_MAX) ||
      !model.ParseFromArray(model_bytes.data(), static_cast<int>(model_bytes.size()))) {
    return absl::InvalidArgumentError(
        absl::StrCat("not a valid ONNX model: ", model_bytes.size(), " bytes that do not parse as a ModelProto"));
  }
  return CatalogueAlternatives(model.graph(), spec);
}

}  // namespace serenity
