#include "core/arena/offset_search.h"

#include <algorithm>
#include <deque>
#include <numeric>
#include <random>
#include <tuple>

namespace serenity {
namespace {

// GivingUp's clock read by work: about a millisecond of neighbours and bands.
constexpr int64_t kWorkPerClockRead = int64_t{1} << 20;

// kFixed: some buffers are fixed (PackAroundFixed); without, none of that
// bookkeeping runs.
template <bool kFixed>
class OffsetSearch {
 public:
  // `fixed`: empty, or one entry per buffer, its offset or -1 (free).
  OffsetSearch(absl::Span<const ArenaBuffer> buffers, absl::Span<const int64_t> fixed, int64_t alignment,
               int64_t capacity, const OffsetSearchOptions& options)
      : buffers_(buffers),
        alignment_(alignment),
        capacity_(capacity),
        max_nodes_(options.max_nodes),
        deadline_(options.deadline),
        cancel_(options.cancel),
        shuffle_(options.shuffle_seed != 0),
        random_(options.shuffle_seed) {
    TimeSections time = SplitIntoSections(buffers);
    const int sections = time.count;
    span_ = std::move(time.spans);
    unplaced_bytes_.assign(sections, 0);
    crossing_.assign(sections, 0);
    witness_.assign(sections, kNone);
    section_buffers_.resize(sections);
    const size_t n = buffers.size();
    // Zero-size buffers take no room: they sit at 0 and take no part.
    offset_.assign(n, -1);
    lowest_.assign(n, 0);
    extent_.resize(n);
    for (size_t i = 0; i < n; ++i) extent_[i] = buffers[i].size;
    std::vector<size_t> pinned;
    for (size_t i = 0; i < n; ++i) {
      if (!fixed.empty() && fixed[i] >= 0) {  // kept where it is
        offset_[i] = fixed[i];
        fixed_end_ = std::max(fixed_end_, fixed[i] + buffers[i].size);
        if (buffers[i].size > 0) pinned.push_back(i);
        continue;
      }
      if (buffers[i].size == 0) {
        offset_[i] = 0;
        continue;
      }
      open_.push_back(i);
      for (int s = span_[i].first; s < span_[i].second; ++s) {
        section_buffers_[s].push_back(i);
        unplaced_bytes_[s] += buffers[i].size;
        if (s + 1 < span_[i].second) ++crossing_[s];
      }
    }
    if (kFixed) {
      // Around many long-lived fixed buffers the setup alone can take a
      // while: it stops at the deadline (Run then gives up).
      if (OutOfTime() || !SetUpFixed(pinned, sections)) {
        gave_up_ = true;
        return;
      }
      headroom_.resize(sections);
      for (int s = 0; s < sections; ++s) headroom_[s] = HeadroomAroundFixed(s);
    }
    for (int s = 0; s < sections; ++s) {  // every lowest offset starts at 0 (fixed buffers aside)
      for (size_t k : section_buffers_[s]) {
        if (lowest_[k] <= Headroom(s)) {
          witness_[s] = k;
          break;
        }
      }
    }
    overlaps_ = OverlappingBuffers(buffers, open_);
    if (OutOfTime()) {
      gave_up_ = true;
      return;
    }
    // Groups: an anchor carries its anchored buffers (of non-zero size) at
    // fixed distances; the group is placed as one piece when the anchor is,
    // and its lifetime is the union of its members'.
    members_ = AnchoredBuffers(buffers);
    group_span_ = span_;
    for (size_t i = 0; i < n; ++i) {
      members_[i].erase(
          std::remove_if(members_[i].begin(), members_[i].end(), [&](size_t m) { return buffers[m].size == 0; }),
          members_[i].end());
      for (size_t m : members_[i]) {
        group_span_[i].first = std::min(group_span_[i].first, span_[m].first);
        group_span_[i].second = std::max(group_span_[i].second, span_[m].second);
        extent_[i] = std::max(extent_[i], buffers[m].offset_from_anchor + buffers[m].size);
      }
      any_group_ = any_group_ || !members_[i].empty();
      // An unplaced group keeps the pieces whole (SolveRange) even where no
      // single member crosses a boundary inside its span.
      if (!members_[i].empty()) {
        for (int s = group_span_[i].first; s + 1 < group_span_[i].second; ++s) ++crossing_[s];
      }
    }
    rank_order_ = options.rank;
    rank_.assign(n, 0);
    Rank(open_);
  }

