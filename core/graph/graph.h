// The scheduling IR: ops and the tensors between them.
//
// A Graph is built once from a GraphSpec (plain names and sizes, from either
// our protobuf Graph message or an imported ONNX model), validated, and then
// immutable. Ops keep the position they had in the input ("file order"); an
// OpId is that position. Weights (ONNX initializers and Constant outputs) are
// tensors flagged `is_weight`; they are not activations.
#ifndef SERENITY_CORE_GRAPH_GRAPH_H_
#define SERENITY_CORE_GRAPH_GRAPH_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace serenity {

using OpId = int32_t;
using TensorId = int32_t;
inline constexpr OpId kNoOp = -1;

// Input description of one tensor. The size is given when `has_bytes` is
// true or `bytes` >= 0, and is then taken as is (dtype is informational);
// otherwise (`bytes` < 0 and `has_bytes` false, the default) it is computed
// from shape and dtype. A reader of an input format whose size field may be
// set to any value (our protobuf Tensor.bytes) sets `has_bytes`, so that an
// explicit negative size is refused rather than read as "not given".
struct TensorSpec {
  std::string name;
  std::vector<int64_t> shape;
  int32_t dtype = 1;  // ONNX TensorProto.DataType; 1 = float32
  int64_t bytes = -1;
  bool is_weight = false;
  bool has_bytes = false;
};

// One way to run an op (issue 19): a kernel such as direct, im2col + GEMM or
// Winograd, with its own time and its own workspace, a buffer live only
// while the op runs. `layout` is the data layout it reads and writes (empty:
// any); `weight_bytes`, when not 0, is the bytes of the op's weights as this
// primitive keeps them (Winograd's transformed filters: 16/9x for F(2,3)),
// which replace the op's own weights (the weight tensors only it reads)
// when weights are counted (primitive_weights.h).
struct Primitive {
  std::string name;
  double time_us = 0;
  int64_t workspace_bytes = 0;
  std::string layout;
  int64_t weight_bytes = 0;
};

// Converting a tensor between data layouts (issue 19): before an op whose
// chosen primitive reads layout `to` an input its producer's primitive wrote
// in layout `from`. Per MiB (2^20 bytes) of the tensor: its time, and the
// bytes of the converted copy, a workspace of the op's step.
struct LayoutTransform {
  std::string from;
  std::string to;
  double time_us_per_mb = 0;
  double workspace_bytes_per_mb = 0;
};

// Limits on alternatives: per op, and the time of one (10^12 us, 11.6
// days), so that sums over 10^6 ops stay finite and exact to the
// microsecond.
inline constexpr size_t kMaxAlternatives = 64;
inline constexpr double kMaxPrimitiveTimeUs = 1e12;
// Limits on a layout transform's rates: a second per MiB, and a copy 64
// times the tensor.
inline constexpr double kMaxTransformTimeUsPerMb = 1e6;
inline constexpr double kMaxTransformBytesPerMb = 64.0 * 1048576;

// Input description of one op. Inputs and outputs are tensor names; an empty
// input name (an omitted optional ONNX input) is ignored.
struct OpSpec {
  std::string name;
  std::string type;
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
  int64_t workspace_bytes = 0;  // temporary buffer live only while the op runs
  int64_t macs = 0;             // multiply-accumulates, informational
  // Ways to run it (empty: one, with workspace_bytes and no time). A plan
  // that asks for time picks one; the others ignore them.
  std::vector<Primitive> alternatives;
};

// Input description of a whole graph. Every tensor an op touches must be
// described in `tensors`. `inputs` are the activations fed from outside;
// `outputs` must stay live until the end of the run.
struct GraphSpec {
  std::string name;
  std::vector<OpSpec> ops;
  std::vector<TensorSpec> tensors;
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
  // The layout conversions alternatives may need; a pair not listed cannot
  // be converted.
  std::vector<LayoutTransform> layout_transforms;
};

struct Tensor {
  std::string name;
  std::vector<int64_t> shape;
  int32_t dtype = 1;
  int64_t bytes = 0;
  bool is_weight = false;
  bool is_graph_input = false;
  bool is_graph_output = false;
  OpId producer = kNoOp;        // kNoOp for graph inputs and initializers
  std::vector<OpId> consumers;  // distinct, ascending
};

