#include "core/arena/skyline_search.h"

#include <algorithm>
#include <numeric>

namespace serenity {
namespace {

class SkylineSearch {
 public:
  SkylineSearch(absl::Span<const ArenaBuffer> buffers, int64_t alignment, int64_t capacity, int64_t max_nodes,
                SkylineOrder order, std::chrono::steady_clock::time_point deadline)
      : buffers_(buffers), alignment_(alignment), capacity_(capacity), max_nodes_(max_nodes), deadline_(deadline) {
    TimeSections sections = SplitIntoSections(buffers);
    sections_ = sections.count;
    span_ = std::move(sections.spans);
    height_.assign(sections_, 0);
    pending_bytes_.assign(sections_, 0);
    pending_count_.assign(sections_, 0);
    placed_.assign(buffers.size(), false);
    offsets_.assign(buffers.size(), 0);
    by_size_.resize(buffers.size());
    std::iota(by_size_.begin(), by_size_.end(), 0);
    std::stable_sort(by_size_.begin(), by_size_.end(), [&](size_t a, size_t b) {
      const int64_t length_a = int64_t{buffers[a].last_step} - buffers[a].first_step;
      const int64_t length_b = int64_t{buffers[b].last_step} - buffers[b].first_step;
      if (order == SkylineOrder::kLifetimeFirst && length_a != length_b) return length_a > length_b;
      if (buffers[a].size != buffers[b].size) return buffers[a].size > buffers[b].size;
      return length_a > length_b;
    });
    // Lowest first, so that each member's top is above the one before.
    members_ = AnchoredBuffers(buffers);
    for (const std::vector<size_t>& members : members_) anchored_ = anchored_ || !members.empty();
    for (size_t i = 0; i < buffers.size(); ++i) {
      if (buffers[i].size == 0 && (members_[i].empty() || buffers[i].anchor >= 0)) {
        placed_[i] = true;  // zero-size buffers take no room (an anchor still places its group)
        continue;
      }
      for (int s = span_[i].first; s < span_[i].second; ++s) {
        pending_bytes_[s] += buffers[i].size;
        ++pending_count_[s];
      }
    }
  }

  PackingResult Run(std::vector<int64_t>* offsets) {
    for (int s = 0; s < sections_; ++s) {
      if (pending_bytes_[s] > capacity_) return PackingResult::kImpossible;
    }
    const bool found = Explore();
    if (found) {
      for (size_t i = 0; i < buffers_.size(); ++i) {
        if (buffers_[i].anchor >= 0) offsets_[i] = offsets_[buffers_[i].anchor] + buffers_[i].offset_from_anchor;
      }
      *offsets = offsets_;
      return PackingResult::kPacked;
    }
    // With anchored buffers the search is not complete (below).
    return gave_up_ || anchored_ ? PackingResult::kGaveUp : PackingResult::kImpossible;
  }

 private:
  // Recursion goes one level per placed buffer; raising a section loops
  // here instead, so the depth stays at most the number of buffers.
  bool Explore() {
    std::vector<std::pair<int, int64_t>> raised;  // (section, height before)
    auto give_back = [&] {
      for (auto it = raised.rbegin(); it != raised.rend(); ++it) height_[it->first] = it->second;
    };
    while (true) {
      // Once given up, every open node unwinds at once (without the first
      // test a refused node only sent its caller to the next choice).
      if (gave_up_ || ++nodes_ > max_nodes_ || ((nodes_ & 255) == 1 && std::chrono::steady_clock::now() >= deadline_)) {
        gave_up_ = true;
        give_back();
        return false;
      }
      // After a placement only (raises are cheap nodes; checking them too
      // cost more than it pruned).
      if (raised.empty() && !FloorsFit()) return false;
      // The leftmost lowest section with unplaced buffers.
      int t0 = -1;
      for (int s = 0; s < sections_; ++s) {
        if (pending_count_[s] > 0 && (t0 < 0 || height_[s] < height_[t0])) t0 = s;
      }
      if (t0 < 0) return true;  // everything placed
      const int64_t h0 = height_[t0];

      // Place a buffer live at t0 whose whole lifetime is at height h0.
      for (size_t i : by_size_) {
        if (placed_[i] || span_[i].first > t0 || span_[i].second <= t0) continue;
        if (buffers_[i].anchor >= 0) continue;  // goes in with its anchor
        const int64_t size = buffers_[i].size;
        if (h0 + size > capacity_) continue;
        bool flat = true;
        for (int s = span_[i].first; s < span_[i].second && flat; ++s) flat = height_[s] == h0;
        if (!flat) continue;
        const int64_t top = AlignUp(h0 + size, alignment_);
        bool fits = true;  // the rest of each section's buffers must still fit above
        for (int s = span_[i].first; s < span_[i].second && fits; ++s) {
          fits = pending_bytes_[s] - size <= capacity_ - std::min(top, capacity_);
        }
        if (!fits || !MembersFit(i, h0)) continue;
        Place(i, h0, top);
        for (size_t m : members_[i]) {
          if (buffers_[m].size > 0) Place(m, h0 + buffers_[m].offset_from_anchor, MemberTop(m, h0));
        }
        if (Explore()) return true;
        for (auto m = members_[i].rbegin(); m != members_[i].rend(); ++m) {
          if (buffers_[*m].size > 0) Unplace(*m, 0);
        }
        Unplace(i, h0);
        if (gave_up_) {
          give_back();
          return false;
        }
      }

      // Nothing starts at h0 in section t0: raise it to the lowest height a
      // buffer live there could still rest on: a section of its lifetime that
      // is higher already, or h0 plus the smallest unplaced buffer (the least
      // a section at h0 can rise by).
      int64_t next = INT64_MAX;
      for (size_t i = 0; i < buffers_.size(); ++i) {
        if (placed_[i]) continue;
        next = std::min(next, AlignUp(h0 + buffers_[i].size, alignment_));
        if (span_[i].first > t0 || span_[i].second <= t0) continue;
        for (int s = span_[i].first; s < span_[i].second; ++s) {
          if (height_[s] > h0) next = std::min(next, height_[s]);
        }
      }
      if (next == INT64_MAX || pending_bytes_[t0] > capacity_ - std::min(next, capacity_)) {
        give_back();
        return false;
      }
      raised.emplace_back(t0, h0);
      height_[t0] = next;
    }
  }

