#include "core/memory/simulator.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace serenity {

absl::StatusOr<MemoryProfile> Simulate(const BufferModel& buffers, const std::vector<OpId>& order) {
  const Graph& graph = buffers.graph();
  if (!IsTopologicalOrder(graph, order)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the order is not a topological order of the graph's ", graph.num_ops(), " ops"));
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
  for (const ActivationBuffer& b : buffers.buffers()) {
    BufferLifetimeInfo info;
    info.kind = BufferKind::kTensor;
    info.tensor = b.tensor;
    info.aliases = b.aliases;
    info.bytes = b.bytes;
    info.first_step = b.producer == kNoOp ? 0 : step_of[b.producer];
    info.last_step = info.first_step;
    for (OpId u : b.users) info.last_step = std::max(info.last_step, step_of[u]);
    if (b.live_to_end) info.last_step = n - 1;
    profile.buffers.push_back(std::move(info));
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

int64_t LowerBoundBytes(const BufferModel& buffers) {
  const Graph& graph = buffers.graph();
  const int n = graph.num_ops();
  const size_t words = (static_cast<size_t>(n) + 63) / 64;
  // ancestors[u] and descendants[u] as bitsets, from a topological order.
  std::vector<uint64_t> anc(static_cast<size_t>(n) * words, 0);
  std::vector<uint64_t> desc(static_cast<size_t>(n) * words, 0);
  auto bit = [words](std::vector<uint64_t>& sets, OpId set, OpId member) -> uint64_t& {
    return sets[static_cast<size_t>(set) * words + static_cast<size_t>(member) / 64];
  };
  auto has = [words](const std::vector<uint64_t>& sets, OpId set, OpId member) {
    return (sets[static_cast<size_t>(set) * words + static_cast<size_t>(member) / 64] >> (member % 64)) & 1;
  };
  std::vector<OpId> topo;
  {
    std::vector<int> indegree(n);
    for (OpId u = 0; u < n; ++u) {
      indegree[u] = static_cast<int>(graph.op(u).predecessors.size());
      if (indegree[u] == 0) topo.push_back(u);
    }
    for (size_t i = 0; i < topo.size(); ++i) {
      for (OpId v : graph.op(topo[i]).successors) {
        if (--indegree[v] == 0) topo.push_back(v);
      }
    }
  }
  for (OpId u : topo) {
    for (OpId p : graph.op(u).predecessors) {
      for (size_t w = 0; w < words; ++w) anc[u * words + w] |= anc[p * words + w];
      bit(anc, u, p) |= uint64_t{1} << (p % 64);
    }
  }
  for (auto it = topo.rbegin(); it != topo.rend(); ++it) {
    OpId u = *it;
    for (OpId s : graph.op(u).successors) {
      for (size_t w = 0; w < words; ++w) desc[u * words + w] |= desc[s * words + w];
      bit(desc, u, s) |= uint64_t{1} << (s % 64);
    }
  }

  int64_t bound = 0;
  for (OpId u = 0; u < n; ++u) {
    int64_t live = buffers.resident_bytes() + graph.op(u).workspace_bytes;
    for (const ActivationBuffer& b : buffers.buffers()) {
      if (b.producer == u) {
        live += b.bytes;
        continue;
      }
      bool made_before = b.producer == kNoOp || has(anc, u, b.producer);
      if (!made_before) continue;
      bool needed_later = b.live_to_end;
      for (OpId user : b.users) {
        if (needed_later) break;
        needed_later = user == u || has(desc, u, user);
      }
      if (needed_later) live += b.bytes;
    }
    bound = std::max(bound, live);
  }
  return bound;
}

}  // namespace serenity
