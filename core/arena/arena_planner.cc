#include "core/arena/arena_planner.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <set>

#include "absl/strings/str_cat.h"
#include "core/arena/offset_search.h"
#include "core/arena/skyline_search.h"

namespace serenity {
namespace {

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
    const int32_t anchor = buffers[i].anchor;
    if (anchor >= 0) {
      if (static_cast<size_t>(anchor) >= buffers.size() || buffers[anchor].anchor >= 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("buffer ", i, " is anchored to ", anchor, ", which is not a free buffer"));
      }
      if (buffers[i].offset_from_anchor < 0 || buffers[i].offset_from_anchor > kLimit) {
        return absl::InvalidArgumentError(absl::StrCat("buffer ", i, " has an offset from its anchor out of range"));
      }
      // The group's extent counts towards the total like a buffer.
      if ((total += buffers[i].offset_from_anchor) > kLimit) {
        return absl::OutOfRangeError("the buffers need more than 2^62 bytes in all once aligned");
      }
    } else if (anchor != -1) {
      return absl::InvalidArgumentError(absl::StrCat("buffer ", i, " has anchor ", anchor));
    }
  }
  return absl::OkStatus();
}

}  // namespace

TimeSections SplitIntoSections(absl::Span<const ArenaBuffer> buffers) {
  std::vector<int64_t> cuts;
  for (const ArenaBuffer& b : buffers) {
    cuts.push_back(b.first_step);
    cuts.push_back(int64_t{b.last_step} + 1);
  }
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  TimeSections sections;
  sections.count = cuts.empty() ? 0 : static_cast<int>(cuts.size()) - 1;
  for (const ArenaBuffer& b : buffers) {
    const auto at = [&](int64_t step) {
      return static_cast<int>(std::lower_bound(cuts.begin(), cuts.end(), step) - cuts.begin());
    };
    sections.spans.push_back({at(b.first_step), at(int64_t{b.last_step} + 1)});
  }
  return sections;
}

std::vector<std::vector<size_t>> OverlappingBuffers(absl::Span<const ArenaBuffer> buffers, std::vector<size_t> members,
                                                    int64_t max_pairs) {
  std::vector<std::vector<size_t>> overlapping(buffers.size());
  std::sort(members.begin(), members.end(),
            [&](size_t a, size_t b) { return buffers[a].first_step < buffers[b].first_step; });
  std::vector<size_t> active;
  int64_t pairs = 0;
  for (size_t i : members) {
    active.erase(std::remove_if(active.begin(), active.end(),
                                [&](size_t j) { return buffers[j].last_step < buffers[i].first_step; }),
                 active.end());
    pairs += static_cast<int64_t>(active.size());
    if (pairs > max_pairs) return {};
    for (size_t j : active) {
      overlapping[i].push_back(j);
      overlapping[j].push_back(i);
    }
    active.push_back(i);
  }
  return overlapping;
}

int64_t CountCoLivePairs(absl::Span<const ArenaBuffer> buffers) {
  // Buffer i (by first step) shares a step with every buffer before it but
  // those that ended before it started.
  std::vector<int32_t> firsts, lasts;
  firsts.reserve(buffers.size());
  lasts.reserve(buffers.size());
  for (const ArenaBuffer& b : buffers) {
    firsts.push_back(b.first_step);
    lasts.push_back(b.last_step);
  }
  std::sort(firsts.begin(), firsts.end());
  std::sort(lasts.begin(), lasts.end());
  int64_t pairs = 0;
  for (size_t rank = 0; rank < firsts.size(); ++rank) {
    const int64_t ended = std::lower_bound(lasts.begin(), lasts.end(), firsts[rank]) - lasts.begin();
    pairs += static_cast<int64_t>(rank) - ended;
  }
  return pairs;
}

