#include "core/arena/arena_planner.h"

#include <algorithm>
#include <map>
#include <numeric>

#include "absl/strings/str_cat.h"

namespace serenity {
namespace {

int64_t AlignUp(int64_t value, int64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

absl::Status CheckBuffers(absl::Span<const ArenaBuffer> buffers) {
  for (size_t i = 0; i < buffers.size(); ++i) {
    if (buffers[i].size < 0) {
      return absl::InvalidArgumentError(absl::StrCat("buffer ", i, " has negative size"));
    }
    if (buffers[i].last_step < buffers[i].first_step) {
      return absl::InvalidArgumentError(absl::StrCat("buffer ", i, " ends before it starts"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

int64_t ArenaLowerBound(absl::Span<const ArenaBuffer> buffers) {
  std::map<int32_t, int64_t> delta;
  for (const ArenaBuffer& b : buffers) {
    delta[b.first_step] += b.size;
    delta[b.last_step + 1] -= b.size;
  }
  int64_t live = 0, bound = 0;
  for (const auto& [step, change] : delta) {
    live += change;
    bound = std::max(bound, live);
  }
  return bound;
}

absl::StatusOr<ArenaPlan> PlanArenaGreedyBySize(absl::Span<const ArenaBuffer> buffers,
                                                int64_t alignment) {
  if (alignment < 1) return absl::InvalidArgumentError("alignment must be at least 1");
  absl::Status valid = CheckBuffers(buffers);
  if (!valid.ok()) return valid;

  std::vector<size_t> by_size(buffers.size());
  std::iota(by_size.begin(), by_size.end(), 0);
  std::stable_sort(by_size.begin(), by_size.end(), [&](size_t a, size_t b) {
    if (buffers[a].size != buffers[b].size) return buffers[a].size > buffers[b].size;
    return buffers[a].first_step < buffers[b].first_step;
  });

  ArenaPlan plan;
  plan.alignment = alignment;
  plan.offsets.assign(buffers.size(), 0);
  std::vector<size_t> placed;  // kept sorted by offset
  std::vector<size_t> overlapping;
  for (size_t i : by_size) {
    const ArenaBuffer& b = buffers[i];
    overlapping.clear();
    for (size_t j : placed) {
      const ArenaBuffer& o = buffers[j];
      if (o.size > 0 && o.first_step <= b.last_step && b.first_step <= o.last_step) overlapping.push_back(j);
    }
    // Scan the gaps between overlapping buffers in offset order.
    int64_t best_offset = -1, best_waste = 0, cursor = 0;
    for (size_t j : overlapping) {
      int64_t gap_start = AlignUp(cursor, alignment);
      int64_t gap_end = plan.offsets[j];
      if (gap_end - gap_start >= b.size) {
        int64_t waste = gap_end - gap_start - b.size;
        if (best_offset < 0 || waste < best_waste) {
          best_offset = gap_start;
          best_waste = waste;
        }
      }
      cursor = std::max(cursor, plan.offsets[j] + buffers[j].size);
    }
    if (best_offset < 0) best_offset = AlignUp(cursor, alignment);
    plan.offsets[i] = best_offset;
    plan.size_bytes = std::max(plan.size_bytes, best_offset + b.size);
    placed.insert(std::upper_bound(placed.begin(), placed.end(), i,
                                   [&](size_t a, size_t c) { return plan.offsets[a] < plan.offsets[c]; }),
                  i);
  }
  return plan;
}

}  // namespace serenity
