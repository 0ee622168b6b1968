#include "core/rewrite/follow_order.h"

#include <functional>
#include <queue>
#include <utility>

#include "absl/container/flat_hash_map.h"

namespace serenity {

std::vector<OpId> FollowOrder(const Graph& graph, const std::vector<std::string>& reference) {
  absl::flat_hash_map<std::string, int> position;
  position.reserve(reference.size());
  for (size_t i = 0; i < reference.size(); ++i) position.emplace(reference[i], static_cast<int>(i));
  const int n = graph.num_ops();
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
