#include "core/memory/simulator.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/memory/closure_bound.h"

namespace serenity {

absl::StatusOr<MemoryProfile> Simulate(const BufferModel& buffers, const std::vector<OpId>& order) {
  const Graph& graph = buffers.graph();
  if (!IsTopologicalOrder(graph, order)) {
    return absl::InvalidArgumentError(
        absl::StrCat("the order is not a topological order of the graph's ", graph.num_ops(), " ops"));
  }
  const int32_t n = static_cast<int32_t>(order.size());
  std::vector<int32_t> step_of(graph.num_ops());
  for (int32_t t = 0; t < n; ++t) step_of[order[t]] = t;

  MemoryProfile profile;
  if (buffers.model().count_weights) {
    for (TensorId t = 0; t < graph.num_tensors(); ++t) {
      if (!graph.tensor(t).is_weight) continue;
      BufferLifetimeInfo w;
      w.kind = BufferKind::kWeight;
      w.tensor = t;
      w.bytes = graph.tensor(t).bytes;
      w.first_step = 0;
      w.last_step = n - 1;
      profile.buffers.push_back(std::move(w));
    }
  }
  const std::vector<ActivationBuffer>& all = buffers.buffers();
  std::vector<int32_t> first(all.size()), last(all.size());
  for (size_t i = 0; i < all.size(); ++i) {
    const ActivationBuffer& b = all[i];
    first[i] = b.producer == kNoOp ? 0 : step_of[b.producer];
    last[i] = first[i];
    for (OpId u : b.users) last[i] = std::max(last[i], step_of[u]);
    if (b.live_to_end) last[i] = n - 1;
  }
  // In place: an op's output joins the buffer of the first candidate input
  // whose last reader it is; chains of such ops share one buffer.
  std::vector<BufferId> group(all.size());
  for (size_t i = 0; i < all.size(); ++i) group[i] = static_cast<BufferId>(i);
  auto root = [&group](BufferId b) {
    while (group[b] != b) b = group[b] = group[group[b]];
    return b;
  };
  for (int32_t t = 0; t < n; ++t) {
    const OpId u = order[t];
    for (BufferId b : buffers.in_place_inputs(u)) {
      if (last[b] != t) continue;
      group[buffers.allocates(u)[0]] = root(b);
      break;
    }
  }
  std::vector<int> info_of(all.size(), -1);
  for (size_t i = 0; i < all.size(); ++i) {
    const BufferId r = root(static_cast<BufferId>(i));
    if (info_of[r] < 0) {
      info_of[r] = static_cast<int>(profile.buffers.size());
      BufferLifetimeInfo info;
      info.kind = BufferKind::kTensor;
      info.tensor = all[r].tensor;
      info.bytes = all[r].bytes;
      info.first_step = first[r];
      info.last_step = last[r];
      profile.buffers.push_back(std::move(info));
    }
    BufferLifetimeInfo& info = profile.buffers[info_of[r]];
    info.first_step = std::min(info.first_step, first[i]);
    info.last_step = std::max(info.last_step, last[i]);
    if (static_cast<BufferId>(i) != r) info.aliases.push_back(all[i].tensor);
    info.aliases.insert(info.aliases.end(), all[i].aliases.begin(), all[i].aliases.end());
  }
  for (OpId u = 0; u < graph.num_ops(); ++u) {
    const std::vector<BufferId>& slices = buffers.concat_slices(u);
    if (slices.empty()) continue;
    // Slices never run in place, so each is its own profile buffer.
    const int32_t head = info_of[root(slices.front())];
    int64_t offset = all[slices.front()].bytes;
    for (size_t j = 1; j < slices.size(); ++j) {
      BufferLifetimeInfo& info = profile.buffers[info_of[root(slices[j])]];
      info.anchor = head;
      info.offset_from_anchor = offset;
      info.slice_of = graph.op(u).outputs[0];
      offset += all[slices[j]].bytes;
    }
  }
  for (int32_t t = 0; t < n; ++t) {
    const Op& op = graph.op(order[t]);
    if (op.workspace_bytes == 0) continue;
    BufferLifetimeInfo ws;
    ws.kind = BufferKind::kWorkspace;
    ws.op = order[t];
    ws.bytes = op.workspace_bytes;
    ws.first_step = ws.last_step = t;
    profile.buffers.push_back(std::move(ws));
  }

  std::vector<int64_t> delta(n + 1, 0);
  for (const BufferLifetimeInfo& b : profile.buffers) {
    delta[b.first_step] += b.bytes;
    delta[b.last_step + 1] -= b.bytes;
  }
  profile.step_bytes.resize(n);
  int64_t live = 0;
  for (int32_t t = 0; t < n; ++t) {
    live += delta[t];
    profile.step_bytes[t] = live;
    profile.peak_bytes = std::max(profile.peak_bytes, live);
  }
  return profile;
}

int64_t PeakOf(const BufferModel& buffers, const std::vector<OpId>& order) {
  MemoryTracker tracker(buffers);
  for (OpId u : order) tracker.Run(u);
  return tracker.peak_bytes();
}

std::vector<int64_t> StepLowerBounds(const BufferModel& buffers, const Reachability& reach) {
  const Graph& graph = buffers.graph();
  const int n = graph.num_ops();
  const size_t words = reach.words();
  std::vector<int64_t> bounds(n);
  for (OpId u = 0; u < n; ++u) {
    // An in-place step may save its output's bytes in some order.
    bounds[u] = buffers.resident_bytes() + graph.op(u).workspace_bytes - buffers.in_place_bytes(u);
  }
  // Each buffer adds its bytes to the steps of the ops that come after its
  // producer (every op, for a graph input) and that read it or come before
  // a reader (every op, for a graph output), as bitsets: linear in the
  // buffers times the words of a bitset, plus the pairs counted.
  std::vector<uint64_t> steps(words), readers(words);
  for (const ActivationBuffer& b : buffers.buffers()) {
    if (b.producer != kNoOp) {
      bounds[b.producer] += b.bytes;  // its own output
      std::copy(reach.descendants(b.producer), reach.descendants(b.producer) + words, steps.begin());
    } else {
      std::fill(steps.begin(), steps.end(), ~uint64_t{0});
    }
    if (!b.live_to_end) {
      std::fill(readers.begin(), readers.end(), 0);
      for (OpId user : b.users) {
        const uint64_t* before = reach.ancestors(user);
        for (size_t w = 0; w < words; ++w) readers[w] |= before[w];
        readers[user / 64] |= uint64_t{1} << (user % 64);
      }
      for (size_t w = 0; w < words; ++w) steps[w] &= readers[w];
    }
    for (size_t w = 0; w < words; ++w) {
      for (uint64_t bits = steps[w]; bits != 0; bits &= bits - 1) {
        const int u = static_cast<int>(w * 64) + __builtin_ctzll(bits);
        if (u < n && u != b.producer) bounds[u] += b.bytes;
      }
    }
  }
  return bounds;
}

int64_t LowerBoundBytes(const BufferModel& buffers) {
  std::vector<int64_t> bounds = ClosureStepLowerBounds(buffers, Reachability(buffers.graph()));
  return *std::max_element(bounds.begin(), bounds.end());
}

}  // namespace serenity