  // Ranks `group` (unplaced buffers) among themselves by the live bytes of
  // their busiest section (unplaced bytes only), lifetime and area, in the
  // order rank_order_ names, larger first.
  void Rank(const std::vector<size_t>& group) {
    std::vector<size_t> ranked = group;
    std::vector<std::tuple<double, double, double>> key(buffers_.size());
    for (size_t i : group) {
      int64_t busiest = 0;
      for (int s = span_[i].first; s < span_[i].second; ++s) {
        busiest = std::max(busiest, unplaced_bytes_[s] + (kFixed ? fixed_bytes_[s] : 0));
      }
      const double w = static_cast<double>(int64_t{buffers_[i].last_step} - buffers_[i].first_step + 1);
      const double area = static_cast<double>(buffers_[i].size) * w;  // in double: may not fit 64 bits
      key[i] = OffsetRankKey(rank_order_, static_cast<double>(busiest), w, area);
    }
    std::stable_sort(ranked.begin(), ranked.end(), [&](size_t a, size_t b) { return key[a] > key[b]; });
    if (shuffle_) ShuffleNeighbours(&ranked, random_);
    for (size_t r = 0; r < ranked.size(); ++r) rank_[ranked[r]] = static_cast<int64_t>(r);
  }

  PackingResult Run(std::vector<int64_t>* offsets) {
    if (gave_up_) return PackingResult::kGaveUp;  // the setup ran out of time
    if (kFixed && (fixed_end_ > capacity_ || band_overflows_ > 0)) return PackingResult::kImpossible;
    for (int s = 0; s < static_cast<int>(unplaced_bytes_.size()); ++s) {
      if (Headroom(s) < 0) return PackingResult::kImpossible;
    }
    solution_ = offset_;  // zero-size buffers at 0
    if (SolveRange(0, static_cast<int>(unplaced_bytes_.size()), open_)) {
      for (size_t i = 0; i < buffers_.size(); ++i) {  // zero-size members too
        if (buffers_[i].anchor >= 0) solution_[i] = solution_[buffers_[i].anchor] + buffers_[i].offset_from_anchor;
      }
      *offsets = solution_;
      return PackingResult::kPacked;
    }
    // Placing groups whole misses some packings: not finding one proves
    // nothing then.
    return gave_up_ || any_group_ ? PackingResult::kGaveUp : PackingResult::kImpossible;
  }

 private:
  // Solves the unplaced buffers within sections [lo, hi) (none crosses lo
  // or hi), piece by piece between the boundaries no unplaced buffer
  // crosses: the pieces do not interact, so each is searched on its own.
  // `range` holds every unplaced buffer there (and may hold others).
  bool SolveRange(int lo, int hi, const std::vector<size_t>& range) {
    int start = lo;
    for (int b = lo; b < hi; ++b) {
      // Boundary after section b: a piece ends there when nothing unplaced
      // crosses it (or at hi).
      if (b + 1 < hi && crossing_[b] > 0) continue;
      if (HasUnplaced(start, b + 1) && !ExplorePiece(start, b + 1, range)) return false;
      start = b + 1;
    }
    return true;
  }

  // Explore on a piece of its own, its buffers (those of `range` there)
  // ranked afresh by what is still unplaced (their ranks outside it are
  // restored afterwards). Its nodes look at its buffers alone: after a few
  // splits most pieces hold a few dozen of the instance's hundreds.
  bool ExplorePiece(int lo, int hi, const std::vector<size_t>& range) {
    std::vector<size_t> piece;  // with the groups reaching into [lo, hi)
    std::vector<size_t> ranked;
    for (size_t i : range) {
      if (offset_[i] >= 0 || group_span_[i].second <= lo || group_span_[i].first >= hi) continue;
      piece.push_back(i);
      if (span_[i].second > lo && span_[i].first < hi) ranked.push_back(i);
    }
    std::vector<int64_t> saved(ranked.size());
    for (size_t k = 0; k < ranked.size(); ++k) saved[k] = rank_[ranked[k]];
    Rank(ranked);
    const bool found = Explore(lo, hi, 0, -1, piece);
    for (size_t k = 0; k < ranked.size(); ++k) rank_[ranked[k]] = saved[k];
    return found;
  }

