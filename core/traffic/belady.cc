#include "core/traffic/belady.h"

#include <algorithm>
#include <limits>

namespace serenity {
namespace {

constexpr int32_t kNever = std::numeric_limits<int32_t>::max();

}  // namespace

TrafficResult SimulateTraffic(const BufferModel& buffers, const std::vector<OpId>& order, int64_t onchip_bytes) {
  const std::vector<ActivationBuffer>& all = buffers.buffers();
  const int32_t n = static_cast<int32_t>(order.size());
  std::vector<int32_t> step_of(buffers.graph().num_ops());
  for (int32_t t = 0; t < n; ++t) step_of[order[t]] = t;
  // A Concat laid out in place (BufferModel::concat_slices) copies
  // nothing: its step needs nothing on chip, and it is no read of its slices
  // (its readers read them).
  auto no_op = [&](OpId u) { return !buffers.concat_slices(u).empty(); };
  // Read steps of every buffer, ascending.
  std::vector<std::vector<int32_t>> reads(all.size());
  for (size_t b = 0; b < all.size(); ++b) {
    for (OpId user : all[b].users) {
      if (!no_op(user)) reads[b].push_back(step_of[user]);
    }
    std::sort(reads[b].begin(), reads[b].end());
  }
  auto next_read = [&](size_t b, int32_t after) {
    auto it = std::upper_bound(reads[b].begin(), reads[b].end(), after);
    return it == reads[b].end() ? kNever : *it;
  };
  // Still needed after step t: read later, or a graph output.
  auto needed_after = [&](size_t b, int32_t t) { return all[b].live_to_end || next_read(b, t) != kNever; };

  TrafficResult result;
  result.onchip_bytes = onchip_bytes;
  std::vector<bool> resident(all.size(), false), written(all.size(), false);
  int64_t used = 0;
  // Graph inputs: on chip in order of first use while they fit.
  std::vector<size_t> inputs;
  for (size_t b = 0; b < all.size(); ++b) {
    if (all[b].producer == kNoOp) {
      written[b] = true;  // their off-chip copy exists from the start
      inputs.push_back(b);
    }
  }
  std::stable_sort(inputs.begin(), inputs.end(),
                   [&](size_t a, size_t b) { return next_read(a, -1) < next_read(b, -1); });
  for (size_t b : inputs) {
    if (used + all[b].bytes <= onchip_bytes) {
      resident[b] = true;
      used += all[b].bytes;
    }
  }

  std::vector<bool> pinned(all.size(), false);
  for (int32_t t = 0; t < n; ++t) {
    const OpId u = order[t];
    if (no_op(u)) continue;
    // In place: the output takes over the first candidate input read last
    // here (same size), so it needs no room of its own.
    BufferId overwritten = kNoBuffer, overwriting = kNoBuffer;
    for (BufferId b : buffers.in_place_inputs(u)) {
      if (!reads[b].empty() && reads[b].back() == t && !all[b].live_to_end) {
        overwritten = b;
        overwriting = buffers.allocates(u)[0];
        break;
      }
    }
    // What the step needs on chip.
    int64_t need = buffers.graph().op(u).workspace_bytes;
    for (BufferId b : buffers.reads(u)) need += all[b].bytes;
    for (BufferId b : buffers.allocates(u)) need += b == overwriting ? 0 : all[b].bytes;
    if (need > onchip_bytes) {
      result.feasible = false;
      result.infeasible_op = u;
      return result;
    }
    for (BufferId b : buffers.reads(u)) pinned[b] = true;
    for (BufferId b : buffers.allocates(u)) pinned[b] = true;
    int64_t missing = buffers.graph().op(u).workspace_bytes;
    for (BufferId b : buffers.reads(u)) missing += resident[b] ? 0 : all[b].bytes;
    for (BufferId b : buffers.allocates(u)) missing += b == overwriting ? 0 : all[b].bytes;
    // Evict until the step fits: the farthest next read first.
    while (used + missing > onchip_bytes) {
      size_t victim = all.size();
      int32_t victim_next = -1;
      for (size_t b = 0; b < all.size(); ++b) {
        if (!resident[b] || pinned[b]) continue;
        const int32_t next = next_read(b, t - 1);
        if (victim == all.size() || next > victim_next || (next == victim_next && all[b].bytes > all[victim].bytes)) {
          victim = b;
          victim_next = next;
        }
      }
      // `need` fits, so unpinned residents remain while over capacity.
      resident[victim] = false;
      used -= all[victim].bytes;
      if (needed_after(victim, t - 1) && !written[victim]) {
        written[victim] = true;
        result.write_bytes += all[victim].bytes;
      }
    }
    for (BufferId b : buffers.reads(u)) {
      if (!resident[b]) {
        resident[b] = true;
        used += all[b].bytes;
        result.read_bytes += all[b].bytes;
        ++result.reloads;
      }
    }
    for (BufferId b : buffers.allocates(u)) {
      resident[b] = true;
      used += all[b].bytes;
    }
    // An accumulation changes its accumulator's bytes: an off-chip copy of
    // them is stale now.
    for (BufferId b : buffers.accumulates_into(u)) written[b] = false;
    if (overwriting != kNoBuffer) {  // the input's bytes now hold the output
      resident[overwritten] = false;
      used -= all[overwritten].bytes;
    }
    // After the step: unpin, and drop whatever is no longer needed.
    for (BufferId b : buffers.reads(u)) pinned[b] = false;
    for (BufferId b : buffers.allocates(u)) pinned[b] = false;
    for (size_t b = 0; b < all.size(); ++b) {
      if (resident[b] && !needed_after(b, t)) {
        resident[b] = false;
        used -= all[b].bytes;
      }
    }
  }
  return result;
}

}  // namespace serenity
