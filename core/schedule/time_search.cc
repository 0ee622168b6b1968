#include "core/schedule/time_search.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>
#include <queue>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/hash/hash.h"

namespace serenity {
namespace {

using Clock = std::chrono::steady_clock;
constexpr double kInfinity = std::numeric_limits<double>::infinity();

// The fastest alternative of op u whose workspace fits in `room` bytes
// (ties: the smaller workspace, then the first): its index, or -1 with
// `*time` infinite when none fits. An op without alternatives fits when its
// own workspace does, in no time (index -1, `*time` 0).
int FastestThatFits(const Op& op, int64_t room, double* time) {
  if (op.alternatives.empty()) {
    *time = op.workspace_bytes <= room ? 0 : kInfinity;
    return -1;
  }
  int best = -1;
  *time = kInfinity;
  for (int a = 0; a < static_cast<int>(op.alternatives.size()); ++a) {
    const Primitive& p = op.alternatives[a];
    if (p.workspace_bytes > room) continue;
    if (best < 0 || p.time_us < *time ||
        (p.time_us == *time && p.workspace_bytes < op.alternatives[best].workspace_bytes)) {
      best = a;
      *time = p.time_us;
    }
  }
  return best;
}

int64_t WorkspaceOf(const Op& op, int choice) {
  return choice < 0 ? op.workspace_bytes : op.alternatives[choice].workspace_bytes;
}

// Ops run so far, one bit each.
using OpSet = std::vector<uint64_t>;

bool Has(const OpSet& set, OpId u) { return (set[u >> 6] >> (u & 63)) & 1; }
void Add(OpSet* set, OpId u) { (*set)[u >> 6] |= uint64_t{1} << (u & 63); }

struct Node {
  int32_t parent;  // -1: the empty set
  OpId op;         // the op this node ran last
  int choice;
  double time;  // g: the time of the ops run
  double rest;  // h: the estimate for the ops not run
  int depth;
};

}  // namespace

std::optional<PrimitiveSelection> SelectForOrder(const BufferModel& buffers, const std::vector<OpId>& order,
                                                 int64_t budget) {
  const Graph& graph = buffers.graph();
  PrimitiveSelection out;
  out.order = order;
  out.choice.assign(graph.num_ops(), -1);
  out.workspace_bytes.assign(graph.num_ops(), 0);
  MemoryTracker tracker(buffers);
  for (OpId u : order) {
    const Op& op = graph.op(u);
    const int64_t without = tracker.StepBytes(u) - op.workspace_bytes;
    double time = 0;
    const int choice = FastestThatFits(op, budget - without, &time);
    if (time == kInfinity) return std::nullopt;
    out.choice[u] = choice;
    out.workspace_bytes[u] = WorkspaceOf(op, choice);
    out.time_us += time;
    tracker.Run(u);
  }
  return out;
}

std::vector<int64_t> LeastWorkspaces(const Graph& graph) {
  std::vector<int64_t> out(graph.num_ops());
  for (OpId u = 0; u < graph.num_ops(); ++u) {
    const Op& op = graph.op(u);
    out[u] = op.workspace_bytes;
    for (size_t a = 0; a < op.alternatives.size(); ++a) {
      if (a == 0 || op.alternatives[a].workspace_bytes < out[u]) out[u] = op.alternatives[a].workspace_bytes;
    }
  }
  return out;
}

TimeSearchResult MinimizeTime(const BufferModel& buffers, const std::vector<OpId>& start_order, int64_t budget,
                              const SearchOptions& limits) {
  const Graph& graph = buffers.graph();
  const int n = graph.num_ops();
  const Clock::time_point deadline = limits.time_limit_seconds > 0 && limits.time_limit_seconds < 1e9
                                         ? Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                                              std::chrono::duration<double>(limits.time_limit_seconds))
                                         : Clock::time_point::max();
  TimeSearchResult result;

  // The estimate: per op, the fastest alternative that fits beside what is
  // surely live at its step (the buffers it reads or the ones it makes,
  // whichever is more, and the resident bytes).
  std::vector<double> fastest(n, 0);
  double estimate = 0;
  for (OpId u = 0; u < n; ++u) {
    int64_t reads = 0, made = 0;
    for (BufferId b : buffers.reads(u)) reads += buffers.buffers()[b].bytes;
    for (BufferId b : buffers.allocates(u)) made += buffers.buffers()[b].bytes;
    FastestThatFits(graph.op(u), budget - buffers.resident_bytes() - std::max(reads, made), &fastest[u]);
    if (fastest[u] == kInfinity) {  // u fits at no step
      result.proven = true;
      return result;
    }
    estimate += fastest[u];
  }
  result.lower_bound_us = estimate;
  // The first plan: the start order's.
  double best = kInfinity;
  if (std::optional<PrimitiveSelection> start = SelectForOrder(buffers, start_order, budget)) {
    best = start->time_us;
    result.selection = *std::move(start);
    result.feasible = true;
  }
  if (best <= estimate) {  // the start order meets the bound
    result.proven = true;
    result.lower_bound_us = best;
    return result;
  }

