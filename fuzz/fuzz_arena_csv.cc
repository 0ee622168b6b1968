// libFuzzer target: bytes as MiniMalloc CSV text -> ParseArenaCsv -> (up to
// 2000 buffers) PlanArena with a small skyline node cap -> VerifyArena, for
// alignments 1 and 64.
#include <cstddef>
#include <cstdint>
#include <cstdio>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/arena/arena_csv.h"
#include "core/arena/arena_planner.h"
#include "core/arena/arena_verifier.h"

namespace {

constexpr size_t kMaxBuffers = 2000;
// The skyline search costs O(buffers) per node: search small instances
// thoroughly, large ones (the MiniMalloc seeds) only briefly.
constexpr size_t kSmallInstance = 64;
constexpr int64_t kSkylineNodesSmall = 2000;
constexpr int64_t kSkylineNodesLarge = 100;

void CheckPlan(const serenity::ArenaInstance& instance, int64_t alignment) {
  const int64_t nodes = instance.buffers.size() <= kSmallInstance ? kSkylineNodesSmall : kSkylineNodesLarge;
  absl::StatusOr<serenity::ArenaPlan> plan = serenity::PlanArena(instance.buffers, alignment, nodes);
  if (!plan.ok()) {
    // Parsed instances are valid input (sizes >= 0, lower <= upper); the only
    // acceptable refusal is a clear one, e.g. a size that does not fit.
    if (plan.status().code() != absl::StatusCode::kInvalidArgument &&
        plan.status().code() != absl::StatusCode::kOutOfRange) {
      std::fprintf(stderr, "PlanArena: unexpected status %s\n", plan.status().ToString().c_str());
      __builtin_trap();
    }
    return;
  }
  absl::Status verified = serenity::VerifyArena(instance.buffers, *plan);
  if (!verified.ok()) {
    std::fprintf(stderr, "invalid arena plan (alignment %lld): %s\n", static_cast<long long>(alignment),
                 verified.ToString().c_str());
    __builtin_trap();
  }
  if (plan->size_bytes < serenity::ArenaLowerBound(instance.buffers)) {
    std::fprintf(stderr, "arena plan below the lower bound\n");
    __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<serenity::ArenaInstance> instance = serenity::ParseArenaCsv(text);
  if (!instance.ok()) return 0;
  if (instance->buffers.size() != instance->ids.size()) __builtin_trap();
  if (instance->buffers.size() > kMaxBuffers) return 0;
  CheckPlan(*instance, 1);
  CheckPlan(*instance, 64);
  return 0;
}
