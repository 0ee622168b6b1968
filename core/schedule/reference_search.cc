#include "core/schedule/reference_search.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <queue>
#include <string>
#include <tuple>

#include "absl/container/flat_hash_map.h"
#include "core/schedule/signature.h"

namespace serenity {
namespace {

using Clock = std::chrono::steady_clock;

Clock::time_point DeadlineOf(const SearchOptions& options) {
  return options.time_limit_seconds > 0
             ? Clock::now() + std::chrono::microseconds(static_cast<int64_t>(options.time_limit_seconds * 1e6))
             : Clock::time_point::max();
}

}  // namespace

MinimizeResult ExhaustiveSearch(const BufferModel& buffers, const SearchOptions& options) {
  const Graph& graph = buffers.graph();
  const int n = graph.num_ops();
  const Clock::time_point deadline = DeadlineOf(options);
  MinimizeResult result;
  result.peak_bytes = INT64_MAX;
  std::vector<OpId> prefix;
  std::string signature = EmptySignature(n);
  bool gave_up = false;
  std::function<void(int64_t, int64_t)> extend = [&](int64_t live, int64_t peak) {
    if (gave_up) return;
    if (++result.stats.states > options.max_states ||
        (result.stats.states % 4096 == 0 && (Clock::now() > deadline || Cancelled(options)))) {
      gave_up = true;
      return;
    }
    if (static_cast<int>(prefix.size()) == n) {
      result.peak_bytes = peak;
      result.order = prefix;
      return;
    }
    for (OpId u = 0; u < n && !gave_up; ++u) {
      if (!IsReady(graph, signature, u)) continue;
      const StepCost cost = CostOfRunning(buffers, signature, live, u, prefix.empty());
      const int64_t next_peak = std::max(peak, cost.step);
      if (next_peak >= result.peak_bytes) continue;  // cannot beat the best order
      prefix.push_back(u);
      Insert(signature, u);
      extend(cost.after, next_peak);
      signature[u / 8] = static_cast<char>(signature[u / 8] & ~(1 << (u % 8)));
      prefix.pop_back();
    }
  };
  extend(buffers.resident_bytes() + buffers.input_bytes(), 0);
  result.stats.hit_limit = gave_up;
  result.optimal = !gave_up && !result.order.empty();
  if (result.order.empty()) result.peak_bytes = 0;
  result.lower_bound_bytes = result.optimal ? result.peak_bytes : 0;
  return result;
}

MinimizeResult BestFirstSearch(const BufferModel& buffers, const SearchOptions& options) {
  const Graph& graph = buffers.graph();
  const int n = graph.num_ops();
  const Clock::time_point deadline = DeadlineOf(options);
  struct Node {
    std::string signature;
    int64_t peak, live;
    int32_t parent;
    OpId op;
    int depth;
  };
  std::vector<Node> nodes;
  absl::flat_hash_map<std::string, int32_t> best;     // signature -> node with the lowest peak
  using Key = std::tuple<int64_t, int64_t, int32_t>;  // peak, live, node
  std::priority_queue<Key, std::vector<Key>, std::greater<Key>> open;
  nodes.push_back({EmptySignature(n), 0, buffers.resident_bytes() + buffers.input_bytes(), -1, kNoOp, 0});
  best.emplace(nodes[0].signature, 0);
  open.emplace(0, nodes[0].live, 0);
  MinimizeResult result;
  while (!open.empty()) {
    const auto [peak, live, index] = open.top();
    open.pop();
    if (nodes[index].peak != peak || best.at(nodes[index].signature) != index) continue;  // superseded
    ++result.stats.states;
    if (nodes[index].depth == n) {
      result.order.resize(n);
      for (int32_t i = index; nodes[i].parent >= 0; i = nodes[i].parent) result.order[nodes[i].depth - 1] = nodes[i].op;
      result.peak_bytes = peak;
      result.lower_bound_bytes = peak;
      result.optimal = true;
      return result;
    }
    if (static_cast<int64_t>(nodes.size()) > options.max_states ||
        (result.stats.states % 4096 == 0 && (Clock::now() > deadline || Cancelled(options)))) {
      result.stats.hit_limit = true;
      return result;
    }
    for (OpId u = 0; u < n; ++u) {
      if (!IsReady(graph, nodes[index].signature, u)) continue;
      const StepCost cost = CostOfRunning(buffers, nodes[index].signature, live, u, nodes[index].depth == 0);
      Node child{nodes[index].signature, std::max(peak, cost.step), cost.after, index, u, nodes[index].depth + 1};
      Insert(child.signature, u);
      auto it = best.find(child.signature);
      if (it != best.end() && nodes[it->second].peak <= child.peak) continue;
      const int32_t id = static_cast<int32_t>(nodes.size());
      open.emplace(child.peak, child.live, id);
      if (it != best.end()) {
        it->second = id;
      } else {
        best.emplace(child.signature, id);
      }
      nodes.push_back(std::move(child));
    }
  }
  return result;
}

}  // namespace serenity
