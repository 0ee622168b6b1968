// libFuzzer target: bytes as MiniMalloc CSV text -> ParseArenaCsv -> (up to
// 2000 buffers) PlanArena with a small skyline node cap, and (up to 64)
// PlanArenaInstance with a few restarts and no clock -> VerifyArena and never
// below AlignedArenaLowerBound, for alignments 1 and 64.
#include <cstddef>
#include <cstdint>
#include <cstdio>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/arena/arena_csv.h"
#include "core/arena/arena_planner.h"
#include "core/arena/arena_verifier.h"
#include "core/arena/instance_search.h"

namespace {

constexpr size_t kMaxBuffers = 2000;
// The skyline search costs O(buffers) per node: search small instances
// thoroughly, large ones (the MiniMalloc seeds) only briefly.
constexpr size_t kSmallInstance = 64;
constexpr int64_t kSkylineNodesSmall = 2000;
constexpr int64_t kSkylineNodesLarge = 100;

void CheckPlan(const serenity::ArenaInstance& instance, int64_t alignment, bool restarts) {
  const int64_t nodes = instance.buffers.size() <= kSmallInstance ? kSkylineNodesSmall : kSkylineNodesLarge;
  serenity::InstanceSearchOptions search = serenity::PlanArenaSearch();
  search.static_nodes = nodes;
  search.max_restarts = 4;
  absl::StatusOr<serenity::ArenaPlan> plan = restarts ? serenity::PlanArenaInstance(instance.buffers, alignment, search)
                                                      : serenity::PlanArena(instance.buffers, alignment, nodes);
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
  if (plan->size_bytes < serenity::AlignedArenaLowerBound(instance.buffers, alignment)) {
    std::fprintf(stderr, "arena plan below the (aligned) lower bound\n");
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
  const bool small = instance->buffers.size() <= kSmallInstance;
  for (int64_t alignment : {1, 64}) {
    CheckPlan(*instance, alignment, /*restarts=*/false);
    if (small) CheckPlan(*instance, alignment, /*restarts=*/true);
  }
  return 0;
}
