#include "core/arena/defragment.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <set>

#include "absl/strings/str_cat.h"
#include "core/util/status_macros.h"

namespace serenity {
namespace {

struct Placed {
  int buffer;
  int64_t offset;
};

// The best-fit aligned offset for `size` below `capacity` among `live`
// (sorted by offset), or -1.
int64_t BestFit(const std::vector<Placed>& live, absl::Span<const ArenaBuffer> buffers, int64_t size, int64_t alignment,
                int64_t capacity) {
  int64_t best = -1, best_gap = INT64_MAX, cursor = 0;
  auto consider = [&](int64_t hole_end) {
    const int64_t start = AlignUp(cursor, alignment);
    if (start + size <= hole_end && hole_end - start < best_gap) {
      best = start;
      best_gap = hole_end - start;
    }
  };
  for (const Placed& p : live) {
    consider(p.offset);
    cursor = std::max(cursor, p.offset + buffers[p.buffer].size);
  }
  consider(capacity);
  return best;
}

// The best-fit aligned offset for `size` below `capacity` among occupied
// [begin, end) ranges sorted by begin, or -1.
int64_t BestFitRanges(const std::vector<std::pair<int64_t, int64_t>>& occupied, int64_t size, int64_t alignment,
                      int64_t capacity) {
  int64_t best = -1, best_gap = INT64_MAX, cursor = 0;
  auto consider = [&](int64_t hole_end) {
    const int64_t start = AlignUp(cursor, alignment);
    if (start + size <= hole_end && hole_end - start < best_gap) {
      best = start;
      best_gap = hole_end - start;
    }
  };
  for (const auto& [begin, end] : occupied) {
    consider(begin);
    cursor = std::max(cursor, end);
  }
  consider(capacity);
  return best;
}

// Makes room for `size` bytes by moving few bytes: for each aligned window
// [x, x + size) starting at 0 or where a live buffer ends, the carried-over
// buffers it overlaps must go to holes outside both the window and every
// old range (so the moves can run in any order). The cheapest windows are
// tried first. Returns the window's start and appends the moves, or -1.
int64_t MakeRoom(std::vector<Placed>& live, absl::Span<const ArenaBuffer> buffers, int64_t size, int64_t alignment,
                 int64_t capacity, int32_t step, std::vector<ArenaMove>* moves) {
  std::vector<int64_t> starts = {0};
  for (const Placed& p : live) starts.push_back(AlignUp(p.offset + buffers[p.buffer].size, alignment));
  std::vector<std::pair<int64_t, int64_t>> windows;  // (cost, start)
  for (int64_t x : starts) {
    if (x + size > capacity) continue;
    int64_t cost = 0;
    bool blocked = false;
    for (const Placed& p : live) {
      if (p.offset < x + size && x < p.offset + buffers[p.buffer].size && buffers[p.buffer].size > 0) {
        blocked = blocked || buffers[p.buffer].first_step == step;
        cost += buffers[p.buffer].size;
      }
    }
    if (!blocked) windows.push_back({cost, x});
  }
  std::sort(windows.begin(), windows.end());
  windows.erase(std::unique(windows.begin(), windows.end()), windows.end());
  constexpr size_t kWindowsTried = 16;
  for (size_t w = 0; w < windows.size() && w < kWindowsTried; ++w) {
    const int64_t x = windows[w].second;
    std::vector<std::pair<int64_t, int64_t>> occupied = {{x, x + size}};
    std::vector<Placed> movers;
    for (const Placed& p : live) {
      const int64_t end = p.offset + buffers[p.buffer].size;
      occupied.push_back({p.offset, end});  // movers' old ranges stay reserved too
      if (p.offset < x + size && x < end && buffers[p.buffer].size > 0) movers.push_back(p);
    }
    std::sort(movers.begin(), movers.end(), [&](const Placed& a, const Placed& b) {
      return std::make_pair(-buffers[a.buffer].size, a.buffer) < std::make_pair(-buffers[b.buffer].size, b.buffer);
    });
    std::vector<std::pair<int, int64_t>> destinations;
    bool all_fit = true;
    for (const Placed& m : movers) {
      std::sort(occupied.begin(), occupied.end());
      const int64_t to = BestFitRanges(occupied, buffers[m.buffer].size, alignment, capacity);
      if (to < 0) {
        all_fit = false;
        break;
      }
      occupied.push_back({to, to + buffers[m.buffer].size});
      destinations.push_back({m.buffer, to});
    }
    if (!all_fit) continue;
    for (const auto& [buffer, to] : destinations) {
      for (Placed& p : live) {
        if (p.buffer != buffer) continue;
        moves->push_back({buffer, step, p.offset, to, buffers[buffer].size});
        p.offset = to;
      }
    }
    std::sort(live.begin(), live.end(), [](const Placed& a, const Placed& b) { return a.offset < b.offset; });
    return x;
  }
  return -1;
}

// PlanArenaWithMoves for buffers without anchors.
absl::StatusOr<MovingArenaPlan> PlanFreeBuffersWithMoves(absl::Span<const ArenaBuffer> buffers, int64_t alignment,
                                                         int64_t capacity) {
  if (alignment < 1) return absl::InvalidArgumentError("alignment must be at least 1");
  for (const ArenaBuffer& b : buffers) {
    if (b.size < 0 || b.last_step < b.first_step || b.first_step < 0) {
      return absl::InvalidArgumentError("a buffer has a negative size or an empty lifetime");
    }
    if (b.size > capacity) {
      return absl::FailedPreconditionError(absl::StrCat("a buffer of ", b.size, " bytes exceeds the capacity"));
    }
  }
  MovingArenaPlan result;
  result.plan.alignment = alignment;
  result.plan.offsets.assign(buffers.size(), 0);
  // Only steps where buffers start change anything.
  std::map<int32_t, std::vector<int>> starting;
  for (size_t i = 0; i < buffers.size(); ++i) {
    if (buffers[i].size > 0) starting[buffers[i].first_step].push_back(static_cast<int>(i));
  }
  std::vector<Placed> live;  // sorted by offset
  std::vector<int64_t> current(buffers.size(), 0);
  for (auto& [first_step, fresh] : starting) {
    const int32_t step = first_step;  // lambdas cannot capture a structured binding in C++17
    live.erase(
        std::remove_if(live.begin(), live.end(), [&](const Placed& p) { return buffers[p.buffer].last_step < step; }),
        live.end());
    std::sort(fresh.begin(), fresh.end(),
              [&](int a, int b) { return std::make_pair(-buffers[a].size, a) < std::make_pair(-buffers[b].size, b); });
    auto insert = [&](int buffer, int64_t offset) {
      current[buffer] = offset;
      Placed p{buffer, offset};
      live.insert(std::upper_bound(live.begin(), live.end(), p,
                                   [](const Placed& x, const Placed& y) { return x.offset < y.offset; }),
                  p);
    };
    bool compacted = false;
    for (size_t k = 0; k < fresh.size(); ++k) {
      const int buffer = fresh[k];
      int64_t offset = BestFit(live, buffers, buffers[buffer].size, alignment, capacity);
      if (offset < 0) {
        const size_t before = result.moves.size();
        offset = MakeRoom(live, buffers, buffers[buffer].size, alignment, capacity, step, &result.moves);
        for (size_t m = before; m < result.moves.size(); ++m) {
          current[result.moves[m].buffer] = result.moves[m].to_offset;
          result.moved_bytes += result.moves[m].bytes;
        }
      }
      if (offset < 0 && !compacted) {
        // Slide every carried-over buffer down, in address order; the new
        // ones of this step are placed again above them.
        compacted = true;
        std::vector<Placed> kept;
        int64_t top = 0;
        for (const Placed& p : live) {
          if (buffers[p.buffer].first_step == step) continue;  // not written yet: no move
          const int64_t to = AlignUp(top, alignment);
          if (to != p.offset) {
            result.moves.push_back({p.buffer, step, p.offset, to, buffers[p.buffer].size});
            result.moved_bytes += buffers[p.buffer].size;
          }
          kept.push_back({p.buffer, to});
          current[p.buffer] = to;
          top = to + buffers[p.buffer].size;
        }
        live = std::move(kept);
        for (size_t j = 0; j < k; ++j) {
          const int64_t again = BestFit(live, buffers, buffers[fresh[j]].size, alignment, capacity);
          if (again < 0) break;
          insert(fresh[j], again);
          result.plan.offsets[fresh[j]] = again;
        }
        offset = BestFit(live, buffers, buffers[buffer].size, alignment, capacity);
        // Any new buffer that no longer fits makes the step impossible.
        size_t placed_new = 0;
        for (const Placed& p : live) placed_new += buffers[p.buffer].first_step == step ? 1 : 0;
        if (placed_new < k) offset = -1;
      }
      if (offset < 0) {
        int64_t live_bytes = 0;
        for (const ArenaBuffer& b : buffers) {
          if (b.first_step <= step && step <= b.last_step) live_bytes += AlignUp(b.size, alignment);
        }
        const int32_t at_step = step;
        return absl::FailedPreconditionError(absl::StrCat("step ", at_step, " needs ", live_bytes,
                                                          " aligned bytes at once; ", capacity, " cannot hold them"));
      }
      insert(buffer, offset);
      result.plan.offsets[buffer] = offset;
    }
    for (const Placed& p : live) {
      result.plan.size_bytes = std::max(result.plan.size_bytes, p.offset + buffers[p.buffer].size);
    }
  }
  return result;
}

}  // namespace

absl::StatusOr<MovingArenaPlan> PlanArenaWithMoves(absl::Span<const ArenaBuffer> buffers, int64_t alignment,
                                                   int64_t capacity) {
  bool anchored = false;
  for (size_t i = 0; i < buffers.size(); ++i) {
    if (buffers[i].anchor < 0) continue;
    if (!AnchorIsValid(buffers, i)) return absl::InvalidArgumentError(absl::StrCat("buffer ", i, " has a bad anchor"));
    anchored = true;
  }
  if (!anchored) return PlanFreeBuffersWithMoves(buffers, alignment, capacity);
  const std::vector<std::vector<size_t>> members = AnchoredBuffers(buffers);

  // A group (an anchor and its anchored buffers) moves as one: plan each as
  // a single buffer spanning the group's bytes over the union of the
  // members' lifetimes, then give every member its share.
  auto rel = [&](size_t i) { return buffers[i].anchor < 0 ? int64_t{0} : buffers[i].offset_from_anchor; };
  std::vector<ArenaBuffer> merged;
  std::vector<std::vector<size_t>> parts;  // merged index -> buffers, lowest offset first
  for (size_t i = 0; i < buffers.size(); ++i) {
    if (buffers[i].anchor >= 0) continue;
    std::vector<size_t> group = {i};  // the anchor (offset 0), then its members lowest first
    group.insert(group.end(), members[i].begin(), members[i].end());
    ArenaBuffer whole = buffers[i];
    for (size_t m : group) {
      if (rel(m) > INT64_MAX / 2 - buffers[m].size) return absl::OutOfRangeError("a group spans too many bytes");
      whole.size = std::max(whole.size, rel(m) + buffers[m].size);
      whole.first_step = std::min(whole.first_step, buffers[m].first_step);
      whole.last_step = std::max(whole.last_step, buffers[m].last_step);
    }
    merged.push_back(whole);
    parts.push_back(std::move(group));
  }
  ASSIGN_OR_RETURN(MovingArenaPlan whole, PlanFreeBuffersWithMoves(merged, alignment, capacity));

  MovingArenaPlan result;
  result.plan.alignment = alignment;
  result.plan.size_bytes = whole.plan.size_bytes;
  result.plan.offsets.assign(buffers.size(), 0);
  for (size_t k = 0; k < merged.size(); ++k) {
    // Where the group is when each member starts: after the moves before
    // or at that step.
    for (size_t m : parts[k]) {
      int64_t at = whole.plan.offsets[k];
      for (const ArenaMove& move : whole.moves) {
        if (move.buffer == static_cast<int>(k) && move.before_step <= buffers[m].first_step) at = move.to_offset;
      }
      result.plan.offsets[m] = at + rel(m);
    }
  }
  // A group's move moves its members live across the step, in an order in
  // which none lands on another not yet moved: the lowest first when moving
  // down, the highest first when moving up.
  for (const ArenaMove& move : whole.moves) {
    std::vector<size_t> group = parts[static_cast<size_t>(move.buffer)];
    if (move.to_offset > move.from_offset) std::reverse(group.begin(), group.end());
    for (size_t m : group) {
      const ArenaBuffer& b = buffers[m];
      if (b.size == 0 || b.first_step >= move.before_step || b.last_step < move.before_step) continue;
      result.moves.push_back(
          {static_cast<int>(m), move.before_step, move.from_offset + rel(m), move.to_offset + rel(m), b.size});
      result.moved_bytes += b.size;
    }
  }
  return result;
}

absl::Status VerifyMovingArena(absl::Span<const ArenaBuffer> buffers, const MovingArenaPlan& plan) {
  const ArenaPlan& arena = plan.plan;
  if (arena.offsets.size() != buffers.size()) return absl::FailedPreconditionError("one offset per buffer needed");
  if (arena.alignment < 1) return absl::FailedPreconditionError("alignment below 1");
  for (size_t k = 1; k < plan.moves.size(); ++k) {
    if (plan.moves[k].before_step < plan.moves[k - 1].before_step) {
      return absl::FailedPreconditionError("moves are not in step order");
    }
  }
  auto check_fits = [&](size_t i, int64_t offset) -> absl::Status {
    if (offset < 0 || (buffers[i].anchor < 0 && offset % arena.alignment != 0)) {
      return absl::FailedPreconditionError(absl::StrCat("buffer ", i, " at ", offset, " is not aligned"));
    }
    if (offset + buffers[i].size > arena.size_bytes) {
      return absl::FailedPreconditionError(absl::StrCat("buffer ", i, " ends beyond the arena"));
    }
    return absl::OkStatus();
  };
  auto overlap = [&](size_t i, int64_t a, size_t j, int64_t b) {
    return buffers[i].size > 0 && buffers[j].size > 0 && a < b + buffers[j].size && b < a + buffers[i].size;
  };
  // Placements only change where a buffer starts or moves; checking there
  // covers every step.
  std::map<int32_t, std::vector<size_t>> starting;
  for (size_t i = 0; i < buffers.size(); ++i) starting[buffers[i].first_step].push_back(i);
  std::set<int32_t> events;
  for (const auto& [step, ids] : starting) events.insert(step);
  for (const ArenaMove& m : plan.moves) events.insert(m.before_step);
  std::vector<int64_t> at(arena.offsets);
  std::vector<size_t> live;
  size_t next_move = 0;
  for (int32_t step : events) {
    live.erase(std::remove_if(live.begin(), live.end(), [&](size_t i) { return buffers[i].last_step < step; }),
               live.end());
    for (; next_move < plan.moves.size() && plan.moves[next_move].before_step == step; ++next_move) {
      const ArenaMove& m = plan.moves[next_move];
      if (m.buffer < 0 || static_cast<size_t>(m.buffer) >= buffers.size()) {
        return absl::FailedPreconditionError("a move names no buffer");
      }
      const ArenaBuffer& b = buffers[m.buffer];
      if (!(b.first_step < step && step <= b.last_step)) {
        return absl::FailedPreconditionError(
            absl::StrCat("move of buffer ", m.buffer, " before step ", step, " is outside its lifetime"));
      }
      if (m.from_offset != at[m.buffer] || m.bytes != b.size) {
        return absl::FailedPreconditionError(absl::StrCat("move of buffer ", m.buffer, " does not start where it is"));
      }
      if (absl::Status s = check_fits(m.buffer, m.to_offset); !s.ok()) return s;
      for (size_t j : live) {
        if (j != static_cast<size_t>(m.buffer) && overlap(m.buffer, m.to_offset, j, at[j])) {
          return absl::FailedPreconditionError(
              absl::StrCat("move of buffer ", m.buffer, " before step ", step, " lands on buffer ", j));
        }
      }
      at[m.buffer] = m.to_offset;
    }
    auto it = starting.find(step);
    if (it == starting.end()) continue;
    for (size_t i : it->second) {
      if (absl::Status s = check_fits(i, at[i]); !s.ok()) return s;
      for (size_t j : live) {
        if (overlap(i, at[i], j, at[j])) {
          return absl::FailedPreconditionError(absl::StrCat("buffers ", i, " and ", j, " overlap at step ", step));
        }
      }
      live.push_back(i);
    }
  }
  return absl::OkStatus();
}

}  // namespace serenity
