#include "core/schedule/baselines.h"

#include <algorithm>
#include <deque>
#include <queue>

namespace serenity {
namespace {

std::vector<int> Indegrees(const Graph& graph) {
  std::vector<int> indegree(graph.num_ops());
  for (OpId u = 0; u < graph.num_ops(); ++u) {
    indegree[u] = static_cast<int>(graph.op(u).predecessors.size());
  }
  return indegree;
}

}  // namespace

std::vector<OpId> FileOrder(const Graph& graph) {
  // A topological file (every op after its predecessors) is its own order:
  // the smallest ready position is always the next one.
  std::vector<OpId> order(graph.num_ops());
  bool topological = true;
  for (OpId u = 0; u < graph.num_ops() && topological; ++u) {
    const std::vector<OpId>& preds = graph.op(u).predecessors;
    topological = preds.empty() || preds.back() < u;
    order[u] = u;
  }
  if (topological) return order;
  order.clear();
  std::vector<int> indegree = Indegrees(graph);
  std::priority_queue<OpId, std::vector<OpId>, std::greater<OpId>> ready;
  for (OpId u = 0; u < graph.num_ops(); ++u) {
    if (indegree[u] == 0) ready.push(u);
  }
  while (!ready.empty()) {
    OpId u = ready.top();
    ready.pop();
    order.push_back(u);
    for (OpId v : graph.op(u).successors) {
      if (--indegree[v] == 0) ready.push(v);
    }
  }
  return order;
}

std::vector<OpId> KahnOrder(const Graph& graph) {
  std::vector<int> indegree = Indegrees(graph);
  std::deque<OpId> queue;
  for (OpId u = 0; u < graph.num_ops(); ++u) {
    if (indegree[u] == 0) queue.push_back(u);
  }
  std::vector<OpId> order;
  order.reserve(graph.num_ops());
  while (!queue.empty()) {
    OpId u = queue.front();
    queue.pop_front();
    order.push_back(u);
    // successors are ascending, so simultaneous arrivals enter by position.
    for (OpId v : graph.op(u).successors) {
      if (--indegree[v] == 0) queue.push_back(v);
    }
  }
  return order;
}

std::vector<OpId> GreedyOrder(const BufferModel& buffers, const ListScheduleLimits& limits) {
  return ListSchedule(buffers, ListRule::kLeastStepBytes, limits);
}

}  // namespace serenity