  bool HasUnplaced(int lo, int hi) const {
    for (int s = lo; s < hi; ++s) {
      if (unplaced_bytes_[s] > 0) return true;
    }
    return false;
  }

  // Places the unplaced buffers within sections [lo, hi), each at an
  // (offset, rank) not below (`last_offset`, `last_rank`). On success their
  // offsets are in solution_. `piece` holds every unplaced buffer there.
  bool Explore(int lo, int hi, int64_t last_offset, int64_t last_rank, const std::vector<size_t>& piece) {
    if (++nodes_ > max_nodes_) gave_up_ = true;
    work_ += 2 * static_cast<int64_t>(piece.size());
    if (GivingUp()) return false;
    int64_t lowest_end = INT64_MAX;
    bool any = false;
    for (size_t i : piece) {
      if (!Candidate(i, lo, hi)) continue;
      any = true;
      if (members_[i].empty()) lowest_end = std::min(lowest_end, lowest_[i] + buffers_[i].size);
    }
    if (!any) return true;
    // The buffers worth trying, lowest first: not below (last_offset,
    // last_rank) (those packings are reached another way), below the lowest
    // end (else some buffer would fit under them first) and within capacity.
    // A group's offset is the lowest its members allow.
    // Each depth keeps its list between nodes (no allocation per node).
    if (depth_ == candidate_lists_.size()) candidate_lists_.emplace_back();
    std::vector<std::pair<int64_t, size_t>>& candidates = candidate_lists_[depth_];
    candidates.clear();
    const DepthGuard guard(&depth_);
    for (size_t i : piece) {
      if (!Candidate(i, lo, hi)) continue;
      const int64_t at = LowestOf(i);
      if (at < last_offset || (at == last_offset && rank_[i] < last_rank)) continue;
      if (at >= lowest_end || at + extent_[i] > capacity_) continue;
      candidates.push_back({at, i});
    }
    const auto before = [&](const std::pair<int64_t, size_t>& a, const std::pair<int64_t, size_t>& b) {
      return a.first != b.first ? a.first < b.first : rank_[a.second] < rank_[b.second];
    };
    // Most nodes try their first candidate alone: it is found in one pass,
    // and the others are sorted only when a second is needed.
    if (!candidates.empty()) {
      std::iter_swap(candidates.begin(), std::min_element(candidates.begin(), candidates.end(), before));
    }
    // Placing a buffer leaves every section outside its lifetime as tight
    // or tighter (lowest offsets only rise), so a buffer is tried only if
    // its lifetime covers every section that already fails SectionsFit at
    // its offset.
    int64_t checked_at = -1;
    int failing_first = 0, failing_last = -1;
    for (size_t k = 0; k < candidates.size(); ++k) {
      if (k == 1) std::sort(candidates.begin() + 1, candidates.end(), before);
      const int64_t at = candidates[k].first;
      const size_t i = candidates[k].second;
      // A node may try hundreds of candidates, each placing a whole group.
      if (GivingUp()) return false;
      if (at != checked_at) {
        checked_at = at;
        FailingSections(lo, hi, at, &failing_first, &failing_last);
        work_ += hi - lo;
      }
      if (failing_last >= 0 && (group_span_[i].first > failing_first || group_span_[i].second <= failing_last)) {
        if (GroupHatless(i)) return false;
        continue;
      }
      const size_t lowest_mark = lowest_trail_.size();
      bool split = false;
      bool hatless = Place(i, at, &split);
      for (size_t m : members_[i]) {
        member_marks_.push_back(lowest_trail_.size());
        Place(m, at + buffers_[m].offset_from_anchor, &split);
      }
      if (!members_[i].empty()) {
        hatless = GroupHatless(i);
        for (int s = group_span_[i].first; s + 1 < group_span_[i].second; ++s) {
          if (--crossing_[s] == 0) split = true;
        }
      }
      bool found = false;
      work_ += hi - lo;
      if (SectionsFit(lo, hi, at)) found = split ? SolveRange(lo, hi, piece) : Explore(lo, hi, at, rank_[i], piece);
      // Given up: the search ends here and nothing reads its state again,
      // so it is not restored (undoing hundreds of placements around fixed
      // buffers took longer than the search's last millisecond).
      if (gave_up_ && !found) return false;
      if (!members_[i].empty()) {
        for (int s = group_span_[i].first; s + 1 < group_span_[i].second; ++s) ++crossing_[s];
      }
      for (auto m = members_[i].rbegin(); m != members_[i].rend(); ++m) {
        Unplace(*m, member_marks_.back());
        member_marks_.pop_back();
      }
      Unplace(i, lowest_mark);
      if (found) {
        solution_[i] = at;
        return true;
      }
      if (gave_up_ || hatless) return false;
    }
    return false;
  }

