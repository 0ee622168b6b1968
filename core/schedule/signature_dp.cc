#include "core/schedule/signature_dp.h"

#include <algorithm>
#include <chrono>
#include <string>

#include "absl/container/flat_hash_map.h"

namespace serenity {
namespace {

struct Entry {
  std::string signature;  // bitset of scheduled ops, as bytes
  int64_t peak = 0;
  int64_t live = 0;
  int32_t parent = -1;    // index in the previous level
  OpId op = kNoOp;        // the op that led here
};

bool Has(const std::string& signature, OpId u) {
  return (static_cast<unsigned char>(signature[u / 8]) >> (u % 8)) & 1;
}

}  // namespace

MinimizeResult SignatureDp(const BufferModel& buffers, const SearchOptions& options, int64_t budget,
                           const Subproblem& part) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point deadline =
      options.time_limit_seconds > 0
          ? Clock::now() + std::chrono::microseconds(static_cast<int64_t>(options.time_limit_seconds * 1e6))
          : Clock::time_point::max();
  const Graph& graph = buffers.graph();
  std::vector<OpId> ops = part.ops;
  if (ops.empty()) {
    for (OpId u = 0; u < graph.num_ops(); ++u) ops.push_back(u);
  }
  const int n = static_cast<int>(ops.size());
  int64_t unused_inputs = 0;
  for (const ActivationBuffer& b : buffers.buffers()) {
    if (b.producer == kNoOp && b.users.empty() && !b.live_to_end) unused_inputs += b.bytes;
  }

  MinimizeResult result;
  std::vector<std::vector<Entry>> levels(1);
  Entry root;
  root.signature.assign((static_cast<size_t>(graph.num_ops()) + 7) / 8, '\0');
  MemoryTracker prefix(buffers);
  for (OpId u : part.done) {
    prefix.Run(u);
    root.signature[u / 8] = static_cast<char>(root.signature[u / 8] | (1 << (u % 8)));
  }
  root.live = prefix.live_bytes();
  levels[0].push_back(root);
  for (int level = 0; level < n; ++level) {
    std::vector<Entry> next;
    absl::flat_hash_map<std::string, int32_t> index;
    bool out_of_time = false;
    for (int32_t e = 0; e < static_cast<int32_t>(levels[level].size()) && !out_of_time; ++e) {
      if (e % 1024 == 1023) out_of_time = Clock::now() > deadline;
      const Entry& entry = levels[level][e];
      for (OpId u : ops) {
        if (Has(entry.signature, u)) continue;
        const Op& op = graph.op(u);
        bool ready = true;
        for (OpId p : op.predecessors) ready = ready && Has(entry.signature, p);
        if (!ready) continue;
        int64_t step = entry.live + op.workspace_bytes;
        int64_t after = entry.live - (level == 0 && part.done.empty() ? unused_inputs : 0);
        for (BufferId b : buffers.allocates(u)) {
          const ActivationBuffer& buffer = buffers.buffers()[b];
          step += buffer.bytes;
          if (!buffer.users.empty() || buffer.live_to_end) after += buffer.bytes;
        }
        for (BufferId b : buffers.reads(u)) {
          const ActivationBuffer& buffer = buffers.buffers()[b];
          if (buffer.live_to_end) continue;
          bool last = true;
          for (OpId user : buffer.users) last = last && (user == u || Has(entry.signature, user));
          if (last) after -= buffer.bytes;
        }
        const int64_t peak = std::max(entry.peak, step);
        if (peak > budget) continue;
        Entry child{entry.signature, peak, after, e, u};
        child.signature[u / 8] = static_cast<char>(child.signature[u / 8] | (1 << (u % 8)));
        auto [it, inserted] = index.emplace(child.signature, static_cast<int32_t>(next.size()));
        if (inserted) {
          next.push_back(std::move(child));
        } else if (peak < next[it->second].peak) {  // Theorem 1: keep the lower peak
          next[it->second] = std::move(child);
        }
      }
    }
    result.stats.states += static_cast<int64_t>(levels[level].size());
    result.stats.peak_memo_bytes =
        std::max<int64_t>(result.stats.peak_memo_bytes,
                          static_cast<int64_t>(next.size() * (sizeof(Entry) + root.signature.size())));
    if (next.empty() || static_cast<int64_t>(next.size()) > options.max_states || out_of_time ||
        Clock::now() > deadline) {
      result.stats.hit_limit = !next.empty();
      return result;  // empty order: no answer
    }
    // Only parents and ops are needed for older levels.
    for (Entry& entry : levels[level]) std::string().swap(entry.signature);
    levels.push_back(std::move(next));
  }
  const Entry& last = levels[n].front();
  result.peak_bytes = last.peak;
  result.order.resize(n);
  int32_t e = 0;
  for (int level = n; level > 0; --level) {
    const Entry& entry = levels[level][e];
    result.order[level - 1] = entry.op;
    e = entry.parent;
  }
  result.lower_bound_bytes = result.peak_bytes;
  // Pruning by a budget keeps every path within it, so a completed DP is
  // exact whatever the budget was.
  result.optimal = true;
  return result;
}

}  // namespace serenity
