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

// A min-queue of (lowest offset, rank) entries as pairs.
class PairQueue {
 public:
  void Push(int64_t lowest, size_t r) { queue_.emplace(lowest, r); }
  bool Empty() const { return queue_.empty(); }
  int64_t TopLowest() const { return queue_.top().first; }
  size_t TopRank() const { return queue_.top().second; }
  void Pop() { queue_.pop(); }
  // True when (lowest, r) would come before the top entry.
  bool Before(int64_t lowest, size_t r) const { return std::pair<int64_t, size_t>(lowest, r) < queue_.top(); }

 private:
  using Entry = std::pair<int64_t, size_t>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> queue_;
};

// The same entries packed as lowest << rank_bits | rank (the caller checks
// that they fit).
class PackedQueue {
 public:
  explicit PackedQueue(int rank_bits) : bits_(rank_bits), mask_((uint64_t{1} << rank_bits) - 1) {}
  void Push(int64_t lowest, size_t r) { queue_.push(static_cast<uint64_t>(lowest) << bits_ | r); }
  bool Empty() const { return queue_.empty(); }
  int64_t TopLowest() const { return static_cast<int64_t>(queue_.top() >> bits_); }
  size_t TopRank() const { return static_cast<size_t>(queue_.top() & mask_); }
  void Pop() { queue_.pop(); }
  bool Before(int64_t lowest, size_t r) const { return (static_cast<uint64_t>(lowest) << bits_ | r) < queue_.top(); }

 private:
  int bits_;
  uint64_t mask_;
  std::priority_queue<uint64_t, std::vector<uint64_t>, std::greater<uint64_t>> queue_;
};

