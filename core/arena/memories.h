// Several memories (issue 18): every buffer of a plan placed in one of a
// device's memories, fastest first (SRAM, then PSRAM, then DRAM), at an
// offset within that memory's capacity, with some buffers pinned to a memory
// and optionally to an offset in it (inputs a DMA writes, state shared
// across calls).
#ifndef SERENITY_CORE_ARENA_MEMORIES_H_
#define SERENITY_CORE_ARENA_MEMORIES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/arena/arena_planner.h"

namespace serenity {

// Bounds on a memory's capacity (so no offset or end overflows) and on the
// number of memories of one plan.
inline constexpr int64_t kMaxMemoryBytes = int64_t{1} << 62;
inline constexpr int kMaxMemories = 64;
// Most pins of one plan (a pin is for a buffer a device fixes: DMA inputs,
// state across calls).
inline constexpr size_t kMaxPins = 4096;

// One memory of a device.
struct MemorySpace {
  std::string name;
  int64_t capacity_bytes = 0;  // > 0
  int64_t alignment = 1;       // >= 1; every offset in it is a multiple
};

// Where a buffer must go: `memory`, an index into the memories (-1: any),
// and `offset` within it (-1: anywhere; only with a memory).
struct BufferPin {
  int memory = -1;
  int64_t offset = -1;
};

// OK when there are at most kMaxMemories memories with unique non-empty
// names, capacities from 1 to kMaxMemoryBytes and alignments from 1 to the
// capacity; InvalidArgument naming the memory otherwise.
absl::Status ValidateMemorySpaces(absl::Span<const MemorySpace> memories);

// What one memory holds.
struct MemoryUse {
  int64_t arena_bytes = 0;  // highest end of its buffers (0: none)
  int buffers = 0;
  // Sum over its buffers of size x steps live (a buffer from step a to b
  // lives b - a + 1 steps).
  int64_t byte_steps = 0;
  // Most byte-steps any placement could put in this memory, given what the
  // faster memories took: the sum over steps of the lesser of the capacity
  // and the bytes still unplaced that may go here (not pinned elsewhere).
  int64_t byte_steps_bound = 0;
};

struct MemoryAssignment {
  std::vector<int> memory;       // per buffer: index into the memories
  std::vector<int64_t> offsets;  // per buffer: offset within its memory
  std::vector<MemoryUse> uses;   // per memory
};

// Places every buffer in one of `memories` (fastest first) so that buffers
// of one memory live at the same step never overlap, every buffer ends
// within its memory's capacity, and pins hold. Heuristic for "most
// byte-steps in memories[0], then in memories[1], ..." (the exact problem
// is a packing problem): for each memory but the last, the buffers pinned
// there, then the unpinned ones by decreasing size x steps while every step
// they live stays within a threshold (lowered until the packing,
// PlanArenaInstanceWithPinned, fits the capacity), then the ones left are
// fitted into gaps (lowest offset). The last memory takes every buffer left.
// `names` (one per buffer) name buffers in errors. InvalidArgument for:
// `names` or `pins` of another length than `buffers` (pins may be empty:
// none), no memories or memories ValidateMemorySpaces refuses, an
// anchored buffer, a pin's memory out of range, an offset pinned without a
// memory, more than 4,096 pinned offsets, an offset negative or not a
// multiple of the memory's alignment, a pinned
// buffer ending past its memory's capacity, or two pinned buffers of one
// memory overlapping while both live. FailedPrecondition when the buffers do
// not fit: naming a buffer that fits nowhere and the capacity the memory
// that must hold it would need (or the step whose live bytes exceed all
// capacities together). Errors of PlanArenaInstanceWithPinned otherwise.
absl::StatusOr<MemoryAssignment> AssignMemories(absl::Span<const ArenaBuffer> buffers,
                                                absl::Span<const std::string> names,
                                                absl::Span<const MemorySpace> memories,
                                                absl::Span<const BufferPin> pins, const ArenaLimits& limits = {});

}  // namespace serenity

#endif  // SERENITY_CORE_ARENA_MEMORIES_H_
