// The one simulator: replays an order under the memory model and reports the
// live bytes of every step, the peak, and every buffer's lifetime. Every peak
// the service reports is recomputed here.
#ifndef SERENITY_CORE_MEMORY_SIMULATOR_H_
#define SERENITY_CORE_MEMORY_SIMULATOR_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "core/graph/reachability.h"
#include "core/memory/buffer_model.h"

namespace serenity {

enum class BufferKind { kTensor, kWorkspace, kWeight };

// A buffer and the steps (positions in the order, inclusive) it is live.
struct BufferLifetimeInfo {
  BufferKind kind = BufferKind::kTensor;
  TensorId tensor = 0;            // kTensor and kWeight
  OpId op = kNoOp;                // kWorkspace: the op it belongs to
  std::vector<TensorId> aliases;  // kTensor: views, accumulations, in-place outputs sharing it
  int64_t bytes = 0;
  int32_t first_step = 0;
  int32_t last_step = 0;
  // concat_in_place: a slice after the first of an in-place Concat sits at
  // the offset of buffer `anchor` (the first slice, an index into
  // MemoryProfile::buffers) plus `offset_from_anchor`. -1 for every other
  // buffer.
  int32_t anchor = -1;
  int64_t offset_from_anchor = 0;
  TensorId slice_of = -1;  // with an anchor: the Concat's output
};

struct MemoryProfile {
  std::vector<int64_t> step_bytes;  // live bytes while step t runs
  int64_t peak_bytes = 0;           // max of step_bytes
  std::vector<BufferLifetimeInfo> buffers;
};

// Simulates `order` on `buffers.graph()`. Lifetimes: a graph input from step
// 0, an op's output from its producer's step, each until the step of its last
// user (a buffer nobody reads dies at the step it appears); graph outputs and
// counted weights until the last step; workspace for its op's step only. With
// in_place, an output written over its input joins that input's buffer
// (listed among its aliases), so the two count once. With concat_in_place,
// an in-place Concat's output is an alias of its first slice, and the later
// slices are anchored to it. An accumulating op's output is an alias of its
// accumulator's buffer (BufferModel), so the step allocates nothing.
// InvalidArgument when `order` is not a topological order of all ops.
absl::StatusOr<MemoryProfile> Simulate(const BufferModel& buffers, const std::vector<OpId>& order);

// Peak bytes of `order` through MemoryTracker (no lifetimes; for searches and
// baselines). The caller guarantees `order` is topological.
int64_t PeakOf(const BufferModel& buffers, const std::vector<OpId>& order);

// For each op u, the bytes live at u's step in every topological order: u's
// outputs and workspace; buffers made before u (by an ancestor, or graph
// inputs) that u or a descendant of u reads, or that are graph outputs;
// counted weights.
std::vector<int64_t> StepLowerBounds(const BufferModel& buffers, const Reachability& reach);

// The bytes live at the last step of every order: the resident weights and
// every buffer live to the end (all made by then). A graph whose outputs are
// made by many unrelated ops (a training step's weight updates) has no op
// whose StepLowerBounds entry sees them all.
int64_t FinalStepLowerBound(const BufferModel& buffers);

// A bound no order can beat: the largest of StepLowerBounds.
int64_t LowerBoundBytes(const BufferModel& buffers);

}  // namespace serenity

#endif  // SERENITY_CORE_MEMORY_SIMULATOR_H_
