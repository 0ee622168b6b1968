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

std::vector<int64_t> StepLowerBounds(const BufferModel& buffers, const Reachability& reach) {
  const Graph& graph = buffers.graph();
  std::vector<int64_t> bounds(graph.num_ops());
  for (OpId u = 0; u < graph.num_ops(); ++u) {
    int64_t live = buffers.resident_bytes() + graph.op(u).workspace_bytes;
    for (const ActivationBuffer& b : buffers.buffers()) {
      if (b.producer == u) {
        live += b.bytes;
        continue;
      }
      if (b.producer != kNoOp && !reach.IsAncestor(b.producer, u)) continue;
      bool needed_later = b.live_to_end;
      for (OpId user : b.users) {
        if (needed_later) break;
        needed_later = user == u || reach.IsDescendant(user, u);
      }
      if (needed_later) live += b.bytes;
    }
    bounds[u] = live;
  }
  return bounds;
}

int64_t LowerBoundBytes(const BufferModel& buffers) {
  std::vector<int64_t> bounds = StepLowerBounds(buffers, Reachability(buffers.graph()));
  return *std::max_element(bounds.begin(), bounds.end());
}

}  // namespace serenity
