#include "core/arena/pinned_arena.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <numeric>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/util/deadline.h"
#include "core/util/saturating.h"
#include "core/util/status_macros.h"

namespace serenity {
namespace {

constexpr int64_t kMaxEnd = int64_t{1} << 62;

bool Overlap(int64_t a, int64_t a_size, int64_t b, int64_t b_size) {
  return a_size > 0 && b_size > 0 && a < b + b_size && b < a + a_size;
}

absl::Status CheckPinned(absl::Span<const ArenaBuffer> buffers, absl::Span<const int64_t> pinned, int64_t alignment,
                         const std::vector<std::vector<size_t>>& co_live) {
  if (pinned.size() != buffers.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(pinned.size(), " pinned offsets given for ", buffers.size(), " buffers"));
  }
  if (alignment < 1) return absl::InvalidArgumentError("alignment must be at least 1");
  for (size_t i = 0; i < buffers.size(); ++i) {
    if (buffers[i].anchor != -1) {
      return absl::InvalidArgumentError(absl::StrCat("buffer ", i, " is anchored: pinning takes free buffers only"));
    }
    if (pinned[i] < -1) return absl::InvalidArgumentError(absl::StrCat("buffer ", i, " is pinned at ", pinned[i]));
    if (pinned[i] < 0) continue;
    if (pinned[i] % alignment != 0) {
      return absl::InvalidArgumentError(absl::StrCat("buffer ", i, " is pinned at offset ", pinned[i],
                                                     ", not a multiple of the alignment ", alignment));
    }
    if (buffers[i].size < 0 || pinned[i] > kMaxEnd - buffers[i].size) {
      return absl::InvalidArgumentError(absl::StrCat("buffer ", i, " is pinned to end past 2^62 bytes"));
    }
    for (size_t j : co_live[i]) {
      if (j < i && pinned[j] >= 0 && Overlap(pinned[i], buffers[i].size, pinned[j], buffers[j].size)) {
        return absl::InvalidArgumentError(absl::StrCat("pinned buffers ", j, " (at ", pinned[j], ", ", buffers[j].size,
                                                       " bytes) and ", i, " (at ", pinned[i], ", ", buffers[i].size,
                                                       " bytes) share a step and overlap in memory"));
      }
    }
  }
  return absl::OkStatus();
}

// Places the free buffers in `order` around the pinned ones: each at the
// lowest-waste aligned gap between its placed co-live buffers, or above them.
ArenaPlan PlaceAround(absl::Span<const ArenaBuffer> buffers, absl::Span<const int64_t> pinned, int64_t alignment,
                      const std::vector<std::vector<size_t>>& co_live, const std::vector<size_t>& order) {
  ArenaPlan plan;
  plan.alignment = alignment;
  plan.offsets.assign(pinned.begin(), pinned.end());
  std::vector<bool> placed(buffers.size());
  for (size_t i = 0; i < buffers.size(); ++i) placed[i] = pinned[i] >= 0;
  std::vector<std::pair<int64_t, int64_t>> taken;  // [offset, end) of placed co-live buffers
  for (size_t i : order) {
    const int64_t size = buffers[i].size;
    taken.clear();
    for (size_t j : co_live[i]) {
      if (placed[j] && buffers[j].size > 0) taken.push_back({plan.offsets[j], plan.offsets[j] + buffers[j].size});
    }
    std::sort(taken.begin(), taken.end());
    int64_t best = -1, best_waste = INT64_MAX, floor = 0;
    for (const auto& [start, end] : taken) {
      const int64_t at = AlignUp(floor, alignment);
      if (size == 0 || at + size <= start) {
        if (start - at - size < best_waste) best = at, best_waste = start - at - size;
        if (size == 0) break;
      }
      floor = std::max(floor, end);
    }
    plan.offsets[i] = best >= 0 ? best : AlignUp(floor, alignment);
    placed[i] = true;
  }
  for (size_t i = 0; i < buffers.size(); ++i) {
    plan.size_bytes = std::max(plan.size_bytes, plan.offsets[i] + buffers[i].size);
  }
  return plan;
}

// The best of PlaceAround's orders; the first always, the others while
// `end` has not passed.
ArenaPlan BestPlacementAround(absl::Span<const ArenaBuffer> buffers, absl::Span<const int64_t> pinned,
                              int64_t alignment, const std::vector<std::vector<size_t>>& co_live,
                              std::chrono::steady_clock::time_point end) {
  std::vector<size_t> free;
  for (size_t i = 0; i < buffers.size(); ++i) {
    if (pinned[i] < 0) free.push_back(i);
  }
  auto length = [&](size_t i) { return int64_t{buffers[i].last_step} - buffers[i].first_step + 1; };
  using Key = std::pair<int64_t, int64_t>;  // larger first, then earlier start
  const std::vector<std::function<Key(size_t)>> keys = {
      [&](size_t i) {
        return Key{buffers[i].size, -buffers[i].first_step};
      },
      [&](size_t i) {
        return Key{length(i), -buffers[i].first_step};
      },
      [&](size_t i) {
        return Key{buffers[i].size > 0 ? buffers[i].size * length(i) : 0, -buffers[i].first_step};
      },
      [&](size_t i) {
        return Key{-buffers[i].first_step, buffers[i].size};
      },
  };
  ArenaPlan best;
  best.size_bytes = -1;
  for (const auto& key : keys) {
    if (best.size_bytes >= 0 && std::chrono::steady_clock::now() >= end) break;
    std::vector<size_t> order = free;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return key(a) > key(b); });
    ArenaPlan plan = PlaceAround(buffers, pinned, alignment, co_live, order);
    if (best.size_bytes < 0 || plan.size_bytes < best.size_bytes) best = std::move(plan);
  }
  return best;
}

}  // namespace

