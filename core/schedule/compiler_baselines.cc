#include "core/schedule/compiler_baselines.h"

#include <algorithm>
#include <utility>

#include "core/memory/simulator.h"
#include "core/schedule/baselines.h"
#include "core/schedule/list_schedule.h"

namespace serenity {
namespace {

// The ops each op's post-order visit goes to, in visiting order: for op u,
// ops[start[u]] .. ops[start[u + 1] - 1].
struct VisitLists {
  std::vector<int32_t> start{0};
  std::vector<OpId> ops;
};

// Sorts [first, last) by `before`, keeping the order of equals (as
// std::stable_sort, without its buffer for the short lists of most ops).
template <typename Before>
void StableSort(std::vector<OpId>::iterator first, std::vector<OpId>::iterator last, Before before) {
  if (last - first > 16) {
    std::stable_sort(first, last, before);
    return;
  }
  for (auto it = first; it != last; ++it) {
    const OpId u = *it;
    auto hole = it;
    for (; hole != first && before(u, *(hole - 1)); --hole) *hole = *(hole - 1);
    *hole = u;
  }
}

// Every op's predecessors sorted by `before` (stable over ascending ids).
template <typename Before>
VisitLists SortedPredecessors(const Graph& graph, Before before) {
  VisitLists lists;
  lists.start.reserve(graph.num_ops() + 1);
  for (OpId u = 0; u < graph.num_ops(); ++u) {
    const std::vector<OpId>& preds = graph.op(u).predecessors;
    lists.ops.insert(lists.ops.end(), preds.begin(), preds.end());
    StableSort(lists.ops.end() - preds.size(), lists.ops.end(), before);
    lists.start.push_back(static_cast<int32_t>(lists.ops.size()));
  }
  return lists;
}

// Post-order DFS from the ops that produce graph outputs (then any other
// sinks), visiting each op's predecessors in the order `lists` gives.
std::vector<OpId> PostOrder(const Graph& graph, const VisitLists& lists) {
  // Roots without repeats, marked (a training graph has tens of thousands
  // of outputs: a search of the list per root was quadratic).
  std::vector<OpId> roots;
  std::vector<bool> is_root(graph.num_ops(), false);
  auto add_root = [&](OpId u) {
    if (!is_root[u]) {
      is_root[u] = true;
      roots.push_back(u);
    }
  };
  for (TensorId t : graph.outputs()) {
    OpId p = graph.tensor(t).producer;
    if (p != kNoOp) add_root(p);
  }
  for (OpId u = 0; u < graph.num_ops(); ++u) {
    if (graph.op(u).successors.empty()) add_root(u);
  }
  std::vector<bool> visited(graph.num_ops(), false);
  std::vector<OpId> order;
  order.reserve(graph.num_ops());
  // Each frame: an op and the position of the next op its visit goes to.
  std::vector<std::pair<OpId, int32_t>> stack;
  for (OpId root : roots) {
    if (visited[root]) continue;
    visited[root] = true;
    stack.emplace_back(root, lists.start[root]);
    while (!stack.empty()) {
      auto& [op, next] = stack.back();
      if (next < lists.start[op + 1]) {
        const OpId p = lists.ops[next++];
        if (!visited[p]) {
          visited[p] = true;
          stack.emplace_back(p, lists.start[p]);
        }
        continue;
      }
      order.push_back(op);
      stack.pop_back();
    }
  }
  return order;
}

// A candidate order, and its peak when known (-1: replay the order).
struct Candidate {
  std::vector<OpId> order;
  int64_t peak = -1;
};

// The order with the lowest peak among `candidates`; ties keep the earlier.
// A candidate's replay stops once its running peak reaches the best's.
std::vector<OpId> Best(const BufferModel& buffers, std::vector<Candidate> candidates) {
  size_t best = 0;
  int64_t best_peak = candidates[0].peak >= 0 ? candidates[0].peak : PeakOf(buffers, candidates[0].order);
  for (size_t i = 1; i < candidates.size(); ++i) {
    int64_t peak = candidates[i].peak;
    if (peak < 0) {
      MemoryTracker tracker(buffers);
      for (OpId u : candidates[i].order) {
        if (tracker.Run(u) >= best_peak) break;
      }
      peak = tracker.peak_bytes();
    }
    if (peak < best_peak) {
      best = i;
      best_peak = peak;
    }
  }
  return std::move(candidates[best].order);
}

}  // namespace

std::vector<OpId> InductorOrder(const BufferModel& buffers, const ListScheduleLimits& limits) {
  const Graph& graph = buffers.graph();
  // LPMF: the running peak is part of the key, so candidates that stay under
  // it tie on the first component and are told apart by net allocation.
  int64_t lpmf_peak = 0;
  std::vector<OpId> lpmf = ListSchedule(buffers, ListRule::kLeastPeakFirst, limits, &lpmf_peak);
  // BFS: depth from the sources, then file position (a counting sort).
  std::vector<OpId> file = FileOrder(graph);
  std::vector<int> depth(graph.num_ops(), 0);
  int max_depth = 0;
  for (OpId u : file) {
    for (OpId p : graph.op(u).predecessors) depth[u] = std::max(depth[u], depth[p] + 1);
    max_depth = std::max(max_depth, depth[u]);
  }
  std::vector<int> depth_start(max_depth + 2, 0);
  for (OpId u = 0; u < graph.num_ops(); ++u) ++depth_start[depth[u] + 1];
  for (int d = 0; d <= max_depth; ++d) depth_start[d + 1] += depth_start[d];
  std::vector<OpId> bfs(graph.num_ops());
  for (OpId u = 0; u < graph.num_ops(); ++u) bfs[depth_start[depth[u]]++] = u;
  // DFS: inputs carrying more bytes first.
  std::vector<int64_t> out_bytes(graph.num_ops(), 0);
  for (OpId u = 0; u < graph.num_ops(); ++u) {
    for (TensorId t : graph.op(u).outputs) out_bytes[u] += graph.tensor(t).bytes;
  }
  std::vector<OpId> dfs =
      PostOrder(graph, SortedPredecessors(graph, [&](OpId a, OpId b) { return out_bytes[a] > out_bytes[b]; }));
  return Best(buffers, {{std::move(file)}, {std::move(lpmf), lpmf_peak}, {std::move(bfs)}, {std::move(dfs)}});
}

std::vector<OpId> XlaOrder(const BufferModel& buffers, const ListScheduleLimits& limits) {
  const Graph& graph = buffers.graph();
  // Most bytes freed net first: the smallest change of live bytes.
  int64_t list_peak = 0;
  std::vector<OpId> list = ListSchedule(buffers, ListRule::kLeastNetAllocation, limits, &list_peak);
  // Extra readers of each op's outputs, and the bytes defined by the op and
  // its ancestors (counted along every path, as a cheap size estimate).
  std::vector<int> extra_users(graph.num_ops(), 0);
  std::vector<int64_t> total_bytes(graph.num_ops(), 0);
  for (OpId u : FileOrder(graph)) {
    for (TensorId t : graph.op(u).outputs) {
      total_bytes[u] += graph.tensor(t).bytes;
      extra_users[u] += std::max(0, static_cast<int>(graph.tensor(t).consumers.size()) - 1);
    }
    for (OpId p : graph.op(u).predecessors) total_bytes[u] = std::min(INT64_MAX / 2, total_bytes[u] + total_bytes[p]);
  }
  std::vector<OpId> dfs = PostOrder(graph, SortedPredecessors(graph, [&](OpId a, OpId b) {
                                      if (extra_users[a] != extra_users[b]) return extra_users[a] > extra_users[b];
                                      return total_bytes[a] > total_bytes[b];
                                    }));
  // Plain post-order: producers in the order the op reads their tensors
  // (each once: `listed_for` marks the op whose list has it).
  VisitLists producers;
  producers.start.reserve(graph.num_ops() + 1);
  std::vector<OpId> listed_for(graph.num_ops(), kNoOp);
  for (OpId u = 0; u < graph.num_ops(); ++u) {
    for (TensorId t : graph.op(u).inputs) {
      const OpId p = graph.tensor(t).producer;
      if (p == kNoOp || listed_for[p] == u) continue;
      listed_for[p] = u;
      producers.ops.push_back(p);
    }
    producers.start.push_back(static_cast<int32_t>(producers.ops.size()));
  }
  std::vector<OpId> post = PostOrder(graph, producers);
  return Best(buffers, {{std::move(list), list_peak}, {std::move(dfs)}, {std::move(post)}});
}

}  // namespace serenity
