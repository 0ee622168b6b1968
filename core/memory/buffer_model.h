// The memory model of DESIGN.md section 2, precomputed for one graph.
//
// Activations live in buffers. Without view aliasing every non-weight tensor
// is its own buffer. With `alias_views`, the output of a pure view op
// (Reshape, Flatten, Squeeze, Unsqueeze, Identity) of the same byte size
// shares the buffer of its data input (transitively), and the buffer stays
// live until the last consumer of any tensor that aliases it. Whatever the
// switches, the output of an accumulating op (IsAccumulateOp: ConvAccumulate
// of the `serenity` ONNX domain) is written into the buffer of its
// accumulator input and aliases it in the same way. Weights are buffers only
// with `count_weights`, and are then live for the whole run.
// Workspace bytes of an op are a buffer live only during that op's step.
#ifndef SERENITY_CORE_MEMORY_BUFFER_MODEL_H_
#define SERENITY_CORE_MEMORY_BUFFER_MODEL_H_

#include <cstdint>
#include <vector>

#include "absl/strings/string_view.h"
#include "core/graph/graph.h"

namespace serenity {

// Switches of the memory model. Every baseline and every search uses the same
// switches for one request.
struct MemoryModel {
  // Pure view ops alias their input instead of allocating. Off by default,
  // which is the model the shared benchmark optima are stated in.
  bool alias_views = false;
  // Weights are resident for the whole run and counted in every step.
  bool count_weights = false;
  // An element-wise op (IsElementwiseOp) may write its output over an input
  // buffer of the same size whose last reader it is (never over a graph input
  // or a graph output): its step then needs no new bytes for the output, and
  // the two tensors share one arena buffer.
  bool in_place = false;
  // The producers of a Concat's inputs write straight into slices of its
  // output (IsConcatInPlace has the conditions): the Concat then allocates
  // and copies nothing, and each slice stays live until the last reader of
  // the slice or of the Concat's output. In the arena the slices are laid
  // out back to back in input order, the output starting at the first.
  bool concat_in_place = false;
};

// True for the op types that may alias their input (Reshape, Flatten,
// Squeeze, Unsqueeze, Identity).
bool IsViewOp(absl::string_view op_type);

// The graph op type of ConvAccumulate (ONNX domain "serenity"), as the ONNX
// importer names ops outside the default domain.
inline constexpr absl::string_view kConvAccumulateType = "serenity::ConvAccumulate";
// Input index of the accumulator of a ConvAccumulate: inputs are (X, W, ACC).
inline constexpr int kAccumulatorInput = 2;

// True for the op types whose output is written into the buffer of their
// accumulator input (kConvAccumulateType): Y = ACC + Conv(X, W).
bool IsAccumulateOp(absl::string_view op_type);

// The tensor whose buffer op `u`'s output is written into: the accumulator
// input of an accumulating op with at least kAccumulatorInput + 1 inputs and
// exactly one output, when that input is an activation (not a weight) of the
// output's byte size. -1 otherwise (the op then allocates as any other).
// Independent of the MemoryModel switches.
TensorId AccumulatorOf(const Graph& graph, OpId u);

// True when Concat `u` of `graph` can be laid out in place: one output; at
// least one input; every input a distinct activation that an op produces
// (not a graph input, a weight, a graph output or another Concat's output);
// shapes known, of one rank, differing from the output in at most one axis,
// along which they add up to the output, with every dimension before that
// axis 1 (so each input is one contiguous block of the output); and input
// bytes summing to the output's. Views and
// buffer sharing are checked by BufferModel on top of this.
bool IsConcatInPlace(const Graph& graph, OpId u);

// True for the element-wise op types that may run in place (Relu, Add, Mul,
// Sigmoid, Clip, BatchNormalization, ...).
bool IsElementwiseOp(absl::string_view op_type);

using BufferId = int32_t;
inline constexpr BufferId kNoBuffer = -1;

// One activation buffer: a tensor and the tensors that alias it.
struct ActivationBuffer {
  TensorId tensor = 0;            // the base tensor that owns the memory
  std::vector<TensorId> aliases;  // views and accumulations sharing it (not the base)
  int64_t bytes = 0;
  OpId producer = kNoOp;     // kNoOp: a graph input, live from step 0
  std::vector<OpId> users;   // distinct ops reading the base or an alias
  bool live_to_end = false;  // the base or an alias is a graph output
};

// Per-graph precomputation of buffers, what each op allocates and reads.
class BufferModel {
 public:
  BufferModel(const Graph& graph, const MemoryModel& model);

