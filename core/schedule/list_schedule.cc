#include "core/schedule/list_schedule.h"

#include <algorithm>
#include <cstdint>
#include <limits>

namespace serenity {
namespace {

// The ready ops, a treap (one node per op, indexed by op id) keyed by
// (step, op) where `step` is the op's step bytes less the bytes live; each
// node keeps the op of least (after, op) in its subtree, `after` being the
// op's bytes after less the bytes live. Both figures stay valid while the
// bytes live change: the tracker adds the bytes live to each.
class ReadySet {
 public:
  explicit ReadySet(int num_ops) : nodes_(num_ops) {}

  bool empty() const { return root_ == kNoOp; }

  // Adds `u` (not in the set).
  void Insert(OpId u, int64_t step, int64_t after) {
    nodes_[u] = {step, after, kNoOp, kNoOp, u};
    root_ = InsertInto(root_, u);
  }

  // Removes `u` (in the set).
  void Erase(OpId u) { root_ = EraseFrom(root_, u); }

  // The least step of the ops in the set (not empty).
  int64_t LeastStep() const {
    OpId t = root_;
    while (nodes_[t].left != kNoOp) t = nodes_[t].left;
    return nodes_[t].step;
  }

  // The op of least (after, op) among those whose step is at most `limit`;
  // kNoOp when there is none.
  OpId LeastAfterUpTo(int64_t limit) const {
    OpId best = kNoOp;
    for (OpId t = root_; t != kNoOp;) {
      if (nodes_[t].step <= limit) {
        if (nodes_[t].left != kNoOp) best = LeastAfter(best, nodes_[nodes_[t].left].least_after);
        best = LeastAfter(best, t);
        t = nodes_[t].right;
      } else {
        t = nodes_[t].left;
      }
    }
    return best;
  }

 private:
  // A fixed pseudo-random heap priority per op (the treap's shape only,
  // never the answers).
  static uint64_t Priority(OpId u) {
    uint64_t x = static_cast<uint64_t>(u) + 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
  }

  bool KeyLess(OpId a, OpId b) const {
    return nodes_[a].step != nodes_[b].step ? nodes_[a].step < nodes_[b].step : a < b;
  }

  // Of `a` and `b` (either may be kNoOp), the one of least (after, op).
  OpId LeastAfter(OpId a, OpId b) const {
    if (a == kNoOp) return b;
    if (b == kNoOp) return a;
    if (nodes_[a].after != nodes_[b].after) return nodes_[a].after < nodes_[b].after ? a : b;
    return std::min(a, b);
  }

  void Update(OpId t) {
    OpId best = t;
    if (nodes_[t].left != kNoOp) best = LeastAfter(best, nodes_[nodes_[t].left].least_after);
    if (nodes_[t].right != kNoOp) best = LeastAfter(best, nodes_[nodes_[t].right].least_after);
    nodes_[t].least_after = best;
  }

  // Splits the subtree at `t` into the keys below `u`'s and the rest.
  void Split(OpId t, OpId u, OpId* below, OpId* rest) {
    if (t == kNoOp) {
      *below = *rest = kNoOp;
      return;
    }
    if (KeyLess(t, u)) {
      const OpId right = nodes_[t].right;
      Split(right, u, &nodes_[t].right, rest);
      *below = t;
    } else {
      const OpId left = nodes_[t].left;
      Split(left, u, below, &nodes_[t].left);
      *rest = t;
    }
    Update(t);
  }

  // Joins two subtrees, every key of `low` below every key of `high`.
  OpId Merge(OpId low, OpId high) {
    if (low == kNoOp) return high;
    if (high == kNoOp) return low;
    if (Priority(low) > Priority(high)) {
      nodes_[low].right = Merge(nodes_[low].right, high);
      Update(low);
      return low;
    }
    nodes_[high].left = Merge(low, nodes_[high].left);
    Update(high);
    return high;
  }

  OpId InsertInto(OpId t, OpId u) {
    if (t == kNoOp) return u;
    if (Priority(u) > Priority(t)) {
      Split(t, u, &nodes_[u].left, &nodes_[u].right);
      Update(u);
      return u;
    }
    if (KeyLess(u, t)) {
      nodes_[t].left = InsertInto(nodes_[t].left, u);
    } else {
      nodes_[t].right = InsertInto(nodes_[t].right, u);
    }
    Update(t);
    return t;
  }

  OpId EraseFrom(OpId t, OpId u) {
    if (t == u) return Merge(nodes_[t].left, nodes_[t].right);
    if (KeyLess(u, t)) {
      nodes_[t].left = EraseFrom(nodes_[t].left, u);
    } else {
      nodes_[t].right = EraseFrom(nodes_[t].right, u);
    }
    Update(t);
    return t;
  }

