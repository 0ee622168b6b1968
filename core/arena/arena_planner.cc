#include "core/arena/arena_planner.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "core/arena/skyline_search.h"

namespace serenity {
namespace {

int64_t AlignUp(int64_t value, int64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

// Also OutOfRange when the buffers, each rounded up to `alignment`, total
// more than 2^62 bytes: no offset or end computed from them can overflow.
absl::Status CheckBuffers(absl::Span<const ArenaBuffer> buffers, int64_t alignment) {
  constexpr int64_t kLimit = int64_t{1} << 62;
  int64_t total = 0;
  for (size_t i = 0; i < buffers.size(); ++i) {
    if (buffers[i].size > kLimit - alignment || (total += AlignUp(buffers[i].size, alignment)) > kLimit) {
      return absl::OutOfRangeError("the buffers need more than 2^62 bytes in all once aligned");
    }
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

namespace {

enum class Fit { kBest, kFirst };

// Places buffers one by one in `order`, each into a gap between the already
// placed buffers that share a step with it (the tightest gap for kBest, the
// lowest for kFirst) or above them all.
ArenaPlan PlaceInOrder(absl::Span<const ArenaBuffer> buffers, const std::vector<size_t>& order, int64_t alignment,
                       Fit fit) {
  ArenaPlan plan;
  plan.alignment = alignment;
  plan.offsets.assign(buffers.size(), 0);
  std::vector<size_t> placed;  // kept sorted by offset
  for (size_t i : order) {
    const ArenaBuffer& b = buffers[i];
    int64_t best_offset = -1, best_waste = 0, cursor = 0;
    for (size_t j : placed) {
      const ArenaBuffer& o = buffers[j];
      if (o.size == 0 || o.first_step > b.last_step || b.first_step > o.last_step) continue;
      int64_t gap_start = AlignUp(cursor, alignment);
      int64_t gap_end = plan.offsets[j];
      if (gap_end - gap_start >= b.size) {
        int64_t waste = gap_end - gap_start - b.size;
        if (best_offset < 0 || (fit == Fit::kBest && waste < best_waste)) {
          best_offset = gap_start;
          best_waste = waste;
        }
        if (fit == Fit::kFirst) break;
      }
      cursor = std::max(cursor, plan.offsets[j] + o.size);
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

// Buffer indices sorted by `less`, ties by index.
template <typename Less>
std::vector<size_t> SortedBy(size_t n, Less less) {
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), less);
  return order;
}

}  // namespace

absl::StatusOr<ArenaPlan> PlanArenaGreedyBySize(absl::Span<const ArenaBuffer> buffers, int64_t alignment) {
  if (alignment < 1) return absl::InvalidArgumentError("alignment must be at least 1");
  absl::Status valid = CheckBuffers(buffers, alignment);
  if (!valid.ok()) return valid;
  std::vector<size_t> by_size = SortedBy(buffers.size(), [&](size_t a, size_t b) {
    if (buffers[a].size != buffers[b].size) return buffers[a].size > buffers[b].size;
    return buffers[a].first_step < buffers[b].first_step;
  });
  return PlaceInOrder(buffers, by_size, alignment, Fit::kBest);
}

absl::StatusOr<ArenaPlan> PlanArena(absl::Span<const ArenaBuffer> buffers, int64_t alignment,
                                    int64_t skyline_nodes, double skyline_seconds) {
  if (alignment < 1) return absl::InvalidArgumentError("alignment must be at least 1");
  absl::Status valid = CheckBuffers(buffers, alignment);
  if (!valid.ok()) return valid;
  const size_t n = buffers.size();
  auto length = [&](size_t i) { return int64_t{buffers[i].last_step} - buffers[i].first_step + 1; };
  // The live bytes of each buffer's busiest step ("breadth").
  std::vector<int64_t> breadth(n, 0);
  {
    std::map<int32_t, int64_t> delta;
    for (const ArenaBuffer& b : buffers) {
      delta[b.first_step] += b.size;
      delta[b.last_step + 1] -= b.size;
    }
    std::vector<std::pair<int32_t, int64_t>> live;  // step -> live bytes from that step on
    int64_t running = 0;
    for (const auto& [step, change] : delta) live.emplace_back(step, running += change);
    for (size_t i = 0; i < n; ++i) {
      auto it = std::upper_bound(live.begin(), live.end(), std::make_pair(buffers[i].first_step, INT64_MAX));
      for (--it; it != live.end() && it->first <= buffers[i].last_step; ++it) breadth[i] = std::max(breadth[i], it->second);
    }
  }
  const std::vector<std::vector<size_t>> orders = {
      SortedBy(n, [&](size_t a, size_t b) {
        if (buffers[a].size != buffers[b].size) return buffers[a].size > buffers[b].size;
        return buffers[a].first_step < buffers[b].first_step;
      }),
      SortedBy(n, [&](size_t a, size_t b) {
        if (breadth[a] != breadth[b]) return breadth[a] > breadth[b];
        return buffers[a].size > buffers[b].size;
      }),
      SortedBy(n, [&](size_t a, size_t b) {
        if (length(a) != length(b)) return length(a) > length(b);
        return buffers[a].size > buffers[b].size;
      }),
      SortedBy(n, [&](size_t a, size_t b) {  // in double: the product may not fit 64 bits
        return static_cast<double>(buffers[a].size) * static_cast<double>(length(a)) >
               static_cast<double>(buffers[b].size) * static_cast<double>(length(b));
      }),
      SortedBy(n, [&](size_t a, size_t b) {
        if (buffers[a].first_step != buffers[b].first_step) return buffers[a].first_step < buffers[b].first_step;
        return buffers[a].size > buffers[b].size;
      }),
  };
  const int64_t bound = ArenaLowerBound(buffers);
  ArenaPlan best;
  bool have = false;
  for (const std::vector<size_t>& order : orders) {
    for (Fit fit : {Fit::kBest, Fit::kFirst}) {
      ArenaPlan plan = PlaceInOrder(buffers, order, alignment, fit);
      if (!have || plan.size_bytes < best.size_bytes) {
        best = std::move(plan);
        have = true;
      }
      if (best.size_bytes <= bound) return best;
    }
  }
  // Then a bounded skyline search for a packing at the bound itself, with
  // large buffers first and with long-lived ones first.
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  const bool timed = skyline_seconds < 1e9;
  const Clock::time_point end =
      timed ? start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(skyline_seconds))
            : Clock::time_point::max();
  for (SkylineOrder order : {SkylineOrder::kSizeFirst, SkylineOrder::kLifetimeFirst}) {
    if (skyline_nodes <= 0) break;
    const Clock::time_point deadline =
        timed && order == SkylineOrder::kSizeFirst ? start + (end - start) / 2 : end;
    std::vector<int64_t> offsets;
    if (PackWithinCapacity(buffers, alignment, bound, skyline_nodes, order, &offsets, deadline) ==
        PackingResult::kPacked) {
      best.offsets = std::move(offsets);
      best.size_bytes = 0;
      for (size_t i = 0; i < n; ++i) best.size_bytes = std::max(best.size_bytes, best.offsets[i] + buffers[i].size);
      break;
    }
  }
  return best;
}

}  // namespace serenity
