#include "core/arena/memories.h"

#include <algorithm>
#include <chrono>
#include <numeric>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "core/arena/instance_search.h"
#include "core/arena/pinned_arena.h"
#include "core/util/saturating.h"
#include "core/util/status_macros.h"

namespace serenity {
namespace {

// Above this many buffers the gap-filling pass (quadratic) is skipped.
constexpr size_t kMaxFillBuffers = 4096;

// The threshold drops by at least this fraction of the capacity per try,
// so a memory takes at most this many packings.
constexpr int64_t kThresholdSteps = 32;

// Bytes per step over time sections: add over a range, max over a range,
// each in O(log sections).
class SectionLoad {
 public:
  explicit SectionLoad(size_t sections) : size_(1) {
    while (size_ < sections) size_ *= 2;
    max_.assign(2 * size_, 0);
    add_.assign(2 * size_, 0);
  }
  void Add(int begin, int end, int64_t bytes) { Add(1, 0, static_cast<int>(size_), begin, end, bytes); }
  int64_t Max(int begin, int end) const { return Max(1, 0, static_cast<int>(size_), begin, end); }

 private:
  void Add(size_t node, int lo, int hi, int begin, int end, int64_t bytes) {
    if (end <= lo || hi <= begin) return;
    if (begin <= lo && hi <= end) {
      add_[node] = SaturatingAdd(add_[node], bytes);
      max_[node] = SaturatingAdd(max_[node], bytes);
      return;
    }
    const int mid = (lo + hi) / 2;
    Add(2 * node, lo, mid, begin, end, bytes);
    Add(2 * node + 1, mid, hi, begin, end, bytes);
    max_[node] = SaturatingAdd(add_[node], std::max(max_[2 * node], max_[2 * node + 1]));
  }
  int64_t Max(size_t node, int lo, int hi, int begin, int end) const {
    if (end <= lo || hi <= begin) return 0;
    if (begin <= lo && hi <= end) return max_[node];
    const int mid = (lo + hi) / 2;
    return SaturatingAdd(add_[node],
                         std::max(Max(2 * node, lo, mid, begin, end), Max(2 * node + 1, mid, hi, begin, end)));
  }

  size_t size_;
  std::vector<int64_t> max_;  // of the subtree, its own adds included
  std::vector<int64_t> add_;  // added over the node's whole range
};

int64_t Steps(const ArenaBuffer& b) { return int64_t{b.last_step} - b.first_step + 1; }

bool ShareAStep(const ArenaBuffer& a, const ArenaBuffer& b) {
  return a.first_step <= b.last_step && b.first_step <= a.last_step;
}

// Time cut where any lifetime starts or ends (SplitIntoSections): buffer i
// lives in sections [begin(i), end(i)); section k starts at step
// first_step[k] and lasts length[k] steps.
class Sections {
 public:
  explicit Sections(absl::Span<const ArenaBuffer> buffers) : buffers_(buffers), cut_(SplitIntoSections(buffers)) {
    // Every section starts where a lifetime starts or where one ended.
    std::vector<int64_t> start(cut_.count + 1, 0);
    for (size_t i = 0; i < buffers.size(); ++i) {
      start[cut_.spans[i].first] = buffers[i].first_step;
      start[cut_.spans[i].second] = int64_t{buffers[i].last_step} + 1;
    }
    for (int k = 0; k < cut_.count; ++k) {
      first_step.push_back(start[k]);
      length.push_back(start[k + 1] - start[k]);
    }
  }

  size_t count() const { return length.size(); }
  int begin(size_t i) const { return cut_.spans[i].first; }
  int end(size_t i) const { return cut_.spans[i].second; }

  // The bytes live in each section of the buffers `counted` accepts.
  template <typename Counted>
  std::vector<int64_t> LiveBytes(const Counted& counted) const {
    std::vector<int64_t> live(count() + 1, 0);
    for (size_t i = 0; i < buffers_.size(); ++i) {
      if (!counted(i)) continue;
      live[begin(i)] = SaturatingAdd(live[begin(i)], buffers_[i].size);
      live[end(i)] -= buffers_[i].size;
    }
    for (size_t k = 1; k < live.size(); ++k) live[k] = SaturatingAdd(live[k], live[k - 1]);
    live.pop_back();
    return live;
  }