struct Op {
  std::string name;
  std::string type;
  std::vector<TensorId> inputs;  // as listed (a tensor may repeat)
  std::vector<TensorId> outputs;
  int64_t workspace_bytes = 0;
  int64_t macs = 0;
  std::vector<Primitive> alternatives;  // as OpSpec's
  std::vector<OpId> predecessors;       // distinct, ascending
  std::vector<OpId> successors;         // distinct, ascending
};

class Graph {
 public:
  // Validates `spec` and builds the graph. InvalidArgument, naming the
  // offending ops and tensors, for: no ops; empty or duplicate op or tensor
  // names; a tensor used but not described; a tensor with two producers; a
  // consumed tensor that is neither produced, a graph input nor a weight; a
  // produced graph input; a cycle (the message lists the ops on it); a
  // negative dim (also when the size is given), an unsized dtype, a negative
  // given size (`has_bytes`), a negative workspace or MAC count; more than
  // kMaxAlternatives alternatives on an op, an alternative with an empty or
  // repeated name (per op), a time outside [0, kMaxPrimitiveTimeUs] (NaN
  // included), or negative bytes; a layout transform without both layouts,
  // from a layout to itself, given twice, with rates outside
  // [0, kMaxTransformTimeUsPerMb] or [0, kMaxTransformBytesPerMb], or missing
  // for a conversion some choice needs (layout_conversions.h). OutOfRange
  // (each op counted at its largest workspace, its own or an alternative's,
  // plus its largest conversions) for sizes that overflow 64 bits (one
  // tensor, or all buffers together).
  static absl::StatusOr<Graph> Build(GraphSpec spec);

  const std::string& name() const { return name_; }
  int num_ops() const { return static_cast<int>(ops_.size()); }
  int num_tensors() const { return static_cast<int>(tensors_.size()); }
  const Op& op(OpId id) const { return ops_[id]; }
  const Tensor& tensor(TensorId id) const { return tensors_[id]; }
  const std::vector<Op>& ops() const { return ops_; }
  const std::vector<Tensor>& tensors() const { return tensors_; }
  const std::vector<TensorId>& inputs() const { return inputs_; }
  const std::vector<TensorId>& outputs() const { return outputs_; }
  // As GraphSpec's (issue 19).
  const std::vector<LayoutTransform>& layout_transforms() const { return layout_transforms_; }

  // Total bytes of weight tensors.
  int64_t weight_bytes() const { return weight_bytes_; }
  // Total multiply-accumulates over all ops.
  int64_t total_macs() const { return total_macs_; }

  std::optional<TensorId> FindTensor(absl::string_view name) const;
  std::optional<OpId> FindOp(absl::string_view name) const;

  // This graph with op u's workspace set to workspace_bytes[u] (one entry
  // per op, none negative: the caller's choice of primitives).
  Graph WithWorkspaces(const std::vector<int64_t>& workspace_bytes) const;

  // This graph with weight tensor t's bytes set to tensor_bytes[t] (one
  // entry per tensor, none negative; the other tensors' entries are not
  // read) and weight_bytes() their new total.
  Graph WithWeightTensorBytes(const std::vector<int64_t>& tensor_bytes) const;

 private:
  Graph() = default;

  std::string name_;
  std::vector<Op> ops_;
  std::vector<Tensor> tensors_;
  std::vector<TensorId> inputs_;
  std::vector<TensorId> outputs_;
  std::vector<LayoutTransform> layout_transforms_;
  int64_t weight_bytes_ = 0;
  int64_t total_macs_ = 0;
  absl::flat_hash_map<std::string, TensorId> tensor_index_;
  absl::flat_hash_map<std::string, OpId> op_index_;
};

// Returns true when `order` is a permutation of all ops of `graph` in which
// every op comes after all its predecessors.
bool IsTopologicalOrder(const Graph& graph, const std::vector<OpId>& order);

// Op u's own weights: the weight tensors it reads that no other op reads
// and that are not graph outputs (what an alternative's weight_bytes
// replaces), distinct, in input order; and their bytes.
std::vector<TensorId> OwnWeights(const Graph& graph, OpId u);
int64_t OwnWeightBytes(const Graph& graph, OpId u);

// OK when IsTopologicalOrder; otherwise InvalidArgument naming the first
// problem: a wrong length, an index out of range, an op listed twice, or an
// op placed before the producer of one of its inputs.
absl::Status CheckOrder(const Graph& graph, const std::vector<OpId>& order);

}  // namespace serenity

#endif  // SERENITY_CORE_GRAPH_GRAPH_H_