  // Node u holds op u while it is in the set.
  struct Node {
    int64_t step;
    int64_t after;
    OpId left, right;  // the subtrees (kNoOp: none)
    OpId least_after;  // the op of least (after, op) in the subtree
  };
  std::vector<Node> nodes_;
  OpId root_ = kNoOp;
};

// The ready op `rule` runs next (`ready` not empty).
OpId Choose(ListRule rule, const ReadySet& ready, const MemoryTracker& tracker) {
  switch (rule) {
    case ListRule::kLeastStepBytes:
      // Every op of least step bytes, then the least bytes after.
      return ready.LeastAfterUpTo(ready.LeastStep());
    case ListRule::kLeastPeakFirst: {
      // The ops whose step stays under the peak all tie at the peak; when
      // there is none, the least step bytes are the least running peak.
      const int64_t under_peak = tracker.peak_bytes() - tracker.live_bytes();
      return ready.LeastAfterUpTo(std::max(under_peak, ready.LeastStep()));
    }
    case ListRule::kLeastNetAllocation:
      return ready.LeastAfterUpTo(std::numeric_limits<int64_t>::max());
  }
  return kNoOp;
}

}  // namespace

std::vector<OpId> ListSchedule(const BufferModel& buffers, ListRule rule, const ListScheduleLimits& limits,
                               int64_t* peak_bytes) {
  const Graph& graph = buffers.graph();
  const int num_ops = graph.num_ops();
  const size_t num_buffers = buffers.buffers().size();
  // An op's figures (MemoryTracker) depend on the ops run so far only
  // through whether each buffer it reads (its in-place inputs among them)
  // has one reader left, and through whether any op ran (the first step
  // frees the graph inputs nobody reads, the same bytes whichever op runs
  // it). So they are recomputed when one of its buffers gets down to one
  // reader left (a buffer's users are the ops that read it), and for every
  // ready op after the first step.
  std::vector<int32_t> readers_left(num_buffers);
  for (size_t b = 0; b < num_buffers; ++b) readers_left[b] = static_cast<int32_t>(buffers.buffers()[b].users.size());

  // The ready ops, and when each became ready (`ready_since`, -1 when not
  // ready): the plain order after a cut runs the latest first.
  MemoryTracker tracker(buffers);
  ReadySet ready(num_ops);
  std::vector<int64_t> ready_since(num_ops, -1);
  int64_t num_became_ready = 0;
  auto add = [&](OpId u) {
    const int64_t live = tracker.live_bytes();
    ready.Insert(u, tracker.StepBytes(u) - live, tracker.BytesAfter(u) - live);
  };
  auto refresh = [&](OpId u) {
    ready.Erase(u);
    add(u);
  };
  std::vector<int> indegree(num_ops);
  for (OpId u = 0; u < num_ops; ++u) {
    indegree[u] = static_cast<int>(graph.op(u).predecessors.size());
    if (indegree[u] == 0) {
      ready_since[u] = num_became_ready++;
      add(u);
    }
  }

  std::vector<OpId> order;
  order.reserve(num_ops);
  const bool timed = limits.deadline != std::chrono::steady_clock::time_point::max();
  while (num_became_ready > static_cast<int64_t>(order.size())) {
    if (timed && order.size() % 64 == 0 && std::chrono::steady_clock::now() >= limits.deadline) {
      if (limits.cut != nullptr) *limits.cut = true;
      break;
    }
    const OpId u = Choose(rule, ready, tracker);
    ready.Erase(u);
    ready_since[u] = -1;
    tracker.Run(u);
    order.push_back(u);
    if (order.size() == 1) {
      for (OpId v = 0; v < num_ops; ++v) {
        if (ready_since[v] >= 0) refresh(v);
      }
    }
    for (BufferId b : buffers.reads(u)) {
      if (--readers_left[b] != 1) continue;
      for (OpId v : buffers.buffers()[b].users) {
        if (ready_since[v] >= 0) refresh(v);
      }
    }
    for (OpId v : graph.op(u).successors) {
      if (--indegree[v] == 0) {
        ready_since[v] = num_became_ready++;
        add(v);
      }
    }
  }
  if (order.size() == static_cast<size_t>(num_became_ready)) {
    if (peak_bytes != nullptr) *peak_bytes = tracker.peak_bytes();
    return order;
  }

  // Cut: the ops ready now in the order they became ready, then a stack.
  std::vector<OpId> stack;
  for (OpId v = 0; v < num_ops; ++v) {
    if (ready_since[v] >= 0) stack.push_back(v);
  }
  std::sort(stack.begin(), stack.end(), [&](OpId a, OpId b) { return ready_since[a] < ready_since[b]; });
  while (!stack.empty()) {
    const OpId u = stack.back();
    stack.pop_back();
    order.push_back(u);
    if (peak_bytes != nullptr) tracker.Run(u);
    for (OpId v : graph.op(u).successors) {
      if (--indegree[v] == 0) stack.push_back(v);
    }
  }
  if (peak_bytes != nullptr) *peak_bytes = tracker.peak_bytes();
  return order;
}

}  // namespace serenity
