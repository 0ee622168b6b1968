// The ops of Serenity's own ONNX domain, "serenity" (opset version 1), and
// their ONNX schemas.
//
// serenity.ConvAccumulate(X, W, ACC) -> Y, version 1: Y = ACC + Conv(X, W)
// with Conv's attributes (auto_pad, dilations, group, kernel_shape, pads,
// strides; no bias input: a bias goes on the plain Conv that starts the
// chain). X, W and ACC have one element type T (float16, float, double), X
// and W are as Conv's inputs, and ACC has exactly the shape of Conv(X, W); Y
// has ACC's type and shape and is written into ACC's memory (the importer's
// memory model aliases the two: core/memory/buffer_model.h). So that this is
// safe, ACC must be an activation that an op of the graph produces (not a
// graph input, initializer or Constant output), read by no other op and by no
// other input of this op, and not a graph output. A model using the op must
// import the domain: opset_import { domain: "serenity" version: 1 }.
#ifndef SERENITY_CORE_ONNX_SERENITY_OPS_H_
#define SERENITY_CORE_ONNX_SERENITY_OPS_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace onnx {
class ModelProto;
class NodeProto;
class TypeProto;
struct InferenceContext;
}  // namespace onnx

namespace serenity {

inline constexpr char kSerenityDomain[] = "serenity";
inline constexpr int kSerenityOpsetVersion = 1;
inline constexpr char kConvAccumulateOp[] = "ConvAccumulate";

// Registers the schemas of the serenity domain with ONNX's schema registry
// (and the domain with its version range), once per process; later calls do
// nothing. Thread-safe. It also runs at static initialization of any binary
// that links the importer or the export (which call it as well). After it, onnx::checker::check_model validates
// ConvAccumulate nodes (inputs, outputs, attributes) and shape inference
// types their outputs.
void RegisterSerenityOpSchemas();

// The graph-level rules of the serenity domain for every node of `model`'s
// graph (`names` are the importer's op names, one per node): only
// ConvAccumulate exists; the model imports domain "serenity" at version 1;
// each ConvAccumulate has three non-empty inputs and one output, and its
// accumulator obeys the rules above. InvalidArgument naming the op
// otherwise.
absl::Status CheckSerenityNodes(const onnx::ModelProto& model, const std::vector<std::string>& names);

// Shape inference of a ConvAccumulate node: X, W and ACC must share one
// element type, have equal ranks of at least 3, X's channels must be W's
// dim 1 times group, W's dim 0 a multiple of group, and Conv(X, W) under the
// node's attributes (ONNX's own Conv inference) must have ACC's shape. Sets
// `*output` (when not null) to ACC's type. OK without touching `*output`
// when an input's shape is not known yet; InvalidArgument otherwise.
absl::Status InferConvAccumulate(onnx::InferenceContext& ctx, onnx::TypeProto* output);

// InferConvAccumulate for ConvAccumulate `node` of the graph with the value
// types `type_of` gives (null when not known), after shape inference: an
// error is InvalidArgument naming the op as "op '<name>' (ConvAccumulate)".
// (ONNX's shape inference, not strict, only drops a failing node's output
// type, and keeps one the model declares.)
absl::Status CheckConvAccumulateNode(const onnx::NodeProto& node, const std::string& name,
                                     const std::function<const onnx::TypeProto*(const std::string&)>& type_of);

}  // namespace serenity

#endif  // SERENITY_CORE_ONNX_SERENITY_OPS_H_