  // Places buffer `i` at `at`; true when no unplaced buffer overlaps it.
  // Sets `*split` when a boundary inside its lifetime is no longer crossed
  // by any unplaced buffer.
  bool Place(size_t i, int64_t at, bool* split) {
    if constexpr (kFixed) {  // i counts at its offset from now on
      MoveInBands(i, lowest_[i], at);
    }
    offset_[i] = at;
    witness_marks_.push_back(witness_trail_.size());
    // Its unplaced neighbours now start above it. Outside its lifetime, a
    // section whose witness rises past its headroom needs another.
    bool hatless = true;
    const int64_t raised = AlignUp(at + buffers_[i].size, alignment_);
    stale_.clear();
    work_ += static_cast<int64_t>(overlaps_[i].size());
    for (size_t j : overlaps_[i]) {
      if (offset_[j] >= 0) continue;
      hatless = false;
      if (lowest_[j] >= raised) continue;
      const int64_t lowest = kFixed ? ClearOfFixed(j, raised) : raised;
      for (int s = span_[j].first; s < span_[j].second; ++s) {
        if (s >= span_[i].first && s < span_[i].second) {  // handled below
          s = span_[i].second - 1;
          continue;
        }
        if (witness_[s] == j && lowest > Headroom(s)) stale_.push_back(s);
      }
      lowest_trail_.push_back({j, lowest_[j]});
      if constexpr (kFixed) {
        MoveInBands(j, lowest_[j], lowest);
      }
      lowest_[j] = lowest;
    }
    for (int s : stale_) FindWitness(s);
    // Within its lifetime every unplaced buffer now starts at `raised` or
    // above, and the headroom grows by its size: no witness if `raised` is
    // above the headroom; else the old one holds unless it was i or none.
    for (int s = span_[i].first; s < span_[i].second; ++s) {
      unplaced_bytes_[s] -= buffers_[i].size;
      if constexpr (kFixed) headroom_[s] = HeadroomAroundFixed(s);
      if (s + 1 < span_[i].second && --crossing_[s] == 0) *split = true;
      // (Around fixed buffers the witness's lowest offset may have risen
      // further than `raised`.)
      if (raised > Headroom(s)) {
        if (witness_[s] != kNone) SetWitness(s, kNone);
      } else if (witness_[s] == i || witness_[s] == kNone || (kFixed && lowest_[witness_[s]] > Headroom(s))) {
        FindWitness(s);
      }
    }
    return hatless;
  }

  void Unplace(size_t i, size_t lowest_mark) {
    if constexpr (kFixed) {
      MoveInBands(i, offset_[i], lowest_[i]);
    }
    offset_[i] = -1;
    while (lowest_trail_.size() > lowest_mark) {
      if constexpr (kFixed) {
        const size_t j = lowest_trail_.back().first;
        MoveInBands(j, lowest_[j], lowest_trail_.back().second);
      }
      lowest_[lowest_trail_.back().first] = lowest_trail_.back().second;
      lowest_trail_.pop_back();
    }
    while (witness_trail_.size() > witness_marks_.back()) {
      witness_[witness_trail_.back().first] = witness_trail_.back().second;
      witness_trail_.pop_back();
    }
    witness_marks_.pop_back();
    for (int s = span_[i].first; s < span_[i].second; ++s) {
      unplaced_bytes_[s] += buffers_[i].size;
      if constexpr (kFixed) headroom_[s] = HeadroomAroundFixed(s);
      if (s + 1 < span_[i].second) ++crossing_[s];
    }
  }

