#include "core/arena/arena_verifier.h"

#include <algorithm>
#include <numeric>
#include <vector>

#include "absl/strings/str_cat.h"

namespace serenity {

absl::Status VerifyArena(absl::Span<const ArenaBuffer> buffers, const ArenaPlan& plan) {
  if (plan.offsets.size() != buffers.size()) {
    return absl::FailedPreconditionError(
        absl::StrCat("plan has ", plan.offsets.size(), " offsets for ", buffers.size(), " buffers"));
  }
  if (plan.alignment < 1) return absl::FailedPreconditionError("alignment below 1");
  for (size_t i = 0; i < buffers.size(); ++i) {
    int64_t offset = plan.offsets[i];
    const int32_t anchor = buffers[i].anchor;
    if (anchor >= 0) {
      if (static_cast<size_t>(anchor) >= buffers.size() || buffers[anchor].anchor >= 0) {
        return absl::FailedPreconditionError(absl::StrCat("buffer ", i, " has a bad anchor ", anchor));
      }
      if (offset != plan.offsets[anchor] + buffers[i].offset_from_anchor) {
        return absl::FailedPreconditionError(absl::StrCat("buffer ", i, " is at ", offset, ", not at its anchor's ",
                                                          plan.offsets[anchor], " plus ",
                                                          buffers[i].offset_from_anchor));
      }
    }
    if (offset < 0 || (anchor < 0 && offset % plan.alignment != 0)) {
      return absl::FailedPreconditionError(
          absl::StrCat("buffer ", i, " has offset ", offset, ", not a multiple of ", plan.alignment));
    }
    if (offset + buffers[i].size > plan.size_bytes) {
      return absl::FailedPreconditionError(
          absl::StrCat("buffer ", i, " ends at ", offset + buffers[i].size, ", past the arena size ", plan.size_bytes));
    }
  }
  // Sweep over time: buffers sorted by first step; compare each with the ones
  // still live. Quadratic in the worst case, which is fine for verification.
  std::vector<size_t> by_start(buffers.size());
  std::iota(by_start.begin(), by_start.end(), 0);
  std::sort(by_start.begin(), by_start.end(),
            [&](size_t a, size_t b) { return buffers[a].first_step < buffers[b].first_step; });
  std::vector<size_t> active;
  for (size_t i : by_start) {
    const ArenaBuffer& b = buffers[i];
    if (b.size == 0) continue;
    active.erase(
        std::remove_if(active.begin(), active.end(), [&](size_t j) { return buffers[j].last_step < b.first_step; }),
        active.end());
    for (size_t j : active) {
      bool disjoint =
          plan.offsets[i] + b.size <= plan.offsets[j] || plan.offsets[j] + buffers[j].size <= plan.offsets[i];
      if (!disjoint) {
        return absl::FailedPreconditionError(
            absl::StrCat("buffers ", j, " and ", i, " are live together and overlap in memory"));
      }
    }
    active.push_back(i);
  }
  return absl::OkStatus();
}

}  // namespace serenity
