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
  const int segments = reach.num_segments();
  std::vector<int64_t> bounds(n);
  for (OpId u = 0; u < n; ++u) {
    // An in-place step may save its output's bytes in some order.
    bounds[u] = buffers.resident_bytes() + graph.op(u).workspace_bytes - buffers.in_place_bytes(u);
  }
  // Each buffer adds its bytes to the steps of the ops that come after its
  // producer (every op, for a graph input) and that read it or come before
  // a reader (every op, for a graph output). Every op of a segment between
  // the producer's and the last reader's is one of them (a difference over
  // segments); in those two segments the ops are found with the segment's
  // bitsets: linear in the buffers times their segments' words, plus the
  // pairs counted. A segment without bitsets counts only the readers.
  std::vector<int64_t> across(segments + 1, 0);
  std::vector<uint64_t> steps, readers;
  auto add_bits = [&](int k, const std::vector<uint64_t>& bits, OpId producer, int64_t bytes) {
    const std::vector<OpId>& ops = reach.segment(k);
    for (size_t w = 0; w < bits.size(); ++w) {
      for (uint64_t b = bits[w]; b != 0; b &= b - 1) {
        const OpId u = ops[w * 64 + static_cast<size_t>(__builtin_ctzll(b))];
        if (u != producer) bounds[u] += bytes;
      }
    }
  };
  for (const ActivationBuffer& b : buffers.buffers()) {
    const int first = b.producer != kNoOp ? reach.segment_of(b.producer) : -1;
    if (b.producer != kNoOp) bounds[b.producer] += b.bytes;  // its own output
    int last = segments;  // the last reader's segment; past the end when live to the end
    if (!b.live_to_end) {
      if (b.users.empty()) continue;
      last = first;
      for (OpId user : b.users) last = std::max(last, reach.segment_of(user));
    }
    if (first + 1 < last) {
      across[first + 1] += b.bytes;
      across[last] -= b.bytes;
    }
    // Pass 0, the producer's segment: its descendants there (before a reader
    // there when no reader comes later). Pass 1, the last reader's segment
    // when later: the ops before a reader there.
    for (int pass = 0; pass < 2; ++pass) {
      const int k = pass == 0 ? first : last;
      if (k < 0 || k >= segments || (pass == 1 && last == first)) continue;
      const std::vector<OpId>& ops = reach.segment(k);
      if (ops.size() == 1) {
        if (ops[0] != b.producer) bounds[ops[0]] += b.bytes;
        continue;
      }
      const bool only_readers = k == last;  // the ops before a reader in k
      if (!reach.has_bits(k)) {
        // Only the readers in k are sure to see the buffer live.
        for (size_t i = 0; i < b.users.size(); ++i) {
          const OpId user = b.users[i];
          if (reach.segment_of(user) != k || user == b.producer) continue;
          if (std::find(b.users.begin(), b.users.begin() + static_cast<long>(i), user) !=
              b.users.begin() + static_cast<long>(i)) {
            continue;
          }
          bounds[user] += b.bytes;
        }
        continue;
      }
      const size_t words = reach.words(k);
      steps.assign(words, ~uint64_t{0});
      if (ops.size() % 64 != 0) steps[words - 1] = (uint64_t{1} << (ops.size() % 64)) - 1;
      if (pass == 0) {
        const uint64_t* after = reach.Descendants(b.producer);
        for (size_t w = 0; w < words; ++w) steps[w] &= after[w];
      }
      if (only_readers) {
        readers.assign(words, 0);
        for (OpId user : b.users) {
          if (reach.segment_of(user) != k) continue;
          const uint64_t* before = reach.Ancestors(user);
          for (size_t w = 0; w < words; ++w) readers[w] |= before[w];
          const int i = reach.local_index(user);
          readers[i / 64] |= uint64_t{1} << (i % 64);
        }
        for (size_t w = 0; w < words; ++w) steps[w] &= readers[w];
      }
      add_bits(k, steps, b.producer, b.bytes);
    }
  }
  int64_t running = 0;
  for (int k = 0; k < segments; ++k) {
    running += across[k];
    if (running == 0) continue;
    for (OpId u : reach.segment(k)) bounds[u] += running;
  }
  return bounds;
}

int64_t FinalStepLowerBound(const BufferModel& buffers) {
  int64_t bytes = buffers.resident_bytes();
  for (const ActivationBuffer& b : buffers.buffers()) {
    if (b.live_to_end) bytes += b.bytes;
  }
  return bytes;
}

int64_t LowerBoundBytes(const BufferModel& buffers) {
  std::vector<int64_t> bounds = ClosureStepLowerBounds(buffers, Reachability(buffers.graph()));
  return *std::max_element(bounds.begin(), bounds.end());
}

}  // namespace serenity