  // The highest offset from which section s's unplaced bytes still fit
  // under the capacity (negative when they cannot fit at all), around the
  // fixed buffers live there: the highest x with x + (fixed bytes above x)
  // + (unplaced bytes) <= capacity. Around fixed buffers it is kept in
  // headroom_ (a node reads it for every section), computed again when the
  // section's unplaced bytes change.
  int64_t Headroom(int s) const {
    if constexpr (kFixed) {
      if (!headroom_.empty()) return headroom_[s];
    }
    return HeadroomAroundFixed(s);
  }

  int64_t HeadroomAroundFixed(int s) const {
    const int64_t top = capacity_ - unplaced_bytes_[s];
    if (!kFixed || section_fixed_[s].empty()) return top;
    // From the highest gap down: above interval k, x + suffix <= top.
    const std::vector<std::pair<int64_t, int64_t>>& taken = section_fixed_[s];
    int64_t suffix = 0;
    for (size_t k = taken.size(); k-- > 0;) {
      if (top - suffix >= taken[k].second) {
        return k + 1 < taken.size() ? std::min(taken[k + 1].first, top - suffix) : top - suffix;
      }
      suffix += taken[k].second - taken[k].first;
    }
    return std::min(taken.front().first, top - suffix);  // below them all (negative: nowhere)
  }

  // Fixed buffers: each free buffer's co-live fixed ones (obstacles, by
  // offset) and each section's fixed bytes (merged intervals, by offset).
  // Free buffers start at their lowest offsets clear of them. False when
  // the deadline passed first.
  bool SetUpFixed(const std::vector<size_t>& pinned, int sections) {
    std::vector<size_t> all = open_;
    all.insert(all.end(), pinned.begin(), pinned.end());
    std::sort(all.begin(), all.end());
    const std::vector<std::vector<size_t>> co_live = OverlappingBuffers(buffers_, all);
    obstacles_.resize(buffers_.size());
    if (OutOfTime()) return false;
    for (size_t j : open_) {
      for (size_t f : co_live[j]) {
        if (offset_[f] >= 0) obstacles_[j].push_back({offset_[f], offset_[f] + buffers_[f].size});
      }
      std::sort(obstacles_[j].begin(), obstacles_[j].end());
      lowest_[j] = ClearOfFixed(j, 0);
    }
    if (OutOfTime()) return false;
    section_fixed_.resize(sections);
    for (size_t f : pinned) {
      for (int s = span_[f].first; s < span_[f].second; ++s) {
        section_fixed_[s].push_back({offset_[f], offset_[f] + buffers_[f].size});
      }
    }
    for (auto& taken : section_fixed_) {
      std::sort(taken.begin(), taken.end());
      size_t merged = 0;
      for (size_t k = 0; k < taken.size(); ++k) {
        if (merged > 0 && taken[k].first <= taken[merged - 1].second) {
          taken[merged - 1].second = std::max(taken[merged - 1].second, taken[k].second);
        } else {
          taken[merged++] = taken[k];
        }
      }
      taken.resize(merged);
    }
    fixed_bytes_.assign(sections, 0);
    band_bytes_.resize(sections);
    band_room_.resize(sections);
    // Each band starts with the bytes of the section's free buffers whose
    // lowest offsets are at or above its top: one sweep per section down
    // the tops (MoveInBands per buffer would cost its span times the bands).
    std::vector<std::pair<int64_t, int64_t>> lowest;  // (lowest offset, bytes) of a section's free buffers
    for (int s = 0; s < sections; ++s) {
      if ((s & 255) == 0 && OutOfTime()) return false;
      const std::vector<std::pair<int64_t, int64_t>>& taken = section_fixed_[s];
      band_bytes_[s].assign(taken.size(), 0);
      band_room_[s].assign(taken.size(), 0);
      lowest.clear();
      if (!taken.empty()) {
        for (size_t j : section_buffers_[s]) lowest.push_back({lowest_[j], buffers_[j].size});
        std::sort(lowest.begin(), lowest.end());
      }
      int64_t above = 0, bytes = 0;
      size_t next = lowest.size();  // lowest[next..] are at or above the current top
      for (size_t k = taken.size(); k-- > 0;) {
        band_room_[s][k] = capacity_ - taken[k].second - above;
        above += taken[k].second - taken[k].first;
        while (next > 0 && lowest[next - 1].first >= taken[k].second) bytes += lowest[--next].second;
        band_bytes_[s][k] = bytes;
        if (bytes > band_room_[s][k]) ++band_overflows_;
      }
      fixed_bytes_[s] = above;
    }
    // The tops first: MoveInBands skips the moves that cross none.
    for (const auto& taken : section_fixed_) {
      for (const auto& interval : taken) fixed_tops_.push_back(interval.second);
    }
    std::sort(fixed_tops_.begin(), fixed_tops_.end());
    fixed_tops_.erase(std::unique(fixed_tops_.begin(), fixed_tops_.end()), fixed_tops_.end());
    return true;
  }

