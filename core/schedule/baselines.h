// Baseline orders, each a valid topological order of all ops. They are the
// yardsticks every plan is compared with and the starting upper bounds of the
// searches.
#ifndef SERENITY_CORE_SCHEDULE_BASELINES_H_
#define SERENITY_CORE_SCHEDULE_BASELINES_H_

#include <vector>

#include "core/graph/graph.h"
#include "core/memory/buffer_model.h"

namespace serenity {

// The order of the input file. When the file's op list is not topological
// (our Graph message allows that), the stable topological sort that always
// runs the ready op with the smallest file position.
std::vector<OpId> FileOrder(const Graph& graph);

// Kahn's algorithm with a FIFO queue: ops run in the order they become ready;
// ops that become ready at the same time (initially, or after the same op)
// enter the queue by file position.
std::vector<OpId> KahnOrder(const Graph& graph);

// A list schedule: repeatedly runs the ready op with the smallest
// `key(tracker, op)`, where `tracker` holds the memory state of the ops run
// so far. The key must be totally ordered and should end with the op id so
// that ties break by file position.
template <typename Key>
std::vector<OpId> ListSchedule(const BufferModel& buffers, Key key) {
  const Graph& graph = buffers.graph();
  std::vector<int> indegree(graph.num_ops());
  std::vector<OpId> ready, order;
  for (OpId u = 0; u < graph.num_ops(); ++u) {
    indegree[u] = static_cast<int>(graph.op(u).predecessors.size());
    if (indegree[u] == 0) ready.push_back(u);
  }
  MemoryTracker tracker(buffers);
  order.reserve(graph.num_ops());
  while (!ready.empty()) {
    auto best = ready.begin();
    for (auto it = ready.begin() + 1; it < ready.end(); ++it) {
      if (key(tracker, *it) < key(tracker, *best)) best = it;
    }
    const OpId u = *best;
    ready.erase(best);
    tracker.Run(u);
    order.push_back(u);
    for (OpId v : graph.op(u).successors) {
      if (--indegree[v] == 0) ready.push_back(v);
    }
  }
  return order;
}

// The memory-greedy order: at each step run the ready op whose step needs the
// least live memory (the bytes live while it runs); ties go to the op that
// leaves the fewest bytes live after it, then to the smallest file position.
std::vector<OpId> GreedyOrder(const BufferModel& buffers);

}  // namespace serenity

#endif  // SERENITY_CORE_SCHEDULE_BASELINES_H_