  // A buffer anchored to one at h0 sits at h0 + offset_from_anchor, above
  // whatever is settled in its sections (which may leave a gap below it:
  // with anchors the search is not complete, only sound).
  int64_t MemberTop(size_t m, int64_t h0) const {
    return AlignUp(h0 + buffers_[m].offset_from_anchor + buffers_[m].size, alignment_);
  }
  bool MembersFit(size_t anchor, int64_t h0) const {
    for (size_t m : members_[anchor]) {
      const int64_t at = h0 + buffers_[m].offset_from_anchor;
      if (buffers_[m].size == 0) continue;
      if (buffers_[m].size > capacity_ - std::min(at, capacity_)) return false;
      for (int s = span_[m].first; s < span_[m].second; ++s) {
        if (height_[s] > at) return false;
      }
    }
    return true;
  }

  // Heights only rise and a buffer is placed where its whole lifetime is
  // flat, so an unplaced buffer ends up no lower than the highest section
  // of its lifetime (its lowest offset), and must end below the capacity
  // from there. The unplaced buffers live in a section all lie above the
  // least of their lowest offsets (and the section's height): false when
  // they cannot fit between that floor and the capacity.
  bool FloorsFit() {
    floor_.assign(sections_, INT64_MAX);
    for (size_t i = 0; i < buffers_.size(); ++i) {
      if (placed_[i]) continue;
      int64_t lowest = 0;
      for (int s = span_[i].first; s < span_[i].second; ++s) lowest = std::max(lowest, height_[s]);
      if (lowest + buffers_[i].size > capacity_) return false;
      for (int s = span_[i].first; s < span_[i].second; ++s) floor_[s] = std::min(floor_[s], lowest);
    }
    for (int s = 0; s < sections_; ++s) {
      if (pending_count_[s] == 0) continue;
      if (pending_bytes_[s] > capacity_ - std::max(floor_[s], height_[s])) return false;
    }
    return true;
  }

  void Place(size_t i, int64_t offset, int64_t top) {
    placed_[i] = true;
    offsets_[i] = offset;
    saved_.push_back({});
    for (int s = span_[i].first; s < span_[i].second; ++s) {
      saved_.back().push_back(height_[s]);
      height_[s] = std::max(height_[s], top);  // an anchored buffer may sit above a gap
      pending_bytes_[s] -= buffers_[i].size;
      --pending_count_[s];
    }
  }

  void Unplace(size_t i, int64_t) {
    placed_[i] = false;
    for (int s = span_[i].first; s < span_[i].second; ++s) {
      height_[s] = saved_.back()[static_cast<size_t>(s - span_[i].first)];
      pending_bytes_[s] += buffers_[i].size;
      ++pending_count_[s];
    }
    saved_.pop_back();
  }

  absl::Span<const ArenaBuffer> buffers_;
  const int64_t alignment_;
  const int64_t capacity_;
  const int64_t max_nodes_;
  const std::chrono::steady_clock::time_point deadline_;
  int sections_ = 0;
  std::vector<std::pair<int, int>> span_;
  std::vector<int64_t> height_;
  std::vector<int64_t> floor_;  // scratch for FloorsFit
  std::vector<int64_t> pending_bytes_;
  std::vector<int> pending_count_;
  std::vector<bool> placed_;
  std::vector<int64_t> offsets_;
  std::vector<size_t> by_size_;
  std::vector<std::vector<int64_t>> saved_;
  std::vector<std::vector<size_t>> members_;  // per anchor, the buffers anchored to it
  bool anchored_ = false;
  int64_t nodes_ = 0;
  bool gave_up_ = false;
};

}  // namespace

PackingResult PackWithinCapacity(absl::Span<const ArenaBuffer> buffers, int64_t alignment, int64_t capacity,
                                 int64_t max_nodes, SkylineOrder order, std::vector<int64_t>* offsets,
                                 std::chrono::steady_clock::time_point deadline) {
  SkylineSearch search(buffers, alignment, capacity, max_nodes, order, deadline);
  return search.Run(offsets);
}

}  // namespace serenity
