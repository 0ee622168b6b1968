#include "core/arena/lowest_first.h"

#include <algorithm>
#include <chrono>
#include <numeric>
#include <queue>
#include <random>
#include <tuple>
#include <utility>
#include <vector>

namespace serenity {
namespace {

// A free buffer with its anchored ones: placed as one block.
// An anchored block (arena_planner.h) and the sections it lives in.
struct Block : AnchoredBlock {
  int lo = 0;  // sections [lo, hi)
  int hi = 0;
};

// Range "raise to at least v" and range maximum over positions [0, size):
// each node keeps the maximum below it and the least value its whole range
// was raised to; a query adds the raises of the nodes above the ones it
// reads (all above one of its two end leaves).
class RaiseMaxTree {
 public:
  explicit RaiseMaxTree(int size) : size_(std::max(1, size)), max_(2 * size_, 0), raised_(2 * size_, 0) {}

  void Raise(int lo, int hi, int64_t value) {
    for (int l = lo + size_, r = hi + size_; l < r; l >>= 1, r >>= 1) {
      if (l & 1) Apply(l++, value);
      if (r & 1) Apply(--r, value);
    }
    for (int i = (lo + size_) >> 1; i > 0; i >>= 1) max_[i] = std::max(max_[i], value);
    for (int i = (hi - 1 + size_) >> 1; i > 0; i >>= 1) max_[i] = std::max(max_[i], value);
  }

  int64_t Max(int lo, int hi) const {
    int64_t result = 0;
    for (int l = lo + size_, r = hi + size_; l < r; l >>= 1, r >>= 1) {
      if (l & 1) result = std::max(result, max_[l++]);
      if (r & 1) result = std::max(result, max_[--r]);
    }
    for (int i = (lo + size_) >> 1; i > 0; i >>= 1) result = std::max(result, raised_[i]);
    for (int i = (hi - 1 + size_) >> 1; i > 0; i >>= 1) result = std::max(result, raised_[i]);
    return result;
  }

 private:
  void Apply(int node, int64_t value) {
    max_[node] = std::max(max_[node], value);
    raised_[node] = std::max(raised_[node], value);
  }

  int size_;
  std::vector<int64_t> max_;
  std::vector<int64_t> raised_;
};

// Range maximum over a fixed array.
class StaticMaxTree {
 public:
  explicit StaticMaxTree(const std::vector<int64_t>& values)
      : size_(std::max<int>(1, static_cast<int>(values.size()))), max_(2 * size_, 0) {
    std::copy(values.begin(), values.end(), max_.begin() + size_);
    for (int i = size_ - 1; i > 0; --i) max_[i] = std::max(max_[2 * i], max_[2 * i + 1]);
  }

  int64_t Max(int lo, int hi) const {
    int64_t result = 0;
    for (int l = lo + size_, r = hi + size_; l < r; l >>= 1, r >>= 1) {
      if (l & 1) result = std::max(result, max_[l++]);
      if (r & 1) result = std::max(result, max_[--r]);
    }
    return result;
  }

