// Off-chip traffic of an order on a device with a given on-chip memory size,
// under Belady's eviction rule.
//
// Each op needs its inputs, its outputs and its workspace on chip while it
// runs. When room is needed, the resident buffer whose next read is farthest
// away is evicted (graph outputs nobody reads again count as farthest; ties
// go to the larger buffer, then the lower id). A buffer evicted while it is
// still needed is written off chip once; each later read of an evicted
// buffer reads it back. Graph inputs start on chip in order of first use
// while they fit; the rest start off chip and their first reads count. Only
// these bytes count: an order whose peak fits the on-chip size moves nothing.
// Weights are not part of the model (they are streamed separately). With
// the in-place switch, an element-wise op whose input it reads last writes
// its output over that input, as the simulator does, needing no room for it.
// With Concats in place, such a Concat copies nothing: its step needs
// nothing on chip and does not count as a read of its slices. An
// accumulating op (IsAccumulateOp) writes into its accumulator's buffer, as
// its one output: a copy written off chip before that step is stale after it
// and is written again when the buffer is evicted while still needed.
#ifndef SERENITY_CORE_TRAFFIC_BELADY_H_
#define SERENITY_CORE_TRAFFIC_BELADY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "core/memory/buffer_model.h"

namespace serenity {

struct TrafficResult {
  int64_t onchip_bytes = 0;
  int64_t read_bytes = 0;   // brought back on chip
  int64_t write_bytes = 0;  // spilled off chip
  // False when some op's inputs, outputs and workspace alone exceed the
  // on-chip size; `infeasible_op` is the first such op in the order, and the
  // byte counts cover the steps before it.
  bool feasible = true;
  OpId infeasible_op = kNoOp;
  // The number of buffers read back (the paging misses).
  int64_t reloads = 0;
};

// Simulates `order` (topological) with `onchip_bytes` of on-chip memory.
TrafficResult SimulateTraffic(const BufferModel& buffers, const std::vector<OpId>& order, int64_t onchip_bytes);

}  // namespace serenity

#endif  // SERENITY_CORE_TRAFFIC_BELADY_H_