  // Moves buffer j, in the bands of its sections, from `from` to `to` (its
  // lowest offset while unplaced, its offset once placed; -1: not counted):
  // each band holds the bytes of a section's buffers that lie above the top
  // of a fixed interval there, which must fit in the room above that top
  // less the fixed bytes higher up; band_overflows_ counts the bands that
  // do not. Only the tops between `from` and `to` change, and most moves
  // cross none (fixed_tops_ says).
  void MoveInBands(size_t j, int64_t from, int64_t to) {
    const int64_t low = std::min(from, to), high = std::max(from, to);
    const auto next_top = std::upper_bound(fixed_tops_.begin(), fixed_tops_.end(), low);
    if (!fixed_tops_.empty() && (next_top == fixed_tops_.end() || *next_top > high)) return;
    const int64_t bytes = to > from ? buffers_[j].size : -buffers_[j].size;
    work_ += span_[j].second - span_[j].first;
    for (int s = span_[j].first; s < span_[j].second; ++s) {
      const std::vector<std::pair<int64_t, int64_t>>& taken = section_fixed_[s];
      for (size_t k = 0; k < taken.size() && taken[k].second <= high; ++k) {
        ++work_;
        if (taken[k].second <= low) continue;
        const bool over = band_bytes_[s][k] > band_room_[s][k];
        band_bytes_[s][k] += bytes;
        band_overflows_ += static_cast<int>(band_bytes_[s][k] > band_room_[s][k]) - static_cast<int>(over);
      }
    }
  }

  // The lowest aligned offset at or above `from` where buffer j meets none
  // of its fixed neighbours.
  int64_t ClearOfFixed(size_t j, int64_t from) const {
    int64_t at = AlignUp(from, alignment_);
    for (const auto& [start, end] : obstacles_[j]) {
      if (end <= at) continue;
      if (start >= at + buffers_[j].size) break;
      at = AlignUp(end, alignment_);
    }
    return at;
  }

  // Some unplaced buffer of section s whose lowest offset is within its
  // headroom, or kNone.
  void FindWitness(int s) {
    const int64_t headroom = Headroom(s);
    size_t found = kNone;
    for (size_t k : section_buffers_[s]) {
      if (offset_[k] < 0 && lowest_[k] <= headroom) {
        found = k;
        break;
      }
    }
    if (found != witness_[s]) SetWitness(s, found);
  }

  void SetWitness(int s, size_t buffer) {
    witness_trail_.push_back({s, witness_[s]});
    witness_[s] = buffer;
  }

  // Section s cannot be completed when later placements start at `at`:
  // its unplaced buffers all start at their lowest offsets or above, and
  // at `at` or above, and together need more than the room from there up.
  // (Every unplaced buffer of s also starts above every placed one there.)
  bool SectionFails(int s, int64_t at) const {
    return unplaced_bytes_[s] > 0 && (at > Headroom(s) || witness_[s] == kNone);
  }

