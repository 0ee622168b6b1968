#include "core/schedule/signature_dp.h"

#include <algorithm>
#include <chrono>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "core/schedule/signature.h"

namespace serenity {
namespace {

struct Entry {
  std::string signature;  // bitset of scheduled ops, as bytes
  int64_t peak = 0;
  int64_t live = 0;
  int32_t parent = -1;  // index in the previous level
  OpId op = kNoOp;      // the op that led here
};

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

  MinimizeResult result;
  std::vector<std::vector<Entry>> levels(1);
  Entry root;
  root.signature = EmptySignature(graph.num_ops());
  MemoryTracker prefix(buffers);
  for (OpId u : part.done) {
    prefix.Run(u);
    Insert(root.signature, u);
  }
  root.live = prefix.live_bytes();
  levels[0].push_back(root);
  for (int level = 0; level < n; ++level) {
    std::vector<Entry> next;
    absl::flat_hash_map<std::string, int32_t> index;
    bool out_of_time = false;
    for (int32_t e = 0; e < static_cast<int32_t>(levels[level].size()) && !out_of_time; ++e) {
      if (e % 1024 == 1023) out_of_time = Clock::now() > deadline || Cancelled(options);
      const Entry& entry = levels[level][e];
      for (OpId u : ops) {
        if (!IsReady(graph, entry.signature, u)) continue;
        const StepCost cost = CostOfRunning(buffers, entry.signature, entry.live, u, level == 0 && part.done.empty());
        const int64_t step = cost.step, after = cost.after;
        const int64_t peak = std::max(entry.peak, step);
        if (peak > budget) continue;
        Entry child{entry.signature, peak, after, e, u};
        Insert(child.signature, u);
        auto [it, inserted] = index.emplace(child.signature, static_cast<int32_t>(next.size()));
        if (inserted) {
          next.push_back(std::move(child));
        } else if (peak < next[it->second].peak) {  // Theorem 1: keep the lower peak
          next[it->second] = std::move(child);
        }
      }
    }
    result.stats.states += static_cast<int64_t>(levels[level].size());
    result.stats.peak_memo_bytes = std::max<int64_t>(
        result.stats.peak_memo_bytes, static_cast<int64_t>(next.size() * (sizeof(Entry) + root.signature.size())));
    if (next.empty() || static_cast<int64_t>(next.size()) > options.max_states || out_of_time ||
        Clock::now() > deadline || Cancelled(options)) {
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