 private:
  int size_;
  std::vector<int64_t> max_;
};

}  // namespace

absl::StatusOr<ArenaPlan> PlanArenaLowestFirst(absl::Span<const ArenaBuffer> buffers, int64_t alignment,
                                               OffsetRank rank, uint64_t shuffle_seed, const ArenaLimits& limits) {
  absl::Status valid = ValidateArenaBuffers(buffers, alignment);
  if (!valid.ok()) return valid;
  const size_t n = buffers.size();
  ArenaPlan plan;
  plan.alignment = alignment;
  plan.offsets.assign(n, 0);
  std::vector<Block> blocks;
  for (const AnchoredBlock& b : AnchoredBlocks(buffers)) blocks.push_back({b});
  // Time in sections: the runs of steps between the blocks' boundaries.
  std::vector<int64_t> bounds;
  bounds.reserve(2 * blocks.size());
  for (const Block& b : blocks) {
    bounds.push_back(b.first);
    bounds.push_back(int64_t{b.last} + 1);
  }
  std::sort(bounds.begin(), bounds.end());
  bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
  const int sections = std::max<int>(1, static_cast<int>(bounds.size()) - 1);
  std::vector<int64_t> live(sections + 1, 0);
  for (Block& b : blocks) {
    b.lo = static_cast<int>(std::lower_bound(bounds.begin(), bounds.end(), b.first) - bounds.begin());
    b.hi = static_cast<int>(std::lower_bound(bounds.begin(), bounds.end(), int64_t{b.last} + 1) - bounds.begin());
    live[b.lo] += b.extent;
    live[b.hi] -= b.extent;
  }
  for (int s = 1; s <= sections; ++s) live[s] += live[s - 1];
  live.pop_back();
  // The static rank, as the search's before anything is placed.
  std::vector<std::tuple<double, double, double>> key(blocks.size());
  {
    const StaticMaxTree busiest(live);
    for (size_t k = 0; k < blocks.size(); ++k) {
      const Block& b = blocks[k];
      const double w = static_cast<double>(int64_t{b.last} - b.first + 1);
      const double area = static_cast<double>(b.extent) * w;
      key[k] = OffsetRankKey(rank, static_cast<double>(busiest.Max(b.lo, b.hi)), w, area);
    }
  }
  // The setup costs seconds at 10^6 buffers: none of it past the deadline.
  if (std::chrono::steady_clock::now() >= limits.deadline) {
    return absl::DeadlineExceededError("the lowest-first placement ran out of time");
  }
  std::vector<size_t> ranked(blocks.size());
  std::iota(ranked.begin(), ranked.end(), size_t{0});
  std::stable_sort(ranked.begin(), ranked.end(), [&](size_t a, size_t b) { return key[a] > key[b]; });
  if (std::chrono::steady_clock::now() >= limits.deadline) {
    return absl::DeadlineExceededError("the lowest-first placement ran out of time");
  }
  key.clear();
  key.shrink_to_fit();
  if (shuffle_seed != 0) {  // as the search's restarts
    std::mt19937_64 random(shuffle_seed);
    ShuffleNeighbours(&ranked, random);
  }
  // (lowest offset, rank), least first; a stale lowest offset is refreshed
  // when its entry comes up.
  using Entry = std::pair<int64_t, int64_t>;
  std::vector<Entry> start;
  start.reserve(blocks.size());
  for (size_t r = 0; r < ranked.size(); ++r) start.emplace_back(0, static_cast<int64_t>(r));
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> queue(std::greater<Entry>(), std::move(start));
  RaiseMaxTree ends(sections);
  for (int64_t steps = 1; !queue.empty(); ++steps) {
    if ((steps & 4095) == 0) {
      if (limits.cancelled != nullptr && limits.cancelled->load(std::memory_order_relaxed)) {
        return absl::CancelledError("the lowest-first placement was cancelled");
      }
      if (std::chrono::steady_clock::now() >= limits.deadline) {
        return absl::DeadlineExceededError("the lowest-first placement ran out of time");
      }
    }
    const auto [lowest, r] = queue.top();
    queue.pop();
    const Block& b = blocks[ranked[static_cast<size_t>(r)]];
    const int64_t at = AlignUp(ends.Max(b.lo, b.hi), alignment);
    // Stale: back in the queue, unless it would come straight out again.
    if (at > lowest && !queue.empty() && queue.top() < Entry{at, r}) {
      queue.emplace(at, r);
      continue;
    }
    plan.offsets[b.head] = at;
    ends.Raise(b.lo, b.hi, at + b.extent);
  }
  for (size_t i = 0; i < n; ++i) {
    if (buffers[i].anchor >= 0) {
      plan.offsets[i] = plan.offsets[static_cast<size_t>(buffers[i].anchor)] + buffers[i].offset_from_anchor;
    }
    plan.size_bytes = std::max(plan.size_bytes, plan.offsets[i] + buffers[i].size);
  }
  return plan;
}

}  // namespace serenity