namespace {

// Most co-live pairs CoLiveBuffers lists (64 MB of lists): an instance with
// more (thousands of buffers all live at once) is placed by scanning every
// placed buffer instead, slower but in linear memory.
constexpr int64_t kMaxCoLivePairs = 4'000'000;

// Estimated costs of PlaceInOrder per placement, with n buffers and p
// co-live pairs, rounded up: scanning the placed buffers costs per n^2,
// listing (building the lists and sorting each buffer's neighbours) per
// pair, about kListToScanCost times as much (the two estimates below are
// each rounded up on their own). So the scan is taken where
// n^2 < kListToScanCost p, or where the pairs are too many to list. The rounding up keeps the plan's
// arena phase from starting a scan of tens of thousands of buffers that
// would not finish in its time.
constexpr double kScanSecondsPerVisit = 2.5e-9;  // times n^2
constexpr double kListSecondsPerPair = 4.5e-8;
constexpr double kListToScanCost = 30;
constexpr double kSecondsPerBuffer = 3e-7;

// Bytes the lists of CoLiveBuffers take, roughly.
int64_t CoLiveListBytes(size_t n, int64_t pairs) { return 2 * pairs * 8 + static_cast<int64_t>(n) * 24; }

// Whether PlaceInOrder should scan every placed buffer instead of listing
// the co-live pairs.
bool ScanPlacedBuffers(size_t n, int64_t pairs) {
  const double buffers = static_cast<double>(n);
  return pairs > kMaxCoLivePairs || buffers * buffers < kListToScanCost * static_cast<double>(pairs);
}

double PlacementSeconds(size_t n, int64_t pairs) {
  const double buffers = static_cast<double>(n);
  if (ScanPlacedBuffers(n, pairs)) return kScanSecondsPerVisit * buffers * buffers + kSecondsPerBuffer * buffers;
  return kListSecondsPerPair * static_cast<double>(pairs) + kSecondsPerBuffer * buffers;
}

}  // namespace

double EstimatePlacementSeconds(absl::Span<const ArenaBuffer> buffers) {
  return PlacementSeconds(buffers.size(), CountCoLivePairs(buffers));
}

PlacementEstimate EstimatePlacement(absl::Span<const ArenaBuffer> buffers) {
  const int64_t pairs = CountCoLivePairs(buffers);
  return {PlacementSeconds(buffers.size(), pairs),
          ScanPlacedBuffers(buffers.size(), pairs) ? 0 : CoLiveListBytes(buffers.size(), pairs)};
}

std::vector<std::vector<size_t>> AnchoredBuffers(absl::Span<const ArenaBuffer> buffers) {
  std::vector<std::vector<size_t>> members(buffers.size());
  for (size_t i = 0; i < buffers.size(); ++i) {
    const int32_t anchor = buffers[i].anchor;
    if (anchor >= 0 && static_cast<size_t>(anchor) < buffers.size()) members[static_cast<size_t>(anchor)].push_back(i);
  }
  for (std::vector<size_t>& group : members) {
    std::stable_sort(group.begin(), group.end(),
                     [&](size_t a, size_t b) { return buffers[a].offset_from_anchor < buffers[b].offset_from_anchor; });
  }
  return members;
}