  // A*: nodes in the order made; open ones by (time + estimate, deeper
  // first). A set reached again at no less time is not pushed.
  std::vector<Node> nodes;
  absl::flat_hash_map<OpSet, double> best_time;    // per set: the least time it was reached at
  using Entry = std::tuple<double, int, int32_t>;  // (f, -depth, node)
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> open;
  const size_t words = (static_cast<size_t>(n) + 63) / 64;
  nodes.push_back({-1, kNoOp, -1, 0, estimate, 0});
  open.push({estimate, 0, 0});
  OpSet set(words);
  std::vector<OpId> path;
  std::vector<int> indegree(n);
  int32_t goal = -1;
  bool stopped = false;
  while (!open.empty()) {
    const auto [f, negative_depth, index] = open.top();
    if (f >= best) break;  // nothing open can beat the plan found
    if ((result.states & 255) == 0 && (Clock::now() >= deadline || Cancelled(limits) ||
                                       (limits.max_states > 0 && result.states >= limits.max_states))) {
      stopped = true;
      break;
    }
    open.pop();
    const Node node = nodes[index];
    // The set and the tracker after it: replay the path from the root.
    path.clear();
    for (int32_t at = index; nodes[at].parent >= 0; at = nodes[at].parent) path.push_back(nodes[at].op);
    std::fill(set.begin(), set.end(), 0);
    MemoryTracker tracker(buffers);
    for (auto it = path.rbegin(); it != path.rend(); ++it) {
      tracker.Run(*it);
      Add(&set, *it);
    }
    auto seen = best_time.find(set);
    if (seen != best_time.end() && seen->second < node.time) continue;  // reached faster since
    if (node.depth == n) {
      goal = index;
      best = node.time;
      break;
    }
    ++result.states;
    // The ready ops, each with its fastest alternative that fits now.
    struct Move {
      OpId op;
      int choice;
      double time;
    };
    std::vector<Move> moves;
    int forced = -1;  // the index in moves of an op that runs at once
    for (OpId u = 0; u < n; ++u) {
      if (Has(set, u)) continue;
      bool ready = true;
      for (OpId p : graph.op(u).predecessors) ready = ready && Has(set, p);
      if (!ready) continue;
      const Op& op = graph.op(u);
      const int64_t without = tracker.StepBytes(u) - op.workspace_bytes;
      double time = 0;
      const int choice = FastestThatFits(op, budget - without, &time);
      if (time == kInfinity) continue;
      moves.push_back({u, choice, time});
      // Its time here is the least it can have anywhere (fastest[u] is a
      // bound), and running it raises nothing: it runs at once.
      if (forced < 0 && time == fastest[u] && tracker.BytesAfter(u) <= tracker.live_bytes()) {
        forced = static_cast<int>(moves.size()) - 1;
      }
    }
    if (forced >= 0) {
      const Move only = moves[forced];
      moves.assign(1, only);
    }
    for (const Move& move : moves) {
      OpSet next = set;
      Add(&next, move.op);
      const double time = node.time + move.time;
      const double rest = node.rest - fastest[move.op];
      if (time + rest >= best) continue;
      auto [it, inserted] = best_time.try_emplace(std::move(next), time);
      if (!inserted) {
        if (it->second <= time) continue;
        it->second = time;
      }
      nodes.push_back({index, move.op, move.choice, time, rest, node.depth + 1});
      open.push({time + rest, -(node.depth + 1), static_cast<int32_t>(nodes.size() - 1)});
    }
  }
  if (goal >= 0) {
    PrimitiveSelection found;
    found.choice.assign(n, -1);
    found.workspace_bytes.assign(n, 0);
    for (int32_t at = goal; nodes[at].parent >= 0; at = nodes[at].parent) {
      found.order.push_back(nodes[at].op);
      found.choice[nodes[at].op] = nodes[at].choice;
    }
    std::reverse(found.order.begin(), found.order.end());
    for (OpId u = 0; u < n; ++u) found.workspace_bytes[u] = WorkspaceOf(graph.op(u), found.choice[u]);
    found.time_us = nodes[goal].time;
    result.selection = std::move(found);
    result.feasible = true;
  }
  result.hit_limit = stopped;
  if (!stopped) {
    // Exhausted (or every open set at or above the plan found): optimal,
    // or nothing fits.
    result.proven = true;
    result.lower_bound_us = result.feasible ? best : estimate;
  } else {
    result.lower_bound_us = std::max(estimate, open.empty() ? estimate : std::get<0>(open.top()));
    if (result.feasible) result.lower_bound_us = std::min(result.lower_bound_us, best);
  }
  return result;
}

}  // namespace serenity
