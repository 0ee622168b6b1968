// Fitting an arena into a budget that the schedule's peak fits but no static
// placement does: place buffers step by step and, when a new buffer finds no
// hole, compact the live ones (move operations, as the device runs them).
#ifndef SERENITY_CORE_ARENA_DEFRAGMENT_H_
#define SERENITY_CORE_ARENA_DEFRAGMENT_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/arena/arena_planner.h"

namespace serenity {

// One defragmentation move: before step `before_step` runs, the device
// copies buffer `buffer` (an index into the planned buffers) from
// `from_offset` to `to_offset` (memmove semantics: the ranges may overlap).
// Moves of one step run in the order listed.
struct ArenaMove {
  int buffer = 0;
  int32_t before_step = 0;
  int64_t from_offset = 0;
  int64_t to_offset = 0;
  int64_t bytes = 0;
};

struct MovingArenaPlan {
  // offsets[i]: where buffer i is placed at its first step; size_bytes: the
  // highest end over all steps and moves (<= the capacity asked for).
  ArenaPlan plan;
  std::vector<ArenaMove> moves;
  int64_t moved_bytes = 0;
};

// Places `buffers` within `capacity` bytes, moving live buffers when needed:
// at each step, buffers that start there go best-fit into the holes left;
// when one does not fit, the cheapest window is cleared by moving the few
// buffers in it to other holes; failing that, the live buffers are
// compacted to the bottom (in address order, each move recorded) and the
// new ones placed above them.
// An anchored buffer (a Concat slice) moves with its anchor: each group is
// planned as one buffer spanning its bytes over its members' lifetimes (so
// it may need more room than its live members), and each move of the group
// becomes a move of every member live across that step, ordered so that
// none lands on another.
// FailedPrecondition when even compaction cannot fit a step (the aligned
// live bytes exceed `capacity`); InvalidArgument as PlanArena.
absl::StatusOr<MovingArenaPlan> PlanArenaWithMoves(absl::Span<const ArenaBuffer> buffers, int64_t alignment,
                                                   int64_t capacity);

// OK when, with the moves applied, every free buffer is aligned, within
// plan.size_bytes, and no two buffers live at a common step overlap; every
// move relocates a buffer live on both sides of its step, starts where the
// buffer is, and its destination overlaps no other buffer live across that
// boundary. FailedPrecondition naming the first problem otherwise.
absl::Status VerifyMovingArena(absl::Span<const ArenaBuffer> buffers, const MovingArenaPlan& plan);

}  // namespace serenity

#endif  // SERENITY_CORE_ARENA_DEFRAGMENT_H_