int64_t ArenaLowerBound(absl::Span<const ArenaBuffer> buffers) {
  // (step, change) sorted by step: a sort, not a map (10^6 buffers: ~0.1 s
  // instead of ~1.4 s).
  std::vector<std::pair<int64_t, int64_t>> delta;
  delta.reserve(2 * buffers.size());
  for (const ArenaBuffer& b : buffers) {
    delta.push_back({b.first_step, b.size});
    delta.push_back({int64_t{b.last_step} + 1, -b.size});
  }
  std::sort(delta.begin(), delta.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  int64_t live = 0, bound = 0;
  for (size_t k = 0; k < delta.size();) {
    const int64_t step = delta[k].first;
    for (; k < delta.size() && delta[k].first == step; ++k) live += delta[k].second;
    bound = std::max(bound, live);
  }
  return bound;
}

int64_t AlignedArenaLowerBound(absl::Span<const ArenaBuffer> buffers, int64_t alignment) {
  const bool anchored = std::any_of(buffers.begin(), buffers.end(), [](const ArenaBuffer& b) { return b.anchor >= 0; });
  if (alignment <= 1 || anchored) return ArenaLowerBound(buffers);
  // Per step: the aligned sizes of the live buffers, less the largest
  // padding (the top buffer's). Starts before ends at the same step.
  std::vector<std::pair<int64_t, const ArenaBuffer*>> events;  // (2 * step + [0 start, 1 end]), buffer
  for (const ArenaBuffer& b : buffers) {
    if (b.size <= 0) continue;
    events.push_back({2 * int64_t{b.first_step}, &b});
    events.push_back({2 * int64_t{b.last_step} + 3, &b});  // gone from step last_step + 1
  }
  std::sort(events.begin(), events.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::multiset<int64_t> padding;
  int64_t aligned = 0, bound = 0;
  for (size_t k = 0; k < events.size();) {
    const int64_t at = events[k].first & ~int64_t{1};  // the step's starts and ends together
    for (; k < events.size() && (events[k].first & ~int64_t{1}) == at; ++k) {
      const ArenaBuffer& b = *events[k].second;
      const int64_t rounded = AlignUp(b.size, alignment);
      if (events[k].first % 2 == 0) {
        aligned += rounded;
        padding.insert(rounded - b.size);
      } else {
        aligned -= rounded;
        padding.erase(padding.find(rounded - b.size));
      }
    }
    if (!padding.empty()) bound = std::max(bound, aligned - *padding.rbegin());
  }
  return bound;
}

namespace {

enum class Fit { kBest, kFirst };

// Members of each anchor's group, the anchor first; empty for anchored and
// lone buffers.
std::vector<std::vector<size_t>> AnchorGroups(absl::Span<const ArenaBuffer> buffers) {
  std::vector<std::vector<size_t>> groups = AnchoredBuffers(buffers);
  for (size_t i = 0; i < groups.size(); ++i) {
    if (!groups[i].empty()) groups[i].insert(groups[i].begin(), i);
  }
  return groups;
}

bool CoLive(const ArenaBuffer& a, const ArenaBuffer& b) {
  return a.size > 0 && b.size > 0 && a.first_step <= b.last_step && b.first_step <= a.last_step;
}

// The lowest aligned base at which every member of `group` (offset from the
// base: offset_from_anchor, 0 for the anchor) avoids the placed buffers it
// shares a step with. Candidates: 0 and every base that puts a member right
// above a placed buffer.
// `neighbors`: the placed buffers that share a step with a member.
int64_t LowestGroupBase(absl::Span<const ArenaBuffer> buffers, const std::vector<size_t>& group,
                        const std::vector<size_t>& neighbors, const std::vector<int64_t>& offsets, int64_t alignment) {
  auto rel = [&](size_t m) { return buffers[m].anchor < 0 ? int64_t{0} : buffers[m].offset_from_anchor; };
  std::vector<int64_t> candidates = {0};
  for (size_t m : group) {
    for (size_t j : neighbors) {
      if (!CoLive(buffers[m], buffers[j])) continue;
      candidates.push_back(AlignUp(std::max<int64_t>(0, offsets[j] + buffers[j].size - rel(m)), alignment));
    }
  }
  std::sort(candidates.begin(), candidates.end());
  candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
  for (int64_t base : candidates) {
    bool fits = true;
    for (size_t m : group) {
      const int64_t at = base + rel(m);
      for (size_t j : neighbors) {
        if (CoLive(buffers[m], buffers[j]) && at < offsets[j] + buffers[j].size && offsets[j] < at + buffers[m].size) {
          fits = false;
          break;
        }
      }
      if (!fits) break;
    }
    if (fits) return base;
  }
  return candidates.back();  // above every placed buffer: never reached
}

// For each buffer, the others it shares a step with.
std::vector<std::vector<size_t>> CoLiveBuffers(absl::Span<const ArenaBuffer> buffers) {
  std::vector<size_t> all(buffers.size());
  std::iota(all.begin(), all.end(), 0);
  return OverlappingBuffers(buffers, std::move(all));
}

// Places buffers one by one in `order`, each into a gap between the already
// placed buffers that share a step with it (the tightest gap for kBest, the
// lowest for kFirst) or above them all; an anchor's group goes in as one.
// Only the placed buffers that share a step with a buffer are looked at, in
// order of offset (a group's ties: the earlier placed first; a lone
// buffer's: by end, which changes no gap): from `colive`
// (CoLiveBuffers), or, when it is null (too many pairs to list), by scanning
// every placed buffer.
ArenaPlan PlaceInOrder(absl::Span<const ArenaBuffer> buffers, const std::vector<size_t>& order, int64_t alignment,
                       Fit fit, const std::vector<std::vector<size_t>>* lists) {
  ArenaPlan plan;
  plan.alignment = alignment;
  plan.offsets.assign(buffers.size(), 0);
  const bool scan_all = lists == nullptr;
  static const std::vector<std::vector<size_t>> kNone;
  const std::vector<std::vector<size_t>>& colive = scan_all ? kNone : *lists;
  std::vector<int64_t> placed_at(buffers.size(), -1);  // placement sequence number, -1: not yet
  int64_t placements = 0;
  // Kept only when scan_all: the placed buffers of nonzero size by offset,
  // then placement, and beside them their steps, which the scan reads (one
  // contiguous array, not each buffer through its index).
  std::vector<size_t> placed;
  std::vector<std::pair<int32_t, int32_t>> placed_steps;  // (first_step, last_step) of placed[k]
  auto by_offset = [&](size_t a, size_t c) {
    return plan.offsets[a] != plan.offsets[c] ? plan.offsets[a] < plan.offsets[c] : placed_at[a] < placed_at[c];
  };
  auto mark_placed = [&](size_t i) {
    plan.size_bytes = std::max(plan.size_bytes, plan.offsets[i] + buffers[i].size);
    placed_at[i] = placements++;
    if (scan_all && buffers[i].size > 0) {
      const auto at = std::upper_bound(placed.begin(), placed.end(), i, by_offset);
      placed_steps.insert(placed_steps.begin() + (at - placed.begin()), {buffers[i].first_step, buffers[i].last_step});
      placed.insert(at, i);
    }
  };
  // A group's neighbours: the placed buffers of nonzero size live at one of
  // its members' steps (a member may be of size zero: it still goes into a
  // gap between such buffers).
  std::vector<size_t> neighbors;
  auto gather_group_neighbors = [&](const std::vector<size_t>& members) {
    neighbors.clear();
    if (scan_all) {
      for (size_t k = 0; k < placed.size(); ++k) {
        const auto [first, last] = placed_steps[k];
        for (size_t m : members) {
          if (first <= buffers[m].last_step && buffers[m].first_step <= last) {
            neighbors.push_back(placed[k]);
            break;
          }
        }
      }
      return;
    }
    for (size_t m : members) {
      for (size_t j : colive[m]) {
        if (placed_at[j] >= 0 && buffers[j].size > 0) neighbors.push_back(j);
      }
    }
    std::sort(neighbors.begin(), neighbors.end(), by_offset);
    neighbors.erase(std::unique(neighbors.begin(), neighbors.end()), neighbors.end());
  };
  // A lone buffer's neighbours as (offset, end) spans in order of offset:
  // all a gap needs, sorted without looking each buffer up (the order of
  // equal offsets changes no gap).
  std::vector<std::pair<int64_t, int64_t>> spans;
  auto gather_spans = [&](size_t i) {
    spans.clear();
    const int32_t first = buffers[i].first_step, last = buffers[i].last_step;
    if (scan_all) {
      for (size_t k = 0; k < placed.size(); ++k) {
        if (placed_steps[k].first <= last && first <= placed_steps[k].second) {
          spans.push_back({plan.offsets[placed[k]], plan.offsets[placed[k]] + buffers[placed[k]].size});
        }
      }
      return;
    }
    for (size_t j : colive[i]) {
      if (placed_at[j] >= 0 && buffers[j].size > 0)
        spans.push_back({plan.offsets[j], plan.offsets[j] + buffers[j].size});
    }
    std::sort(spans.begin(), spans.end());
  };
  const std::vector<std::vector<size_t>> groups = AnchorGroups(buffers);
  std::vector<bool> done(buffers.size(), false);
  for (size_t i : order) {
    if (done[i]) continue;
    const ArenaBuffer& b = buffers[i];
    const size_t head = b.anchor >= 0 ? static_cast<size_t>(b.anchor) : i;
    if (!groups[head].empty()) {
      // A group goes in as a whole, when its first member comes up.
      gather_group_neighbors(groups[head]);
      const int64_t base = LowestGroupBase(buffers, groups[head], neighbors, plan.offsets, alignment);
      for (size_t m : groups[head]) {
        plan.offsets[m] = base + (buffers[m].anchor < 0 ? 0 : buffers[m].offset_from_anchor);
        done[m] = true;
        mark_placed(m);
      }
      continue;
    }
    done[i] = true;
    gather_spans(i);
    int64_t best_offset = -1, best_waste = 0, cursor = 0;
    for (const auto& [offset, end] : spans) {
      int64_t gap_start = AlignUp(cursor, alignment);
      if (offset - gap_start >= b.size) {
        int64_t waste = offset - gap_start - b.size;
        if (best_offset < 0 || (fit == Fit::kBest && waste < best_waste)) {
          best_offset = gap_start;
          best_waste = waste;
        }
        if (fit == Fit::kFirst) break;
      }
      cursor = std::max(cursor, end);
    }
    if (best_offset < 0) best_offset = AlignUp(cursor, alignment);
    plan.offsets[i] = best_offset;
    mark_placed(i);
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

absl::Status ValidateArenaBuffers(absl::Span<const ArenaBuffer> buffers, int64_t alignment) {
  if (alignment < 1) return absl::InvalidArgumentError("alignment must be at least 1");
  return CheckBuffers(buffers, alignment);
}

absl::StatusOr<ArenaPlan> PlanArenaGreedyBySize(absl::Span<const ArenaBuffer> buffers, int64_t alignment) {
  if (alignment < 1) return absl::InvalidArgumentError("alignment must be at least 1");
  absl::Status valid = CheckBuffers(buffers, alignment);
  if (!valid.ok()) return valid;
  std::vector<size_t> by_size = SortedBy(buffers.size(), [&](size_t a, size_t b) {
    if (buffers[a].size != buffers[b].size) return buffers[a].size > buffers[b].size;
    return buffers[a].first_step < buffers[b].first_step;
  });
  if (ScanPlacedBuffers(buffers.size(), CountCoLivePairs(buffers))) {
    return PlaceInOrder(buffers, by_size, alignment, Fit::kBest, nullptr);
  }
  const std::vector<std::vector<size_t>> colive = CoLiveBuffers(buffers);
  return PlaceInOrder(buffers, by_size, alignment, Fit::kBest, &colive);
}

std::vector<AnchoredBlock> AnchoredBlocks(absl::Span<const ArenaBuffer> buffers) {
  const std::vector<std::vector<size_t>> members = AnchoredBuffers(buffers);
  std::vector<AnchoredBlock> blocks;
  for (size_t i = 0; i < buffers.size(); ++i) {
    if (buffers[i].anchor >= 0) continue;
    AnchoredBlock block{i, buffers[i].size, buffers[i].first_step, buffers[i].last_step};
    for (size_t m : members[i]) {
      block.extent = std::max(block.extent, buffers[m].offset_from_anchor + buffers[m].size);
      block.first = std::min(block.first, buffers[m].first_step);
      block.last = std::max(block.last, buffers[m].last_step);
    }
    if (block.extent > 0) blocks.push_back(block);
  }
  return blocks;
}

absl::StatusOr<ArenaPlan> PlanArenaFast(absl::Span<const ArenaBuffer> buffers, int64_t alignment) {
  if (alignment < 1) return absl::InvalidArgumentError("alignment must be at least 1");
  absl::Status valid = CheckBuffers(buffers, alignment);
  if (!valid.ok()) return valid;
  const size_t n = buffers.size();
  ArenaPlan plan;
  plan.alignment = alignment;
  plan.offsets.assign(n, 0);
  const std::vector<std::vector<size_t>> members = AnchoredBuffers(buffers);
  const std::vector<AnchoredBlock> blocks = AnchoredBlocks(buffers);
  std::vector<size_t> by_start(blocks.size());
  std::iota(by_start.begin(), by_start.end(), 0);
  std::stable_sort(by_start.begin(), by_start.end(), [&](size_t a, size_t b) {
    if (blocks[a].first != blocks[b].first) return blocks[a].first < blocks[b].first;
    return blocks[a].extent > blocks[b].extent;
  });
  std::vector<size_t> by_end = by_start;
  std::stable_sort(by_end.begin(), by_end.end(), [&](size_t a, size_t b) { return blocks[a].last < blocks[b].last; });
  std::map<int64_t, int64_t> holes;               // start -> end, below `top`, merged
  std::set<std::pair<int64_t, int64_t>> by_room;  // (end - start, start)
  int64_t top = 0;
  std::vector<int64_t> at(blocks.size(), 0), taken(blocks.size(), 0);
  auto remove_hole = [&](std::map<int64_t, int64_t>::iterator it) {
    by_room.erase({it->second - it->first, it->first});
    return holes.erase(it);
  };
  auto give_back = [&](int64_t start, int64_t end) {
    auto next = holes.lower_bound(start);
    if (next != holes.end() && next->first == end) {
      end = next->second;
      next = remove_hole(next);
    }
    if (next != holes.begin()) {
      auto prev = std::prev(next);
      if (prev->second == start) {
        start = prev->first;
        remove_hole(prev);
      }
    }
    if (end >= top) {
      top = start;  // the hole under the top is no hole
      return;
    }
    holes[start] = end;
    by_room.insert({end - start, start});
  };
  size_t freed = 0;
  for (size_t k : by_start) {
    const AnchoredBlock& b = blocks[k];
    for (; freed < by_end.size() && blocks[by_end[freed]].last < b.first; ++freed) {
      const size_t f = by_end[freed];
      give_back(at[f], at[f] + taken[f]);
    }
    // Every block takes whole alignment units, so holes start aligned.
    const int64_t need = AlignUp(b.extent, alignment);
    taken[k] = need;
    auto fit = by_room.lower_bound({need, INT64_MIN});
    if (fit == by_room.end()) {
      at[k] = top;
      top += need;
    } else {
      const int64_t start = fit->second, end = start + fit->first;
      remove_hole(holes.find(start));
      at[k] = start;
      if (start + need < end) {
        holes[start + need] = end;
        by_room.insert({end - start - need, start + need});
      }
    }
    plan.offsets[b.head] = at[k];
    plan.size_bytes = std::max(plan.size_bytes, at[k] + b.extent);
    for (size_t m : members[b.head]) {
      plan.offsets[m] = at[k] + buffers[m].offset_from_anchor;
    }
  }
  return plan;
}

absl::StatusOr<ArenaPlan> PlanArena(absl::Span<const ArenaBuffer> buffers, int64_t alignment, int64_t skyline_nodes,
                                    const ArenaLimits& limits, ArenaCut* cut, std::optional<ArenaPlan>* by_size) {
  if (by_size != nullptr) by_size->reset();
  if (alignment < 1) return absl::InvalidArgumentError("alignment must be at least 1");
  absl::Status valid = CheckBuffers(buffers, alignment);
  if (!valid.ok()) return valid;
  const size_t n = buffers.size();
  ArenaCut ignored;
  if (cut == nullptr) cut = &ignored;
  *cut = ArenaCut();
  // Why work estimated to take `seconds` must not start ("" when it may).
  auto stop_reason = [&](double seconds) -> const char* {
    if (limits.cancelled != nullptr && limits.cancelled->load(std::memory_order_relaxed)) return "cancelled";
    if (limits.deadline == std::chrono::steady_clock::time_point::max()) return "";
    const auto now = std::chrono::steady_clock::now();
    if (now >= limits.deadline || std::chrono::duration<double>(limits.deadline - now).count() < seconds) {
      return "time_limit";
    }
    return "";
  };
  // Co-live lists, listed once for every placement when they cost less
  // than scanning and the account takes them; otherwise placements scan.
  const int64_t pairs = CountCoLivePairs(buffers);
  const double placement_seconds = PlacementSeconds(n, pairs);
  MemoryCharge lists_charge(limits.memory);
  std::vector<std::vector<size_t>> colive;
  bool listed = false;
  if (!ScanPlacedBuffers(n, pairs) && *stop_reason(placement_seconds) == '\0') {
    if (lists_charge.TryAdd(CoLiveListBytes(n, pairs))) {
      colive = CoLiveBuffers(buffers);
      listed = true;
    } else {
      cut->reason = "memory_limit";
    }
  }
  const double seconds_per_placement =
      listed ? placement_seconds : kScanSecondsPerVisit * static_cast<double>(n) * static_cast<double>(n);
  // When not even one placement fits the time, the fast one, before the
  // orders below are sorted (as the loop below would, after them).
  if (const char* stop = stop_reason(seconds_per_placement); *stop != '\0') {
    cut->reason = stop;
    cut->used = "fast greedy placement";
    return PlanArenaFast(buffers, alignment);
  }
  auto length = [&](size_t i) { return int64_t{buffers[i].last_step} - buffers[i].first_step + 1; };
  // The live bytes of each buffer's busiest step ("breadth"): a range
  // maximum over the steps where the live bytes change (a sparse table).
  std::vector<int64_t> breadth(n, 0);
  {
    std::map<int32_t, int64_t> delta;
    for (const ArenaBuffer& b : buffers) {
      delta[b.first_step] += b.size;
      delta[b.last_step + 1] -= b.size;
    }
    std::vector<int32_t> steps;                  // where the live bytes change
    std::vector<std::vector<int64_t>> table(1);  // table[k][j]: max of live over [j, j + 2^k)
    int64_t running = 0;
    for (const auto& [step, change] : delta) {
      steps.push_back(step);
      table[0].push_back(running += change);
    }
    for (size_t k = 1; (size_t{1} << k) <= steps.size(); ++k) {
      const size_t half = size_t{1} << (k - 1);
      std::vector<int64_t> row(steps.size() - (size_t{1} << k) + 1);
      for (size_t j = 0; j < row.size(); ++j) row[j] = std::max(table[k - 1][j], table[k - 1][j + half]);
      table.push_back(std::move(row));
    }
    for (size_t i = 0; i < n; ++i) {
      // From the last change at or before the first step to the last change
      // at or before the last step.
      const size_t lo =
          static_cast<size_t>(std::upper_bound(steps.begin(), steps.end(), buffers[i].first_step) - steps.begin()) - 1;
      const size_t hi = static_cast<size_t>(std::upper_bound(steps.begin(), steps.end(), buffers[i].last_step) -
                                            steps.begin());  // exclusive
      size_t k = 0;
      while ((size_t{2} << k) <= hi - lo) ++k;
      breadth[i] = std::max(table[k][lo], table[k][hi - (size_t{1} << k)]);
    }
  }
  std::vector<std::vector<size_t>> orders = {
      SortedBy(n,
               [&](size_t a, size_t b) {
                 if (buffers[a].size != buffers[b].size) return buffers[a].size > buffers[b].size;
                 return buffers[a].first_step < buffers[b].first_step;
               }),
      SortedBy(n,
               [&](size_t a, size_t b) {
                 if (breadth[a] != breadth[b]) return breadth[a] > breadth[b];
                 return buffers[a].size > buffers[b].size;
               }),
      SortedBy(n,
               [&](size_t a, size_t b) {
                 if (length(a) != length(b)) return length(a) > length(b);
                 return buffers[a].size > buffers[b].size;
               }),
      SortedBy(n,
               [&](size_t a, size_t b) {  // in double: the product may not fit 64 bits
                 return static_cast<double>(buffers[a].size) * static_cast<double>(length(a)) >
                        static_cast<double>(buffers[b].size) * static_cast<double>(length(b));
               }),
      SortedBy(n,
               [&](size_t a, size_t b) {
                 if (buffers[a].first_step != buffers[b].first_step)
                   return buffers[a].first_step < buffers[b].first_step;
                 return buffers[a].size > buffers[b].size;
               }),
  };
  // Slice groups are rigid: also try each order with them first.
  const bool anchored = std::any_of(buffers.begin(), buffers.end(), [](const ArenaBuffer& b) { return b.anchor >= 0; });
  if (anchored) {
    std::vector<bool> grouped(n, false);
    for (size_t i = 0; i < n; ++i) {
      if (buffers[i].anchor >= 0) grouped[i] = grouped[static_cast<size_t>(buffers[i].anchor)] = true;
    }
    const size_t plain = orders.size();
    for (size_t k = 0; k < plain; ++k) {
      std::vector<size_t> order = orders[k];
      std::stable_partition(order.begin(), order.end(), [&](size_t i) { return grouped[i]; });
      orders.push_back(std::move(order));
    }
  }
  const int64_t bound = AlignedArenaLowerBound(buffers, alignment);
  ArenaPlan best;
  bool have = false;
  for (const std::vector<size_t>& order : orders) {
    for (Fit fit : {Fit::kBest, Fit::kFirst}) {
      const char* stop = stop_reason(seconds_per_placement);
      if (*stop != '\0') {
        cut->reason = stop;
        if (!have) {
          cut->used = "fast greedy placement";
          return PlanArenaFast(buffers, alignment);
        }
        cut->used = "greedy placement";
        return best;
      }
      ArenaPlan plan = PlaceInOrder(buffers, order, alignment, fit, listed ? &colive : nullptr);
      // The first placement is PlanArenaGreedyBySize's: the same order (by
      // size, then first step, then index) and fit.
      if (!have && by_size != nullptr) *by_size = plan;
      if (!have || plan.size_bytes < best.size_bytes) {
        best = std::move(plan);
        have = true;
      }
      if (best.size_bytes <= bound) {
        *cut = ArenaCut();  // unlisted pairs were only slower to scan
        return best;
      }
    }
  }
  *cut = ArenaCut();
  if (skyline_nodes <= 0) return best;
  colive.clear();
  colive.shrink_to_fit();
  lists_charge.Reset();
  ArenaSearches searches;
  searches.offset_nodes = std::min(skyline_nodes, AtBoundOffsetNodes(n));
  searches.skyline_nodes = skyline_nodes;
  return SearchAtBound(buffers, alignment, std::move(best), searches, limits, cut);
}

ArenaPlan SearchAtBound(absl::Span<const ArenaBuffer> buffers, int64_t alignment, ArenaPlan plan,
                        const ArenaSearches& searches, const ArenaLimits& limits, ArenaCut* cut, bool* refuted) {
  ArenaCut ignored;
  if (cut == nullptr) cut = &ignored;
  const size_t n = buffers.size();
  const int64_t bound = AlignedArenaLowerBound(buffers, alignment);
  if (plan.size_bytes <= bound || (searches.offset_nodes <= 0 && searches.skyline_nodes <= 0)) return plan;
  const auto stop_reason = [&]() -> const char* {
    if (limits.cancelled != nullptr && limits.cancelled->load(std::memory_order_relaxed)) return "cancelled";
    if (std::chrono::steady_clock::now() >= limits.deadline) return "time_limit";
    return "";
  };
  // The searches' tables: every buffer's sections, and the co-live pairs.
  int64_t cells = 2 * CountCoLivePairs(buffers);
  {
    const TimeSections sections = SplitIntoSections(buffers);
    for (const auto& [first, end] : sections.spans) cells += end - first;
    cells += sections.count;
  }
  MemoryCharge search_charge(limits.memory);
  const char* stop = cells > kMaxArenaSearchCells                                          ? "size_limit"
                     : *stop_reason() != '\0'                                              ? stop_reason()
                     : !search_charge.TryAdd(2 * 8 * cells + 64 * static_cast<int64_t>(n)) ? "memory_limit"
                                                                                           : "";
  if (*stop != '\0') {
    cut->reason = stop;
    cut->used = "greedy placement";
    return plan;
  }
  // The searches by offsets go first: with their few nodes a failed one
  // ends in a few milliseconds, a failed skyline search of 10,000 nodes in
  // tens (bench/RESULTS.md, "Rewrite time: arena searches cheapest
  // first, ...").
  struct Attempt {
    bool by_offsets;
    OffsetRank rank;     // by offsets
    SkylineOrder order;  // by skylines
  };
  constexpr Attempt kAttempts[] = {
      // tried in this order
      {true, OffsetRank::kTotalWidthArea, SkylineOrder::kSizeFirst},
      {true, OffsetRank::kWidthAreaTotal, SkylineOrder::kSizeFirst},
      {true, OffsetRank::kTotalAreaWidth, SkylineOrder::kSizeFirst},
      {false, OffsetRank::kTotalWidthArea, SkylineOrder::kSizeFirst},
      {false, OffsetRank::kTotalWidthArea, SkylineOrder::kLifetimeFirst},
  };
  for (const Attempt& attempt : kAttempts) {
    if ((attempt.by_offsets ? searches.offset_nodes : searches.skyline_nodes) <= 0) continue;
    std::vector<int64_t> offsets;
    OffsetSearchOptions by_offsets;
    by_offsets.rank = attempt.rank;
    by_offsets.max_nodes = searches.offset_nodes;
    by_offsets.deadline = limits.deadline;
    by_offsets.cancel = limits.cancelled;
    const PackingResult result = attempt.by_offsets
                                     ? PackByLowestOffsets(buffers, alignment, bound, by_offsets, &offsets)
                                     : PackWithinCapacity(buffers, alignment, bound, searches.skyline_nodes,
                                                          attempt.order, &offsets, limits.deadline);
    if (result == PackingResult::kPacked) {
      plan.offsets = std::move(offsets);
      plan.size_bytes = 0;
      for (size_t i = 0; i < n; ++i) plan.size_bytes = std::max(plan.size_bytes, plan.offsets[i] + buffers[i].size);
    }
    if (result == PackingResult::kImpossible && refuted != nullptr) *refuted = true;
    if (result != PackingResult::kGaveUp) break;  // kImpossible: nothing packs at the bound
    const char* stopped = stop_reason();
    if (*stopped != '\0') {
      cut->reason = stopped;
      cut->used = "greedy placement";
      break;
    }
  }
  return plan;
}

}  // namespace serenity