  // True once the search has given up (node cap, deadline, cancel): every
  // open node then unwinds at once. The clock is read every 64 steps (a
  // node or a candidate tried), not every 256 nodes: one node can place
  // hundreds of buffers (a Concat's slices) per candidate, and 256 of them
  // ran for seconds past the deadline (fuzz_graph_structure).
  // Around fixed buffers one step can also move hundreds of neighbours
  // through thousands of bands, or check thousands of sections: the clock
  // is read as well once work_ (the buffers, bands and sections visited
  // since) reaches kWorkPerClockRead.
  bool GivingUp() {
    if (!gave_up_ && ((++steps_ & 63) == 0 || work_ >= kWorkPerClockRead)) {
      work_ = 0;
      if (OutOfTime()) gave_up_ = true;
    }
    return gave_up_;
  }

  bool OutOfTime() const {
    return (cancel_ != nullptr && cancel_->load(std::memory_order_relaxed)) ||
           std::chrono::steady_clock::now() >= deadline_;
  }

  // Buffer `i` is unplaced, free (not anchored) and its group lives in
  // sections [lo, hi).
  bool Candidate(size_t i, int lo, int hi) const {
    return offset_[i] < 0 && buffers_[i].anchor < 0 && group_span_[i].second > lo && group_span_[i].first < hi;
  }

  // The lowest offset buffer `i` (with its group) can take: aligned, and
  // every member at or above its own lowest offset.
  int64_t LowestOf(size_t i) const {
    if (members_[i].empty()) return lowest_[i];
    int64_t at = lowest_[i];
    for (size_t m : members_[i]) at = std::max(at, lowest_[m] - buffers_[m].offset_from_anchor);
    return AlignUp(at, alignment_);
  }

  // True when no unplaced buffer outside its group overlaps buffer `i` or a
  // member of its group.
  bool GroupHatless(size_t i) const {
    auto outside = [&](size_t j) { return j != i && buffers_[j].anchor != static_cast<int32_t>(i); };
    for (size_t j : overlaps_[i]) {
      if (offset_[j] < 0 && outside(j)) return false;
    }
    for (size_t m : members_[i]) {
      for (size_t j : overlaps_[m]) {
        if (offset_[j] < 0 && outside(j)) return false;
      }
    }
    return true;
  }

  // True when no unplaced buffer overlaps buffer `i`.
  bool Hatless(size_t i) const {
    for (size_t j : overlaps_[i]) {
      if (offset_[j] < 0) return false;
    }
    return true;
  }

  // The first and last section in [lo, hi) that fails at `at` (*last = -1
  // when none).
  void FailingSections(int lo, int hi, int64_t at, int* first, int* last) const {
    *first = 0;
    *last = -1;
    for (int s = lo; s < hi; ++s) {
      if (!SectionFails(s, at)) continue;
      if (*last < 0) *first = s;
      *last = s;
    }
  }

  bool SectionsFit(int lo, int hi, int64_t at) const {
    if (kFixed && band_overflows_ > 0) return false;
    for (int s = lo; s < hi; ++s) {
      if (SectionFails(s, at)) return false;
    }
    return true;
  }

