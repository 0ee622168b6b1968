#include "core/budget_levels.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "core/arena/arena_verifier.h"
#include "core/arena/instance_search.h"
#include "core/arena/pinned_arena.h"
#include "core/primitive_plan.h"
#include "core/util/deadline.h"
#include "core/util/status_macros.h"

namespace serenity {
namespace {

using Clock = std::chrono::steady_clock;

// The part of the time limit the levels' plans share (the rest lays out
// their arenas).
constexpr double kLevelsSearchShare = 0.9;

// Times within this fraction of each other are the same (sums of the same
// primitives' times in another order may differ in the last bits).
constexpr double kSameTime = 1e-12;

// Most placements ShareOffsets tries pin by pin.
constexpr int kMaxShareAttempts = 256;

bool TimeIsOut(const ArenaLimits& limits) {
  return (limits.deadline != Clock::time_point::max() && Clock::now() >= limits.deadline) ||
         (limits.cancelled != nullptr && limits.cancelled->load(std::memory_order_relaxed));
}

// A row's tensor as MovedTensors keys it: a workspace apart from a tensor of
// the same name.
std::string KeyOf(v1::BufferKind kind, const std::string& name) {
  return absl::StrCat(kind == v1::BUFFER_KIND_WORKSPACE ? "w:" : "t:", name);
}

// Every tensor (and workspace) of an arena with its offset and, for a
// weight, its size (another primitive's weights in another form must be
// written again); the rows in order, each followed by its aliases; a name
// listed twice counts once, at its first place.
struct TensorOffsets {
  using Place = std::pair<int64_t, int64_t>;               // (offset, a weight's size or -1)
  std::vector<std::pair<std::string, std::string>> names;  // (key, name), in order
  absl::flat_hash_map<std::string, Place> offset;          // by key
};

TensorOffsets OffsetsOf(const v1::Arena& arena) {
  TensorOffsets out;
  const auto add = [&out](std::string key, const std::string& name, TensorOffsets::Place place) {
    if (out.offset.emplace(key, place).second) out.names.emplace_back(std::move(key), name);
  };
  for (const v1::ArenaBuffer& row : arena.buffers()) {
    const int64_t size = row.kind() == v1::BUFFER_KIND_WEIGHT ? row.size() : -1;
    add(KeyOf(row.kind(), row.tensor()), row.tensor(), {row.offset(), size});
    for (const std::string& alias : row.aliases()) {
      add(KeyOf(v1::BUFFER_KIND_TENSOR, alias), alias, {row.offset(), size});
    }
  }
  return out;
}

// The planner's buffers of an arena's rows: a Concat's later slice anchored
// to the row whose aliases name the Concat output it belongs to.
absl::StatusOr<std::vector<ArenaBuffer>> BuffersOf(const v1::Arena& arena) {
  absl::flat_hash_map<std::string, int32_t> group;  // Concat output -> its first slice's row
  for (int i = 0; i < arena.buffers_size(); ++i) {
    if (!arena.buffers(i).slice_of().empty()) continue;
    for (const std::string& alias : arena.buffers(i).aliases()) group.emplace(alias, i);
  }
  std::vector<ArenaBuffer> buffers;
  buffers.reserve(arena.buffers_size());
  for (const v1::ArenaBuffer& row : arena.buffers()) {
    ArenaBuffer b{row.size(), row.first_step(), row.last_step()};
    if (!row.slice_of().empty()) {
      auto it = group.find(row.slice_of());
      if (it == group.end()) {
        return absl::InvalidArgumentError(
            absl::StrCat("arena row '", row.tensor(), "' is a slice of '", row.slice_of(), "', which no row starts"));
      }
      b.anchor = it->second;
      b.offset_from_anchor = row.slice_offset();
    }
    buffers.push_back(b);
  }
  return buffers;
}

// `arena` with every row at `offsets` and its size `size_bytes`, once
// VerifyArena accepts them.
absl::StatusOr<v1::Arena> WithOffsets(const v1::Arena& arena, absl::Span<const ArenaBuffer> buffers,
                                      std::vector<int64_t> offsets, int64_t size_bytes) {
  ArenaPlan plan;
  plan.size_bytes = size_bytes;
  plan.alignment = std::max<int64_t>(arena.alignment(), 1);
  plan.offsets = std::move(offsets);
  if (absl::Status verified = VerifyArena(buffers, plan); !verified.ok()) {
    return absl::InternalError(absl::StrCat("a level's arena is not valid: ", verified.message()));
  }
  v1::Arena out = arena;
  out.set_size_bytes(plan.size_bytes);
  for (int i = 0; i < out.buffers_size(); ++i) out.mutable_buffers(i)->set_offset(plan.offsets[i]);
  return out;
}

// A plan's arena without moves: its own, or, when it fits the budget only
// with moves (defragment), a free static placement of the same rows.
absl::StatusOr<v1::Arena> StaticArena(const v1::Plan& plan, const ArenaLimits& limits) {
  if (plan.moves_size() == 0) return plan.arena();
  ASSIGN_OR_RETURN(std::vector<ArenaBuffer> buffers, BuffersOf(plan.arena()));
  ASSIGN_OR_RETURN(ArenaPlan placed,
                   PlanArena(buffers, std::max<int64_t>(plan.arena().alignment(), 1), kDefaultSkylineNodes, limits));
  return WithOffsets(plan.arena(), buffers, std::move(placed.offsets), placed.size_bytes);
}

}  // namespace

std::vector<std::string> MovedTensors(const v1::Arena& previous, const v1::Arena& current) {
  const TensorOffsets before = OffsetsOf(previous);
  const TensorOffsets after = OffsetsOf(current);
  std::vector<std::string> moved;
  for (const auto& [key, name] : after.names) {
    auto it = before.offset.find(key);
    if (it == before.offset.end() || it->second != after.offset.at(key)) moved.push_back(name);
  }
  for (const auto& [key, name] : before.names) {
    if (!after.offset.contains(key)) moved.push_back(name);
  }
  return moved;
}

absl::StatusOr<v1::Arena> ShareOffsets(const v1::Arena& previous, const v1::Arena& own, int64_t bound,
                                       const ArenaLimits& limits) {
  ASSIGN_OR_RETURN(std::vector<ArenaBuffer> buffers, BuffersOf(own));
  const int64_t alignment = std::max<int64_t>(own.alignment(), 1);
  const TensorOffsets hints = OffsetsOf(previous);
  const auto hint_of = [&](size_t row) -> int64_t {
    const v1::ArenaBuffer& b = own.buffers(static_cast<int>(row));
    auto it = hints.offset.find(KeyOf(b.kind(), b.tensor()));
    if (it == hints.offset.end()) return -1;
    const int64_t offset = it->second.first;
    return offset < 0 || offset % alignment != 0 ? -1 : offset;
  };
  // Each free buffer with the slices anchored to it is one piece.
  const std::vector<AnchoredBlock> blocks = AnchoredBlocks(buffers);
  std::vector<ArenaBuffer> pieces;
  pieces.reserve(blocks.size());
  for (const AnchoredBlock& block : blocks) pieces.push_back({block.extent, block.first, block.last});
  std::vector<size_t> all(pieces.size());
  for (size_t j = 0; j < all.size(); ++j) all[j] = j;
  const std::vector<std::vector<size_t>> co_live = OverlappingBuffers(pieces, all, kMaxArenaSearchCells);
  if (co_live.size() != pieces.size()) return own;  // (too many pairs to list)
  // The candidates, largest first; accepted while they overlap no accepted
  // co-live piece.
  std::vector<size_t> candidates;
  for (size_t j = 0; j < pieces.size(); ++j) {
    const int64_t hint = hint_of(blocks[j].head);
    if (hint >= 0 && hint <= bound - pieces[j].size) candidates.push_back(j);
  }
  std::stable_sort(candidates.begin(), candidates.end(),
                   [&](size_t a, size_t b) { return pieces[a].size > pieces[b].size; });
  std::vector<int64_t> pinned(pieces.size(), -1);
  std::vector<size_t> accepted;
  for (size_t j : candidates) {
    const int64_t at = hint_of(blocks[j].head);
    bool clear = true;
    for (size_t q : co_live[j]) {
      if (pinned[q] >= 0 && at < pinned[q] + pieces[q].size && pinned[q] < at + pieces[j].size) {
        clear = false;
        break;
      }
    }
    if (!clear) continue;
    pinned[j] = at;
    accepted.push_back(j);
  }
  // Places the pieces with `set` pinned into `*out`: false when the arena
  // ends above `bound` or the pairs are too many to search.
  const auto place = [&](const std::vector<size_t>& set, ArenaPlan* out) -> absl::StatusOr<bool> {
    std::vector<int64_t> pins(pieces.size(), -1);
    for (size_t j : set) pins[j] = pinned[j];
    absl::StatusOr<ArenaPlan> placed = PlanArenaInstanceWithPinned(pieces, pins, alignment, PlanArenaSearch(), limits);
    if (absl::IsResourceExhausted(placed.status())) return false;
    RETURN_IF_ERROR(placed.status());
    if (placed->size_bytes > bound) return false;
    *out = *std::move(placed);
    return true;
  };
  if (accepted.empty()) return own;
  ArenaPlan best;
  ASSIGN_OR_RETURN(bool found, place(accepted, &best));
  if (!found) {
    // Pin by pin, largest first: each kept when the arena still fits.
    std::vector<size_t> kept;
    int attempts = 0;
    for (size_t j : accepted) {
      if (++attempts > kMaxShareAttempts || TimeIsOut(limits)) break;
      kept.push_back(j);
      ArenaPlan placed;
      ASSIGN_OR_RETURN(bool fits, place(kept, &placed));
      if (fits) {
        best = std::move(placed);
        found = true;
      } else {
        kept.pop_back();
      }
    }
  }
  if (!found) return own;
  const std::vector<std::vector<size_t>> members = AnchoredBuffers(buffers);
  std::vector<int64_t> offsets(buffers.size(), 0);
  std::vector<bool> in_block(buffers.size(), false);
  for (size_t j = 0; j < blocks.size(); ++j) {
    const size_t head = blocks[j].head;
    in_block[head] = true;
    offsets[head] = best.offsets[j];
    for (size_t m : members[head]) offsets[m] = offsets[head] + buffers[m].offset_from_anchor;
  }
  // Zero-size buffers meet nothing: they keep their previous offset when it
  // lies within the arena.
  for (size_t i = 0; i < buffers.size(); ++i) {
    if (in_block[i] || buffers[i].anchor >= 0 || !members[i].empty() || buffers[i].size != 0) continue;
    const int64_t hint = hint_of(i);
    if (hint >= 0 && hint <= best.size_bytes) offsets[i] = hint;
  }
  ASSIGN_OR_RETURN(v1::Arena shared, WithOffsets(own, buffers, std::move(offsets), best.size_bytes));
  // (Own offsets may happen to keep more.)
  return MovedTensors(previous, shared).size() < MovedTensors(previous, own).size() ? shared : own;
}

absl::StatusOr<v1::Plan> PlanBudgetLevels(const Graph& graph, const SanitizedOptions& options, Executor* executor) {
  const Clock::time_point start = Clock::now();
  const std::vector<int64_t>& budgets = options->budgets;
  const size_t n = budgets.size();
  if (n == 0) return absl::InvalidArgumentError("no budgets to plan");
  // 90% of the time limit for the levels' plans, the rest (at least) for
  // their shared arenas.
  const double limit = options->time_limit_seconds;
  const double search = kLevelsSearchShare * limit;
  const auto seconds_left = [&] {
    double left = search - std::chrono::duration<double>(Clock::now() - start).count();
    if (options->deadline != Clock::time_point::max()) {
      left = std::min(left, std::chrono::duration<double>(options->deadline - Clock::now()).count());
    }
    return left;
  };
  // Each level: PlanForTime at its budget, with an equal share of the time
  // left (at least a quarter of an even split).
  std::vector<v1::Plan> plans;
  plans.reserve(n);
  for (size_t k = 0; k < n; ++k) {
    PlanOptions level = *options;
    level.budgets.clear();
    level.memory_budget_bytes = budgets[k];
    level.time_limit_seconds =
        std::max(seconds_left() / static_cast<double>(n - k), 0.25 * search / static_cast<double>(n));
    ASSIGN_OR_RETURN(SanitizedOptions sanitized, SanitizePlanOptions(graph, std::move(level)));
    ASSIGN_OR_RETURN(v1::Plan plan, PlanForTime(graph, sanitized, executor));
    plans.push_back(std::move(plan));
  }
  // The arenas: the first level's as planned, each next one around the
  // offsets of the one before it, each with an equal share of what is left
  // of the limit (at least a tenth of it in all), by the deadline.
  Clock::time_point end = std::max(TimeAfter(start, limit), TimeAfter(Clock::now(), (1 - kLevelsSearchShare) * limit));
  end = std::min(end, options->deadline);
  if (options->cancelled != nullptr && options->cancelled->load(std::memory_order_relaxed)) {
    return absl::CancelledError("the call was cancelled");
  }
  ArenaLimits limits;
  limits.cancelled = options->cancelled;
  limits.memory = options->memory;
  v1::Plan out = plans[0];
  v1::TimeReport* time = out.mutable_time();
  time->clear_levels();
  v1::Arena previous;
  const v1::Plan* previous_plan = nullptr;
  for (size_t k = 0; k < n; ++k) {
    const Clock::time_point now = Clock::now();
    limits.deadline = now >= end ? now : now + (end - now) / static_cast<int64_t>(n - k);
    ASSIGN_OR_RETURN(v1::Arena arena, StaticArena(plans[k], limits));
    const int64_t bound = std::max(budgets[k], arena.size_bytes());
    // The previous level's plan, when it fits this budget (its arena
    // within the bound) and is as fast: nothing moves.
    const bool reuse = previous_plan != nullptr && plans[k].feasible() && previous_plan->peak_bytes() <= budgets[k] &&
                       previous.size_bytes() <= bound &&
                       previous_plan->time().time_us() <= plans[k].time().time_us() * (1 + kSameTime);
    const v1::Plan& plan = reuse ? *previous_plan : plans[k];
    if (reuse) {
      arena = previous;
    } else if (k > 0) {
      ASSIGN_OR_RETURN(arena, ShareOffsets(previous, arena, bound, limits));
    }
    v1::BudgetLevel* level = time->add_levels();
    level->set_budget_bytes(budgets[k]);
    level->set_feasible(plan.peak_bytes() <= budgets[k]);
    level->set_peak_bytes(plan.peak_bytes());
    level->set_time_us(plan.time().time_us());
    level->set_certificate(plans[k].time().certificate());  // (the same time: its proof holds)
    *level->mutable_order_names() = plan.order_names();
    *level->mutable_primitives() = plan.time().primitives();
    if (k > 0) {
      for (std::string& name : MovedTensors(previous, arena)) level->add_moved_tensors(std::move(name));
    }
    *level->mutable_arena() = arena;
    previous = std::move(arena);
    previous_plan = &plan;
  }
  return out;
}

}  // namespace serenity
