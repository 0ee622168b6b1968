#include "core/rewrite/follow_order.h"

#include <algorithm>
#include <functional>
#include <queue>
#include <utility>

#include "absl/container/flat_hash_map.h"

namespace serenity {

namespace {

// kWhenNeeded: each named op in turn after its ancestors not run yet.
std::vector<OpId> WhenNeeded(const Graph& graph, const std::vector<OpId>& named) {
  const int n = graph.num_ops();
  std::vector<bool> run(n, false);
  std::vector<OpId> order;
  order.reserve(n);
  // Depth-first over the inputs, iteratively: (op, next predecessor index).
  std::vector<std::pair<OpId, size_t>> stack;
  const auto run_after_ancestors = [&](OpId target) {
    if (run[target]) return;
    stack.emplace_back(target, 0);
    while (!stack.empty()) {
      auto& [u, next] = stack.back();
      const std::vector<OpId>& predecessors = graph.op(u).predecessors;
      while (next < predecessors.size() && run[predecessors[next]]) ++next;
      if (next < predecessors.size()) {
        const OpId p = predecessors[next];
        run[p] = true;  // marked on the way in: the graph has no cycle
        stack.emplace_back(p, 0);
        continue;
      }
      run[u] = true;
      order.push_back(u);
      stack.pop_back();
    }
  };
  for (OpId u : named) run_after_ancestors(u);
  for (OpId u = 0; u < n; ++u) run_after_ancestors(u);
  return order;
}

}  // namespace

std::vector<OpId> FollowOrder(const Graph& graph, const std::vector<std::string>& reference, NewOps new_ops) {
  absl::flat_hash_map<std::string, int> position;
  position.reserve(reference.size());
  for (size_t i = 0; i < reference.size(); ++i) position.emplace(reference[i], static_cast<int>(i));
  const int n = graph.num_ops();
  if (new_ops == NewOps::kWhenNeeded) {
    std::vector<std::pair<int, OpId>> named;
    for (OpId u = 0; u < n; ++u) {
      if (auto it = position.find(graph.op(u).name); it != position.end()) named.emplace_back(it->second, u);
    }
    std::sort(named.begin(), named.end());
    std::vector<OpId> ops;
    ops.reserve(named.size());
    for (const auto& entry : named) ops.push_back(entry.second);
    return WhenNeeded(graph, ops);
  }
  // An op not named gets -1: it runs before any named op that is ready.
  std::vector<int> key(n, -1);
  std::vector<int> indegree(n, 0);
  using Entry = std::pair<int, OpId>;  // (key, op), smallest first
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> ready;
  for (OpId u = 0; u < n; ++u) {
    if (auto it = position.find(graph.op(u).name); it != position.end()) key[u] = it->second;
    indegree[u] = static_cast<int>(graph.op(u).predecessors.size());
    if (indegree[u] == 0) ready.emplace(key[u], u);
  }
  std::vector<OpId> order;
  order.reserve(n);
  while (!ready.empty()) {
    const OpId u = ready.top().second;
    ready.pop();
    order.push_back(u);
    for (OpId v : graph.op(u).successors) {
      if (--indegree[v] == 0) ready.emplace(key[v], v);
    }
  }
  return order;
}

std::vector<std::string> OpNamesInOrder(const Graph& graph, const std::vector<OpId>& order) {
  std::vector<std::string> names;
  names.reserve(order.size());
  for (OpId u : order) names.push_back(graph.op(u).name);
  return names;
}

}  // namespace serenity