  absl::Span<const ArenaBuffer> buffers_;
  const int64_t alignment_;
  const int64_t capacity_;
  const int64_t max_nodes_;
  const std::chrono::steady_clock::time_point deadline_;
  const std::atomic<bool>* const cancel_;
  const bool shuffle_;
  std::mt19937_64 random_;  // the same sequence on every platform
  std::vector<std::pair<int, int>> span_;
  std::vector<std::vector<size_t>> overlaps_;
  std::vector<size_t> open_;  // buffers of non-zero size
  OffsetRank rank_order_ = OffsetRank::kWidthAreaTotal;
  std::vector<int64_t> rank_;
  std::vector<int64_t> offset_;  // -1 while unplaced
  std::vector<int64_t> lowest_;  // lowest offset an unplaced buffer can take
  std::vector<int64_t> unplaced_bytes_;
  // Per section s: unplaced buffers live in both s and s + 1.
  std::vector<int32_t> crossing_;
  // Per section: its buffers of non-zero size, and a witness: an unplaced
  // one whose lowest offset is within its headroom, or kNone (kept up to
  // date by Place and Unplace through the trail).
  static constexpr size_t kNone = static_cast<size_t>(-1);
  std::vector<std::vector<size_t>> section_buffers_;
  std::vector<size_t> witness_;
  std::vector<std::pair<int, size_t>> witness_trail_;
  std::vector<size_t> witness_marks_;
  std::vector<int> stale_;  // Place's sections needing a new witness
  std::vector<std::pair<size_t, int64_t>> lowest_trail_;
  std::vector<int64_t> solution_;
  // Groups (see the constructor): members by anchor, each anchor's union
  // span and extent (its own size for a lone buffer).
  std::vector<std::vector<size_t>> members_;
  std::vector<std::pair<int, int>> group_span_;
  std::vector<int64_t> extent_;
  bool any_group_ = false;
  std::vector<size_t> member_marks_;
  // Fixed buffers (SetUpFixed, kFixed only).
  std::vector<std::vector<std::pair<int64_t, int64_t>>> obstacles_;
  std::vector<std::vector<std::pair<int64_t, int64_t>>> section_fixed_;
  int64_t fixed_end_ = 0;
  std::vector<int64_t> fixed_bytes_;  // per section
  std::vector<int64_t> headroom_;     // per section: HeadroomAroundFixed, kept current
  // Per section and fixed interval (SetUpFixed): the bytes above its top
  // (MoveInBands) and the room there.
  std::vector<std::vector<int64_t>> band_bytes_;
  std::vector<std::vector<int64_t>> band_room_;
  int band_overflows_ = 0;
  std::vector<int64_t> fixed_tops_;  // every fixed interval's top, sorted, distinct
  // Explore's candidates, one list per depth (a deque: the lists stay put
  // as deeper ones are added).
  std::deque<std::vector<std::pair<int64_t, size_t>>> candidate_lists_;
  size_t depth_ = 0;
  struct DepthGuard {
    explicit DepthGuard(size_t* depth) : depth(depth) { ++*depth; }
    ~DepthGuard() { --*depth; }
    size_t* depth;
  };
  int64_t nodes_ = 0;
  int64_t steps_ = 0;
  int64_t work_ = 0;
  bool gave_up_ = false;
};

}  // namespace

std::tuple<double, double, double> OffsetRankKey(OffsetRank rank, double total, double width, double area) {
  switch (rank) {
    case OffsetRank::kTotalAreaWidth:
      return {total, area, width};
    case OffsetRank::kTotalWidthArea:
      return {total, width, area};
    case OffsetRank::kWidthAreaTotal:
      break;
  }
  return {width, area, total};
}

void ShuffleNeighbours(std::vector<size_t>* ranked, std::mt19937_64& random) {
  for (size_t r = 0; r + 1 < ranked->size(); ++r) {
    if (random() % 5 == 0) std::swap((*ranked)[r], (*ranked)[r + 1]);
  }
}

PackingResult PackByLowestOffsets(absl::Span<const ArenaBuffer> buffers, int64_t alignment, int64_t capacity,
                                  const OffsetSearchOptions& options, std::vector<int64_t>* offsets) {
  // Anchors as PlanArena accepts them, and never a zero-size anchor with
  // members (it would take no part in the search).
  for (size_t i = 0; i < buffers.size(); ++i) {
    const ArenaBuffer& b = buffers[i];
    if (b.anchor < 0) continue;
    if (!AnchorIsValid(buffers, i) || (buffers[static_cast<size_t>(b.anchor)].size == 0 && b.size > 0)) {
      return PackingResult::kGaveUp;
    }
  }
  OffsetSearch<false> search(buffers, {}, alignment, capacity, options);
  return search.Run(offsets);
}

PackingResult PackAroundFixed(absl::Span<const ArenaBuffer> buffers, absl::Span<const int64_t> fixed, int64_t alignment,
                              int64_t capacity, const OffsetSearchOptions& options, std::vector<int64_t>* offsets) {
  if (std::all_of(fixed.begin(), fixed.end(), [](int64_t f) { return f == -1; }) &&
      (fixed.empty() || fixed.size() == buffers.size())) {
    return PackByLowestOffsets(buffers, alignment, capacity, options, offsets);
  }
  if (fixed.size() != buffers.size()) return PackingResult::kGaveUp;
  for (size_t i = 0; i < buffers.size(); ++i) {
    if (buffers[i].anchor != -1 || fixed[i] < -1) return PackingResult::kGaveUp;
  }
  OffsetSearch<true> search(buffers, fixed, alignment, capacity, options);
  return search.Run(offsets);
}

}  // namespace serenity
