// An independent check of an ArenaPlan, used by the tests and by callers that
// want to trust nothing.
#ifndef SERENITY_CORE_ARENA_ARENA_VERIFIER_H_
#define SERENITY_CORE_ARENA_ARENA_VERIFIER_H_

#include "absl/status/status.h"
#include "core/arena/arena_planner.h"

namespace serenity {

// OK when `plan` has one offset per buffer, every free buffer's offset is a
// non-negative multiple of plan.alignment, every anchored buffer sits at its
// anchor's offset plus offset_from_anchor, every buffer ends within
// plan.size_bytes, and
// no two buffers of non-zero size whose lifetimes share a step overlap in
// memory. Otherwise FailedPrecondition naming the first problem found.
absl::Status VerifyArena(absl::Span<const ArenaBuffer> buffers, const ArenaPlan& plan);

}  // namespace serenity

#endif  // SERENITY_CORE_ARENA_ARENA_VERIFIER_H_
