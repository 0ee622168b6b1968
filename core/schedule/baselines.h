// Baseline orders, each a valid topological order of all ops. They are the
// yardsticks every plan is compared with and the starting upper bounds of the
// searches.
#ifndef SERENITY_CORE_SCHEDULE_BASELINES_H_
#define SERENITY_CORE_SCHEDULE_BASELINES_H_

#include <chrono>
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

// When a list schedule must stop choosing: at `deadline` (checked every 64
// steps) it runs the remaining ops in a plain topological order (the last
// op to become ready first) and sets `*cut` (when not null). Each choice
// looks at every ready op: a fan-out of n ops costs n^2 key evaluations.
struct ListScheduleLimits {
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  bool* cut = nullptr;
};

// A list schedule: repeatedly runs the ready op with the smallest
// `key(tracker, op)`, where `tracker` holds the memory state of the ops run
// so far. The key must be totally ordered and should end with the op id so
// that ties break by file position. Within `limits`.
template <typename Key>
std::vector<OpId> ListSchedule(const BufferModel& buffers, Key key, const ListScheduleLimits& limits = {}) {
  const Graph& graph = buffers.graph();
  std::vector<int> indegree(graph.num_ops());
  std::vector<OpId> ready, order;
  for (OpId u = 0; u < graph.num_ops(); ++u) {
    indegree[u] = static_cast<int>(graph.op(u).predecessors.size());
    if (indegree[u] == 0) ready.push_back(u);
  }
  MemoryTracker tracker(buffers);
  order.reserve(graph.num_ops());
  const bool timed = limits.deadline != std::chrono::steady_clock::time_point::max();
  bool choosing = true;
  while (!ready.empty()) {
    if (timed && choosing && order.size() % 64 == 0 && std::chrono::steady_clock::now() >= limits.deadline) {
      choosing = false;
      if (limits.cut != nullptr) *limits.cut = true;
    }
    auto best = choosing ? ready.begin() : ready.end() - 1;
    if (choosing) {
      auto best_key = key(tracker, *best);
      for (auto it = ready.begin() + 1; it < ready.end(); ++it) {
        auto it_key = key(tracker, *it);
        if (it_key < best_key) {
          best = it;
          best_key = std::move(it_key);
        }
      }
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
std::vector<OpId> GreedyOrder(const BufferModel& buffers, const ListScheduleLimits& limits = {});

}  // namespace serenity

#endif  // SERENITY_CORE_SCHEDULE_BASELINES_H_
