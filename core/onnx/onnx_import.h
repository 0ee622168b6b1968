// ONNX import: a serialized ModelProto -> GraphSpec/Graph, with ONNX shape
// inference, byte sizes from dtypes and dims, weights (initializers and
// Constant outputs) flagged, and MACs of Conv/Gemm/MatMul. Weight payloads
// are never needed: models whose initializers point at absent external data
// import fine.
#ifndef SERENITY_CORE_ONNX_ONNX_IMPORT_H_
#define SERENITY_CORE_ONNX_ONNX_IMPORT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/graph/graph.h"

namespace onnx {
class GraphProto;
class ModelProto;
}  // namespace onnx

namespace serenity {

struct OnnxImportOptions {
  // Values for symbolic dimensions (ONNX dim_param), e.g. {"batch", 1}.
  absl::flat_hash_map<std::string, int64_t> dim_values;
  // Workspace (temporary) bytes per op name; ONNX itself carries none.
  absl::flat_hash_map<std::string, int64_t> workspace_bytes;
};

// Parses a serialized ONNX ModelProto and returns its GraphSpec (validated
// later by Graph::Build). `dim_values` replace symbolic dims before ONNX
// shape inference runs. Ops are graph.node in file order, named by node.name,
// or "<op_type>_<index>" when unnamed, with "_<index>" appended to repeated
// names; types carry a "domain::" prefix outside the default domain. Weights
// are initializers and Constant outputs (STRING weights count as 0 bytes);
// graph inputs are graph.input minus initializers. MACs are set for Conv,
// serenity.ConvAccumulate, ConvTranspose, Gemm and MatMul (clamped, informational). InvalidArgument,
// naming the tensor or op, for: bytes that do not parse; no nodes; negative
// dim values; control-flow ops (If, Loop, Scan) and ops with subgraph
// attributes; shape inference errors; tensors without an inferred shape;
// symbolic or unknown dims not fixed by `dim_values`; non-tensor types;
// workspace for an unknown op or negative workspace. Also InvalidArgument,
// naming the op where it can, for inputs that crash, overflow or hang ONNX
// 1.12's own shape inference, checked before it or as it reaches each node:
// negative dims; raw_data whose length does not match dims and data type;
// non-positive strides, dilations or kernel_shape; a blocksize outside
// 1..2^31-1; fewer outputs than the op needs; a non-positive scalar
// SplitToSequence split; an element count (or Reshape target) beyond 2^63;
// auto_pad SAME over a dim more than 2^31 strides long; input ranks the op
// requires (Gemm, Conv/ConvTranspose/QLinearConv/MaxUnpool weights,
// MaxRoiPool, RNN/GRU/LSTM, DFT/STFT); an axis outside -rank-1..rank (for
// LayerNormalization -rank..rank-1); a negative or too large GatherND
// batch_dims; and shape inputs giving an output rank above 1024. Nodes whose
// required inputs have no inferred shape are not inferred (the model is then
// rejected for that missing shape). Ops of Serenity's own domain
// (core/onnx/serenity_ops.h: serenity.ConvAccumulate, typed
// "serenity::ConvAccumulate", whose output the memory model writes into its
// accumulator input) are inferred by their registered schema; InvalidArgument,
// naming the op, when the model does not import domain "serenity" at version
// 1, for another op of that domain, or when a ConvAccumulate breaks the
// rules of serenity_ops.h (the accumulator an activation made by an op, read
// by no other op, not a graph output; Conv(X, W) of the accumulator's shape
// and element type). Never throws.
absl::StatusOr<GraphSpec> OnnxToGraphSpec(absl::string_view model_bytes, const OnnxImportOptions& options);

// OnnxToGraphSpec of a model already parsed (the rewrites' trial models,
// which need no round trip through bytes): the same checks and result.
absl::StatusOr<GraphSpec> OnnxModelToGraphSpec(onnx::ModelProto model, const OnnxImportOptions& options);

// OnnxModelToGraphSpec of `model` derived from the model `base` was
// imported from (with these options) by rewrites that replace nodes and
// leave every other node, graph input and initializer as it was, such as
// the rewrites of core/rewrite: the same result, faster. ONNX shape
// inference runs only on the nodes base has no op for (by name, type,
// inputs and outputs), with the values they read typed as base types them;
// when that does not give every value a type, or gives a value base has
// another type, or anything fails, this is OnnxModelToGraphSpec itself (so
// its errors are returned as they are).
absl::StatusOr<GraphSpec> OnnxModelToGraphSpecFrom(const onnx::ModelProto& model, const OnnxImportOptions& options,
                                                   const Graph& base);

// OnnxToGraphSpec followed by Graph::Build.
absl::StatusOr<Graph> ImportOnnxModel(absl::string_view model_bytes, const OnnxImportOptions& options);

// The op name the importer gives each node of `graph`: its own name, or
// "<op_type>_<index>" when empty, with "_<index>" appended while the name is
// taken.
std::vector<std::string> ImporterNodeNames(const onnx::GraphProto& graph);

// Returns the model with the payload of every initializer (and Constant
// value tensor) larger than `max_kept_bytes` removed (data fields and
// external-data references), keeping name, data type and dims, so the model
// stays small on the wire. Small tensors, such as the int64 shapes that
// shape inference reads for Reshape, are kept. InvalidArgument when the
// bytes do not parse.
absl::StatusOr<std::string> StripWeightData(absl::string_view model_bytes, int64_t max_kept_bytes = 1024);

}  // namespace serenity

#endif  // SERENITY_CORE_ONNX_ONNX_IMPORT_H_