  const Graph& graph() const { return *graph_; }
  const MemoryModel& model() const { return model_; }
  const std::vector<ActivationBuffer>& buffers() const { return buffers_; }
  // The buffer holding tensor `t`, or kNoBuffer for a weight.
  BufferId buffer_of(TensorId t) const { return buffer_of_[t]; }
  // Buffers op `u` creates (its non-aliasing outputs).
  const std::vector<BufferId>& allocates(OpId u) const { return allocates_[u]; }
  // Distinct buffers op `u` reads (through its inputs, aliases resolved).
  const std::vector<BufferId>& reads(OpId u) const { return reads_[u]; }
  // With in_place: the input buffers `u` may overwrite, in input order (the
  // first one whose last reader `u` is at its step is used), and the bytes
  // that saves. Empty and 0 otherwise.
  const std::vector<BufferId>& in_place_inputs(OpId u) const { return in_place_inputs_[u]; }
  int64_t in_place_bytes(OpId u) const { return in_place_bytes_[u]; }
  // With concat_in_place: the buffers of Concat `u`'s inputs, in input
  // order, when `u` runs in place (its output then has no buffer of its own
  // and is listed among the first slice's aliases). Empty otherwise.
  const std::vector<BufferId>& concat_slices(OpId u) const { return concat_slices_[u]; }
  // The buffers accumulating op `u` writes into: its accumulator's, which
  // its output joins (all the slices when the accumulator is an in-place
  // Concat's output). Empty for every other op.
  const std::vector<BufferId>& accumulates_into(OpId u) const { return accumulates_into_[u]; }
  // Bytes resident for the whole run: weights when counted, else 0.
  int64_t resident_bytes() const { return resident_bytes_; }
  // Bytes of the graph-input buffers, live at the start.
  int64_t input_bytes() const { return input_bytes_; }
  // Bytes of graph inputs nobody reads (and not outputs): they are live at
  // the first step only, whichever op runs it.
  int64_t unused_input_bytes() const { return unused_input_bytes_; }

 private:
  const Graph* graph_;
  MemoryModel model_;
  std::vector<ActivationBuffer> buffers_;
  std::vector<BufferId> buffer_of_;
  std::vector<std::vector<BufferId>> allocates_;
  std::vector<std::vector<BufferId>> reads_;
  std::vector<std::vector<BufferId>> in_place_inputs_;
  std::vector<int64_t> in_place_bytes_;
  std::vector<std::vector<BufferId>> concat_slices_;
  std::vector<std::vector<BufferId>> accumulates_into_;
  int64_t resident_bytes_ = 0;
  int64_t input_bytes_ = 0;
  int64_t unused_input_bytes_ = 0;
};

// Incremental replay of an order under a BufferModel: the state a scheduler
// keeps. Executing op u: live += allocations + workspace; the step's footprint
// (peak candidate) is read; then workspace and every buffer whose last user
// was u (and that is not live to the end) are freed.
class MemoryTracker {
 public:
  explicit MemoryTracker(const BufferModel& buffers);

  // Bytes live during `u`'s step if it ran next.
  int64_t StepBytes(OpId u) const;
  // Bytes live after `u`'s step if it ran next.
  int64_t BytesAfter(OpId u) const;
  // Runs `u` (the caller guarantees it is ready) and returns its step bytes.
  int64_t Run(OpId u);

  int64_t live_bytes() const { return live_; }
  int64_t peak_bytes() const { return peak_; }
  int steps() const { return steps_; }

 private:
  int64_t FreedBy(OpId u) const;
  // Bytes `u` would save by running in place now.
  int64_t InPlaceSaving(OpId u) const;

  const BufferModel* model_;
  std::vector<int32_t> remaining_users_;
  int64_t live_ = 0;
  int64_t peak_ = 0;
  int steps_ = 0;
};

}  // namespace serenity

#endif  // SERENITY_CORE_MEMORY_BUFFER_MODEL_H_