  std::vector<int64_t> first_step;
  std::vector<int64_t> length;

 private:
  absl::Span<const ArenaBuffer> buffers_;
  TimeSections cut_;
};

// Lowest offset, aligned, at which `size` bytes meet none of `busy`
// ([offset, end) ranges, sorted by offset).
int64_t LowestFreeOffset(const std::vector<std::pair<int64_t, int64_t>>& busy, int64_t size, int64_t alignment) {
  int64_t offset = 0;
  for (const auto& [begin, end] : busy) {
    if (offset + size <= begin) break;
    offset = std::max(offset, AlignUp(end, alignment));
  }
  return offset;
}

// A placement that is always valid and needs no co-live lists: buffers with
// a `fixed` offset (>= 0) there, the others by first step (larger first) at
// the lowest offset clear of the co-live buffers placed so far. For
// instances the packer refuses as too large.
ArenaPlan PlaceLowest(absl::Span<const ArenaBuffer> part, absl::Span<const int64_t> fixed, int64_t alignment) {
  ArenaPlan plan{0, alignment, std::vector<int64_t>(part.size(), 0)};
  std::vector<size_t> pinned, order;
  for (size_t i = 0; i < part.size(); ++i) {
    if (fixed[i] >= 0) {
      pinned.push_back(i);
      plan.offsets[i] = fixed[i];
    } else {
      order.push_back(i);
    }
  }
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (part[a].first_step != part[b].first_step) return part[a].first_step < part[b].first_step;
    return part[a].size > part[b].size;
  });
  std::vector<size_t> active;  // placed, started at or before the current buffer
  for (size_t i : order) {
    const ArenaBuffer& b = part[i];
    active.erase(
        std::remove_if(active.begin(), active.end(), [&](size_t j) { return part[j].last_step < b.first_step; }),
        active.end());
    std::vector<std::pair<int64_t, int64_t>> busy;
    for (size_t j : active) {
      if (part[j].size > 0) busy.emplace_back(plan.offsets[j], plan.offsets[j] + part[j].size);
    }
    for (size_t j : pinned) {
      if (part[j].size > 0 && ShareAStep(b, part[j]))
        busy.emplace_back(plan.offsets[j], plan.offsets[j] + part[j].size);
    }
    std::sort(busy.begin(), busy.end());
    plan.offsets[i] = LowestFreeOffset(busy, b.size, alignment);
    active.push_back(i);
  }
  for (size_t i = 0; i < part.size(); ++i) {
    if (part[i].size > 0) plan.size_bytes = std::max(plan.size_bytes, plan.offsets[i] + part[i].size);
  }
  return plan;
}

std::string Describe(const std::string& name, const ArenaBuffer& b) {
  return absl::StrCat("buffer '", name, "' (", b.size, " bytes, steps ", b.first_step, "-", b.last_step, ")");
}

}  // namespace