absl::StatusOr<ArenaPlan> PlanArenaInstanceWithPinned(absl::Span<const ArenaBuffer> buffers,
                                                      absl::Span<const int64_t> pinned, int64_t alignment,
                                                      const InstanceSearchOptions& options, const ArenaLimits& limits) {
  const auto start = std::chrono::steady_clock::now();
  const bool any_pinned = std::any_of(pinned.begin(), pinned.end(), [](int64_t p) { return p != -1; });
  if (!any_pinned && (pinned.empty() || pinned.size() == buffers.size())) {
    return PlanArenaInstance(buffers, alignment, options, limits);
  }
  std::vector<size_t> all(buffers.size());
  std::iota(all.begin(), all.end(), size_t{0});
  for (const ArenaBuffer& b : buffers) {
    if (b.last_step < b.first_step) return absl::InvalidArgumentError("a buffer ends before it starts");
  }
  const std::vector<std::vector<size_t>> co_live = OverlappingBuffers(buffers, all, kMaxArenaSearchCells);
  if (co_live.size() != buffers.size()) {
    return absl::ResourceExhaustedError(
        absl::StrCat("the buffers share more than ", kMaxArenaSearchCells, " pairs of steps: too many to pin"));
  }
  RETURN_IF_ERROR(CheckPinned(buffers, pinned, alignment, co_live));
  // No offset or end may pass 2^62: the free buffers, aligned, stacked on
  // the highest pinned end (aligned) must stay below it.
  RETURN_IF_ERROR(ValidateArenaBuffers(buffers, alignment));
  int64_t top = 0, free_bytes = 0;
  for (size_t i = 0; i < buffers.size(); ++i) {
    if (pinned[i] >= 0) {
      top = std::max(top, pinned[i] + buffers[i].size);
    } else {
      free_bytes = SaturatingAdd(free_bytes, AlignUp(buffers[i].size, alignment));
    }
  }
  if (SaturatingAdd(SaturatingAdd(top, alignment), free_bytes) > kMaxEnd) {
    return absl::OutOfRangeError("the highest pinned end and the other buffers, aligned, need more than 2^62 bytes");
  }
  ArenaPlan best = BestPlacementAround(buffers, pinned, alignment, co_live,
                                       std::min(TimeAfter(start, options.seconds), limits.deadline));
  // Nothing fits below the live bytes of any step or the highest pinned end.
  int64_t bound = AlignedArenaLowerBound(buffers, alignment);
  for (size_t i = 0; i < buffers.size(); ++i) {
    if (pinned[i] >= 0) bound = std::max(bound, pinned[i] + buffers[i].size);
  }
  return SearchBelowPlan(buffers, pinned, alignment, std::move(best), bound, options, limits, nullptr, start);
}

}  // namespace serenity