// Places `by_rank` (blocks in rank order) lowest first into plan->offsets
// (their heads). DeadlineExceeded or Cancelled when `limits` stop it.
template <typename Queue>
absl::Status PlaceFrom(const std::vector<LowestFirstPlacer::Block>& by_rank, Queue queue, int sections,
                       int64_t alignment, const ArenaLimits& limits, ArenaPlan* plan) {
  // (lowest offset, rank), least first; a stale lowest offset is refreshed
  // when its entry comes up.
  for (size_t r = 0; r < by_rank.size(); ++r) queue.Push(0, r);
  RaiseMaxTree ends(sections);
  for (int64_t steps = 1; !queue.Empty(); ++steps) {
    if ((steps & 4095) == 0) {
      if (limits.cancelled != nullptr && limits.cancelled->load(std::memory_order_relaxed)) {
        return absl::CancelledError("the lowest-first placement was cancelled");
      }
      if (std::chrono::steady_clock::now() >= limits.deadline) {
        return absl::DeadlineExceededError("the lowest-first placement ran out of time");
      }
    }
    const int64_t lowest = queue.TopLowest();
    const size_t r = queue.TopRank();
    queue.Pop();
    const LowestFirstPlacer::Block& b = by_rank[r];
    const int64_t highest = ends.Max(b.lo, b.hi);
    const int64_t at = alignment == 1 ? highest : AlignUp(highest, alignment);
    // Stale: back in the queue, unless it would come straight out again.
    if (at > lowest && !queue.Empty() && !queue.Before(at, r)) {
      queue.Push(at, r);
      continue;
    }
    plan->offsets[b.head] = at;
    ends.Raise(b.lo, b.hi, at + b.extent);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<LowestFirstPlacer> LowestFirstPlacer::Create(absl::Span<const ArenaBuffer> buffers, int64_t alignment) {
  absl::Status valid = ValidateArenaBuffers(buffers, alignment);
  if (!valid.ok()) return valid;
  LowestFirstPlacer placer;
  placer.buffers_ = buffers;
  placer.alignment_ = alignment;
  for (const AnchoredBlock& b : AnchoredBlocks(buffers)) placer.blocks_.push_back({b});
  // Time in sections: the runs of steps between the blocks' boundaries.
  std::vector<int64_t> bounds;
  bounds.reserve(2 * placer.blocks_.size());
  for (const Block& b : placer.blocks_) {
    bounds.push_back(b.first);
    bounds.push_back(int64_t{b.last} + 1);
  }
  std::sort(bounds.begin(), bounds.end());
  bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
  placer.sections_ = std::max<int>(1, static_cast<int>(bounds.size()) - 1);
  for (Block& b : placer.blocks_) {
    placer.total_extent_ += AlignUp(b.extent, alignment);
    b.lo = static_cast<int>(std::lower_bound(bounds.begin(), bounds.end(), b.first) - bounds.begin());
    b.hi = static_cast<int>(std::lower_bound(bounds.begin(), bounds.end(), int64_t{b.last} + 1) - bounds.begin());
  }
  return placer;
}

std::vector<size_t> LowestFirstPlacer::Ranking(OffsetRank rank) const {
  std::vector<int64_t> live(sections_ + 1, 0);
  for (const Block& b : blocks_) {
    live[b.lo] += b.extent;
    live[b.hi] -= b.extent;
  }
  for (int s = 1; s <= sections_; ++s) live[s] += live[s - 1];
  live.pop_back();
  // The static rank, as the search's before anything is placed.
  std::vector<std::tuple<double, double, double>> key(blocks_.size());
  {
    const StaticMaxTree busiest(live);
    for (size_t k = 0; k < blocks_.size(); ++k) {
      const Block& b = blocks_[k];
      const double w = static_cast<double>(int64_t{b.last} - b.first + 1);
      const double area = static_cast<double>(b.extent) * w;
      key[k] = OffsetRankKey(rank, static_cast<double>(busiest.Max(b.lo, b.hi)), w, area);
    }
  }
  std::vector<size_t> ranked(blocks_.size());
  std::iota(ranked.begin(), ranked.end(), size_t{0});
  std::stable_sort(ranked.begin(), ranked.end(), [&](size_t a, size_t b) { return key[a] > key[b]; });
  return ranked;
}

absl::StatusOr<ArenaPlan> LowestFirstPlacer::Place(absl::Span<const size_t> ranked, const ArenaLimits& limits) const {
  {
    std::vector<char> seen(blocks_.size(), 0);
    for (size_t k : ranked) {
      if (k >= blocks_.size() || seen[k])
        return absl::InvalidArgumentError("the ranking is no permutation of the blocks");
      seen[k] = 1;
    }
    if (ranked.size() != blocks_.size())
      return absl::InvalidArgumentError("the ranking is no permutation of the blocks");
  }
  const size_t n = buffers_.size();
  ArenaPlan plan;
  plan.alignment = alignment_;
  plan.offsets.assign(n, 0);
  // The blocks in rank order: one read per step instead of two.
  std::vector<Block> by_rank;
  by_rank.reserve(ranked.size());
  for (size_t k : ranked) by_rank.push_back(blocks_[k]);
  // No lowest offset exceeds the blocks' aligned extents in all: when that
  // and the ranks fit 63 bits together, each entry is one packed integer
  // (half the memory; a third less time at 10^6 buffers).
  int rank_bits = 0;
  while ((size_t{1} << rank_bits) < ranked.size()) ++rank_bits;
  const bool packed = rank_bits < 63 && total_extent_ < (int64_t{1} << (63 - rank_bits));
  absl::Status placed = packed ? PlaceFrom(by_rank, PackedQueue(rank_bits), sections_, alignment_, limits, &plan)
                               : PlaceFrom(by_rank, PairQueue(), sections_, alignment_, limits, &plan);
  if (!placed.ok()) return placed;
  for (size_t i = 0; i < n; ++i) {
    if (buffers_[i].anchor >= 0) {
      plan.offsets[i] = plan.offsets[static_cast<size_t>(buffers_[i].anchor)] + buffers_[i].offset_from_anchor;
    }
    plan.size_bytes = std::max(plan.size_bytes, plan.offsets[i] + buffers_[i].size);
  }
  return plan;
}

void ShuffleNearTop(const LowestFirstPlacer& placer, const ArenaPlan& plan, int odds, std::mt19937_64& random,
                    std::vector<size_t>* ranked) {
  const std::vector<LowestFirstPlacer::Block>& blocks = placer.blocks();
  if (blocks.empty()) return;
  auto end_of = [&](size_t k) { return plan.offsets[blocks[k].head] + blocks[k].extent; };
  size_t top = 0;
  for (size_t k = 1; k < blocks.size(); ++k) {
    if (end_of(k) > end_of(top)) top = k;
  }
  const int64_t length = blocks[top].hi - blocks[top].lo;
  const int64_t lo = blocks[top].lo - length, hi = blocks[top].hi + length;
  std::vector<size_t> slots;  // positions in *ranked of the blocks near the top
  for (size_t r = 0; r < ranked->size(); ++r) {
    const LowestFirstPlacer::Block& b = blocks[(*ranked)[r]];
    if (b.hi > lo && b.lo < hi) slots.push_back(r);
  }
  const uint64_t one_in = static_cast<uint64_t>(std::max(1, odds));
  for (size_t q = 0; q + 1 < slots.size(); ++q) {
    if (random() % one_in == 0) std::swap((*ranked)[slots[q]], (*ranked)[slots[q + 1]]);
  }
}

absl::StatusOr<ArenaPlan> PlanArenaLowestFirst(absl::Span<const ArenaBuffer> buffers, int64_t alignment,
                                               OffsetRank rank, uint64_t shuffle_seed, const ArenaLimits& limits) {
  absl::StatusOr<LowestFirstPlacer> placer = LowestFirstPlacer::Create(buffers, alignment);
  if (!placer.ok()) return placer.status();
  // The setup costs seconds at 10^6 buffers: none of it past the deadline.
  if (std::chrono::steady_clock::now() >= limits.deadline) {
    return absl::DeadlineExceededError("the lowest-first placement ran out of time");
  }
  std::vector<size_t> ranked = placer->Ranking(rank);
  if (std::chrono::steady_clock::now() >= limits.deadline) {
    return absl::DeadlineExceededError("the lowest-first placement ran out of time");
  }
  if (shuffle_seed != 0) {  // as the search's restarts
    std::mt19937_64 random(shuffle_seed);
    ShuffleNeighbours(&ranked, random);
  }
  return placer->Place(ranked, limits);
}

}  // namespace serenity
