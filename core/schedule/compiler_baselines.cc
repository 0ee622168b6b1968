#include "core/schedule/compiler_baselines.h"

#include <algorithm>
#include <functional>

#include "core/memory/simulator.h"
#include "core/schedule/baselines.h"
#include "core/schedule/list_schedule.h"

namespace serenity {
namespace {

// Post-order DFS from the ops that produce graph outputs (then any other
// sinks), visiting each op's predecessors in the order `visit_order` gives.
std::vector<OpId> PostOrder(const Graph& graph, const std::function<std::vector<OpId>(OpId)>& visit_order) {
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
  struct Frame {
    OpId op;
    std::vector<OpId> preds;
    size_t next = 0;
  };
  for (OpId root : roots) {
    if (visited[root]) continue;
    visited[root] = true;
    std::vector<Frame> stack;
    stack.push_back({root, visit_order(root)});
    while (!stack.empty()) {
      Frame& top = stack.back();
      if (top.next < top.preds.size()) {
        OpId p = top.preds[top.next++];
        if (!visited[p]) {
          visited[p] = true;
          stack.push_back({p, visit_order(p)});
        }
        continue;
      }
      order.push_back(top.op);
      stack.pop_back();
    }
  }
  return order;
}

// `u`'s predecessors sorted by `before` (stable over ascending ids).
std::vector<OpId> SortedPredecessors(const Graph& graph, OpId u, const std::function<bool(OpId, OpId)>& before) {
  std::vector<OpId> preds = graph.op(u).predecessors;
  std::stable_sort(preds.begin(), preds.end(), before);
  return preds;
}

// The order with the lowest peak among `candidates`; ties keep the earlier.
std::vector<OpId> Best(const BufferModel& buffers, std::vector<std::vector<OpId>> candidates) {
  size_t best = 0;
  int64_t best_peak = PeakOf(buffers, candidates[0]);
  for (size_t i = 1; i < candidates.size(); ++i) {
    int64_t peak = PeakOf(buffers, candidates[i]);
    if (peak < best_peak) {
      best = i;
      best_peak = peak;
    }
  }
  return std::move(candidates[best]);
}

}  // namespace

std::vector<OpId> InductorOrder(const BufferModel& buffers, const ListScheduleLimits& limits) {
  const Graph& graph = buffers.graph();
  // LPMF: the running peak is part of the key, so candidates that stay under
  // it tie on the first component and are told apart by net allocation.
  std::vector<OpId> lpmf = ListSchedule(buffers, ListRule::kLeastPeakFirst, limits);
  // BFS: depth from the sources, then file position.
  std::vector<int> depth(graph.num_ops(), 0);
  for (OpId u : FileOrder(graph)) {
    for (OpId p : graph.op(u).predecessors) depth[u] = std::max(depth[u], depth[p] + 1);
  }
  std::vector<OpId> bfs(graph.num_ops());
  for (OpId u = 0; u < graph.num_ops(); ++u) bfs[u] = u;
  std::stable_sort(bfs.begin(), bfs.end(), [&](OpId a, OpId b) { return depth[a] < depth[b]; });
  // DFS: inputs carrying more bytes first.
  std::vector<int64_t> out_bytes(graph.num_ops(), 0);
  for (OpId u = 0; u < graph.num_ops(); ++u) {
    for (TensorId t : graph.op(u).outputs) out_bytes[u] += graph.tensor(t).bytes;
  }
  std::vector<OpId> dfs = PostOrder(graph, [&](OpId u) {
    return SortedPredecessors(graph, u, [&](OpId a, OpId b) { return out_bytes[a] > out_bytes[b]; });
  });
  return Best(buffers, {FileOrder(graph), std::move(lpmf), std::move(bfs), std::move(dfs)});
}

std::vector<OpId> XlaOrder(const BufferModel& buffers, const ListScheduleLimits& limits) {
  const Graph& graph = buffers.graph();
  // Most bytes freed net first: the smallest change of live bytes.
  std::vector<OpId> list = ListSchedule(buffers, ListRule::kLeastNetAllocation, limits);
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
  std::vector<OpId> dfs = PostOrder(graph, [&](OpId u) {
    return SortedPredecessors(graph, u, [&](OpId a, OpId b) {
      if (extra_users[a] != extra_users[b]) return extra_users[a] > extra_users[b];
      return total_bytes[a] > total_bytes[b];
    });
  });
  // Plain post-order: producers in the order the op reads their tensors.
  std::vector<OpId> post = PostOrder(graph, [&](OpId u) {
    std::vector<OpId> preds;
    for (TensorId t : graph.op(u).inputs) {
      OpId p = graph.tensor(t).producer;
      if (p != kNoOp && std::find(preds.begin(), preds.end(), p) == preds.end()) preds.push_back(p);
    }
    return preds;
  });
  return Best(buffers, {std::move(list), std::move(dfs), std::move(post)});
}

}  // namespace serenity