absl::Status ValidateMemorySpaces(absl::Span<const MemorySpace> memories) {
  if (memories.size() > kMaxMemories) {
    return absl::InvalidArgumentError(absl::StrCat(memories.size(), " memories: a plan takes at most ", kMaxMemories));
  }
  absl::flat_hash_set<std::string> names;
  for (const MemorySpace& m : memories) {
    if (m.name.empty()) return absl::InvalidArgumentError("every memory needs a name");
    if (!names.insert(m.name).second) return absl::InvalidArgumentError(absl::StrCat("memory '", m.name, "' twice"));
    if (m.capacity_bytes <= 0 || m.capacity_bytes > kMaxMemoryBytes) {
      return absl::InvalidArgumentError(
          absl::StrCat("memory '", m.name, "' needs a capacity from 1 byte to 2^62 bytes"));
    }
    if (m.alignment < 1 || m.alignment > m.capacity_bytes) {
      return absl::InvalidArgumentError(
          absl::StrCat("memory '", m.name, "' needs an alignment from 1 byte to its capacity"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<MemoryAssignment> AssignMemories(absl::Span<const ArenaBuffer> buffers,
                                                absl::Span<const std::string> names,
                                                absl::Span<const MemorySpace> memories,
                                                absl::Span<const BufferPin> pins, const ArenaLimits& limits) {
  const size_t n = buffers.size();
  if (names.size() != n) return absl::InvalidArgumentError("one name per buffer is needed");
  if (!pins.empty() && pins.size() != n) return absl::InvalidArgumentError("one pin per buffer (or none) is needed");
  if (memories.empty()) return absl::InvalidArgumentError("no memories to place the buffers in");
  RETURN_IF_ERROR(ValidateMemorySpaces(memories));
  const int num_memories = static_cast<int>(memories.size());
  std::vector<BufferPin> pin(n);
  if (!pins.empty()) pin.assign(pins.begin(), pins.end());
  std::vector<size_t> at_offsets;  // buffers pinned at an offset, checked pairwise
  for (size_t i = 0; i < n; ++i) {
    const ArenaBuffer& b = buffers[i];
    if (b.anchor >= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(Describe(names[i], b), " is a slice laid out in place (concat_in_place): buffers in several ",
                       "memories cannot be anchored"));
    }
    const BufferPin& p = pin[i];
    if (p.memory < -1 || p.memory >= num_memories) {
      return absl::InvalidArgumentError(
          absl::StrCat(Describe(names[i], b), " is pinned to memory ", p.memory, ", not one of the ", num_memories));
    }
    if (p.offset == -1) continue;
    if (p.memory < 0) {
      return absl::InvalidArgumentError(absl::StrCat(Describe(names[i], b), " has a pinned offset but no memory"));
    }
    const MemorySpace& m = memories[p.memory];
    if (p.offset < 0 || p.offset % m.alignment != 0) {
      return absl::InvalidArgumentError(absl::StrCat(Describe(names[i], b), " is pinned at offset ", p.offset,
                                                     ", not a non-negative multiple of '", m.name, "''s alignment ",
                                                     m.alignment));
    }
    if (SaturatingAdd(p.offset, b.size) > m.capacity_bytes) {
      return absl::InvalidArgumentError(absl::StrCat(Describe(names[i], b), " is pinned at offset ", p.offset, " of '",
                                                     m.name, "': it ends at ", SaturatingAdd(p.offset, b.size),
                                                     ", past the capacity ", m.capacity_bytes));
    }
    if (at_offsets.size() == kMaxPins) {
      return absl::InvalidArgumentError(absl::StrCat("more than ", kMaxPins, " buffers are pinned at offsets"));
    }
    for (size_t j : at_offsets) {
      const BufferPin& q = pin[j];
      if (q.memory != p.memory || b.size == 0 || buffers[j].size == 0) continue;
      if (ShareAStep(b, buffers[j]) && p.offset < q.offset + buffers[j].size && q.offset < p.offset + b.size) {
        return absl::InvalidArgumentError(absl::StrCat(Describe(names[i], b), " and ", Describe(names[j], buffers[j]),
                                                       " are pinned to overlapping bytes of '", m.name,
                                                       "' while both live"));
      }
    }
    at_offsets.push_back(i);
  }

  const Sections sections(buffers);
  const size_t num_sections = sections.count();
  // No placement helps when the bytes live at one step exceed every
  // capacity together.
  {
    const std::vector<int64_t> live = sections.LiveBytes([](size_t) { return true; });
    int64_t total = 0;
    for (const MemorySpace& m : memories) total = SaturatingAdd(total, m.capacity_bytes);
    for (size_t k = 0; k < num_sections; ++k) {
      const int64_t running = live[k];
      if (running <= total) continue;
      size_t largest = n;  // the largest buffer live there, to name one
      for (size_t i = 0; i < n; ++i) {
        if (sections.begin(i) <= static_cast<int>(k) && static_cast<int>(k) < sections.end(i) &&
            (largest == n || buffers[i].size > buffers[largest].size)) {
          largest = i;
        }
      }
      return absl::FailedPreconditionError(absl::StrCat(
          "at step ", sections.first_step[k], ", ", running, " bytes are live, more than all memories hold together (",
          total, " bytes): no placement fits; the capacities together need at least ", running,
          " bytes (the largest buffer live there is ", Describe(names[largest], buffers[largest]), ")"));
    }
  }

  MemoryAssignment result;
  result.memory.assign(n, -1);
  result.offsets.assign(n, 0);
  result.uses.resize(memories.size());
  // Unpinned buffers, largest size x steps first (then largest, then first).
  std::vector<size_t> by_area(n);
  std::iota(by_area.begin(), by_area.end(), 0);
  std::stable_sort(by_area.begin(), by_area.end(), [&](size_t a, size_t b) {
    const int64_t area_a = SaturatingMul(buffers[a].size, Steps(buffers[a]));
    const int64_t area_b = SaturatingMul(buffers[b].size, Steps(buffers[b]));
    if (area_a != area_b) return area_a > area_b;
    return buffers[a].size > buffers[b].size;
  });

  for (int m = 0; m < num_memories; ++m) {
    const MemorySpace& space = memories[m];
    const bool last = m + 1 == num_memories;
    std::vector<size_t> pinned_here, candidates;
    for (size_t i = 0; i < n; ++i) {
      if (pin[i].memory == m) pinned_here.push_back(i);
    }
    for (size_t i : by_area) {
      if (result.memory[i] < 0 && pin[i].memory < 0) candidates.push_back(i);
    }
    // The bound: at each section, the lesser of the capacity and what may
    // still come here.
    {
      const std::vector<int64_t> live = sections.LiveBytes(
          [&](size_t i) { return result.memory[i] < 0 && (pin[i].memory < 0 || pin[i].memory == m); });
      int64_t bound = 0;
      for (size_t k = 0; k < num_sections; ++k) {
        bound = SaturatingAdd(bound, SaturatingMul(std::min(live[k], space.capacity_bytes), sections.length[k]));
      }
      result.uses[m].byte_steps_bound = bound;
    }
    // Packs `chosen` in this memory, the pinned offsets kept.
    const auto pack = [&](const std::vector<size_t>& chosen) -> absl::StatusOr<ArenaPlan> {
      if (chosen.empty()) return ArenaPlan{0, space.alignment, {}};
      std::vector<ArenaBuffer> part;
      std::vector<int64_t> fixed;
      for (size_t i : chosen) {
        part.push_back(buffers[i]);
        fixed.push_back(pin[i].memory == m ? pin[i].offset : -1);
      }
      absl::StatusOr<ArenaPlan> packed =
          PlanArenaInstanceWithPinned(part, fixed, space.alignment, PlanArenaSearch(), limits);
      // Too many co-live pairs for the packer's lists: the plain placement.
      if (packed.status().code() == absl::StatusCode::kResourceExhausted) {
        return PlaceLowest(part, fixed, space.alignment);
      }
      return packed;
    };
    std::vector<size_t> chosen;
    ArenaPlan plan;
    if (last) {
      chosen = pinned_here;
      chosen.insert(chosen.end(), candidates.begin(), candidates.end());
      ASSIGN_OR_RETURN(plan, pack(chosen));
      if (plan.size_bytes > space.capacity_bytes) {
        size_t worst = 0;
        for (size_t k = 1; k < chosen.size(); ++k) {
          if (plan.offsets[k] + buffers[chosen[k]].size > plan.offsets[worst] + buffers[chosen[worst]].size) worst = k;
        }
        return absl::FailedPreconditionError(
            absl::StrCat(Describe(names[chosen[worst]], buffers[chosen[worst]]), " fits in no memory: the ",
                         chosen.size(), " buffers left for '", space.name, "' (the last memory) need ", plan.size_bytes,
                         " bytes, more than its capacity ", space.capacity_bytes,
                         num_memories > 1 ? " (after the faster memories took theirs)" : ""));
      }
    } else {
      // The pinned buffers alone must fit; with them alone the loop below
      // ends at the latest (a threshold of 0 still takes empty buffers).
      ASSIGN_OR_RETURN(ArenaPlan pinned_plan, pack(pinned_here));
      if (pinned_plan.size_bytes > space.capacity_bytes) {
        size_t worst = 0;
        for (size_t k = 1; k < pinned_here.size(); ++k) {
          if (pinned_plan.offsets[k] + buffers[pinned_here[k]].size >
              pinned_plan.offsets[worst] + buffers[pinned_here[worst]].size) {
            worst = k;
          }
        }
        return absl::FailedPreconditionError(
            absl::StrCat("the ", pinned_here.size(), " buffers pinned to '", space.name, "' need ",
                         pinned_plan.size_bytes, " bytes, more than its capacity ", space.capacity_bytes, ": ",
                         Describe(names[pinned_here[worst]], buffers[pinned_here[worst]]), " does not fit"));
      }
      int64_t threshold = space.capacity_bytes;
      for (;;) {
        SectionLoad load(num_sections);
        chosen = pinned_here;
        for (size_t i : pinned_here) {
          load.Add(sections.begin(i), sections.end(i), AlignUp(buffers[i].size, space.alignment));
        }
        for (size_t i : candidates) {
          const int64_t size = AlignUp(buffers[i].size, space.alignment);
          if (SaturatingAdd(load.Max(sections.begin(i), sections.end(i)), size) > threshold) continue;
          chosen.push_back(i);
          load.Add(sections.begin(i), sections.end(i), size);
        }
        if (limits.cancelled != nullptr && limits.cancelled->load(std::memory_order_relaxed)) {
          return absl::CancelledError("the call was cancelled");
        }
        // A packing refused (e.g. past 2^62 bytes once aligned) does not fit.
        absl::StatusOr<ArenaPlan> packed = pack(chosen);
        if (!packed.ok() && packed.status().code() == absl::StatusCode::kCancelled) return packed.status();
        if (packed.ok()) plan = *std::move(packed);
        if (packed.ok() && plan.size_bytes <= space.capacity_bytes) break;
        if (threshold == 0) {
          chosen = pinned_here;
          plan = std::move(pinned_plan);
          break;
        }
        const int64_t excess = packed.ok() ? plan.size_bytes - space.capacity_bytes : threshold;
        threshold = std::max<int64_t>(
            0, threshold - std::max({excess, space.alignment, space.capacity_bytes / kThresholdSteps}));
      }
      // Gaps: each buffer left, at the lowest offset free while it lives.
      if (n <= kMaxFillBuffers && std::chrono::steady_clock::now() < limits.deadline) {
        std::vector<bool> taken(n, false);
        for (size_t i : chosen) taken[i] = true;
        for (size_t i : candidates) {
          if (taken[i]) continue;
          std::vector<std::pair<int64_t, int64_t>> busy;  // [offset, end) of co-live placed buffers
          for (size_t k = 0; k < chosen.size(); ++k) {
            const ArenaBuffer& other = buffers[chosen[k]];
            if (other.size > 0 && ShareAStep(buffers[i], other)) {
              busy.emplace_back(plan.offsets[k], plan.offsets[k] + other.size);
            }
          }
          std::sort(busy.begin(), busy.end());
          const int64_t offset = LowestFreeOffset(busy, buffers[i].size, space.alignment);
          if (offset + buffers[i].size > space.capacity_bytes) continue;
          chosen.push_back(i);
          plan.offsets.push_back(offset);
          plan.size_bytes = std::max(plan.size_bytes, offset + buffers[i].size);
          taken[i] = true;
        }
      }
    }
    MemoryUse& use = result.uses[m];
    for (size_t k = 0; k < chosen.size(); ++k) {
      const size_t i = chosen[k];
      result.memory[i] = m;
      result.offsets[i] = plan.offsets[k];
      ++use.buffers;
      use.byte_steps = SaturatingAdd(use.byte_steps, SaturatingMul(buffers[i].size, Steps(buffers[i])));
      if (buffers[i].size > 0) use.arena_bytes = std::max(use.arena_bytes, plan.offsets[k] + buffers[i].size);
    }
  }
  return result;
}

}  // namespace serenity
