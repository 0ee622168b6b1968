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
#include "core/graph/reachability.h"
#include "core/memory/closure_bound.h"
#include "core/schedule/baselines.h"
#include "core/schedule/partition.h"
#include "core/util/deadline.h"
#include "core/util/memory_account.h"

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

// Ops run so far, one bit each.
using OpSet = std::vector<uint64_t>;

bool Has(const OpSet& set, OpId u) { return (set[u >> 6] >> (u & 63)) & 1; }
void Add(OpSet* set, OpId u) { (*set)[u >> 6] |= uint64_t{1} << (u & 63); }

struct Node {
  int32_t parent;  // -1: the empty set
  int op;          // the op this node ran last, by its index in the segment
  int choice;
  double time;  // g: the time of the ops run
  double rest;  // h: the estimate for the ops not run
  int depth;
};

}  // namespace

int64_t WorkspaceOf(const Op& op, int choice) {
  return choice < 0 ? op.workspace_bytes : op.alternatives[choice].workspace_bytes;
}

double TimeOf(const Op& op, int choice) { return choice < 0 ? 0 : op.alternatives[choice].time_us; }

double FastestTime(const Op& op) {
  double time = 0;
  FastestThatFits(op, std::numeric_limits<int64_t>::max(), &time);
  return time;
}

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

std::vector<int> LeastWorkspaceChoices(const Graph& graph) {
  std::vector<int> out(graph.num_ops(), -1);
  for (OpId u = 0; u < graph.num_ops(); ++u) {
    const std::vector<Primitive>& alternatives = graph.op(u).alternatives;
    for (int a = 0; a < static_cast<int>(alternatives.size()); ++a) {
      const int b = out[u];
      if (b < 0 || alternatives[a].workspace_bytes < alternatives[b].workspace_bytes ||
          (alternatives[a].workspace_bytes == alternatives[b].workspace_bytes &&
           alternatives[a].time_us < alternatives[b].time_us)) {
        out[u] = a;
      }
    }
  }
  return out;
}

std::vector<int64_t> WorkspacesOf(const Graph& graph, const std::vector<int>& choices) {
  std::vector<int64_t> out(graph.num_ops());
  for (OpId u = 0; u < graph.num_ops(); ++u) out[u] = WorkspaceOf(graph.op(u), choices[u]);
  return out;
}

std::vector<int64_t> SurelyLiveBytes(const BufferModel& buffers, std::chrono::steady_clock::time_point end) {
  const Graph& graph = buffers.graph();
  std::vector<int64_t> without(graph.num_ops());
  for (OpId u = 0; u < graph.num_ops(); ++u) {
    without[u] = graph.op(u).alternatives.empty() ? graph.op(u).workspace_bytes : 0;
  }
  const Graph bare = graph.WithWorkspaces(without);
  return ClosureStepLowerBounds(BufferModel(bare, buffers.model()), Reachability(bare), end);
}

namespace {

// One segment's search (partition.h): its ops run after every op before it,
// whose state `before` holds; `estimate` per op as MinimizeTime's.
struct SegmentResult {
  bool feasible = false;
  bool proven = false;
  std::vector<OpId> order;
  std::vector<int> choice;  // parallel to order
  double time = 0;
  double lower_bound = 0;
  int64_t states = 0;
};

SegmentResult SearchSegment(const BufferModel& buffers, const MemoryTracker& before, const std::vector<OpId>& ops,
                            const std::vector<double>& estimate, int64_t budget, std::optional<SegmentResult> start,
                            Clock::time_point deadline, const SearchOptions& limits, MemoryCharge* charge) {
  const Graph& graph = buffers.graph();
  const int m = static_cast<int>(ops.size());
  double total_estimate = 0;
  for (OpId u : ops) total_estimate += estimate[u];
  SegmentResult result;
  result.lower_bound = total_estimate;
  double best = kInfinity;
  if (start.has_value()) {
    result = *std::move(start);
    result.lower_bound = total_estimate;
    result.proven = false;
    result.states = 0;
    best = result.time;
  }
  if (best <= total_estimate) {  // the start meets the bound
    result.proven = true;
    result.lower_bound = best;
    return result;
  }
  // Local indices: bit i of a set is ops[i].
  absl::flat_hash_map<OpId, int> local;
  for (int i = 0; i < m; ++i) local.emplace(ops[i], i);
  // Each op's predecessors within the segment (the others ran before it).
  std::vector<std::vector<int>> inside(m);
  for (int i = 0; i < m; ++i) {
    for (OpId p : graph.op(ops[i]).predecessors) {
      auto it = local.find(p);
      if (it != local.end()) inside[i].push_back(it->second);
    }
  }
  const size_t words = (static_cast<size_t>(m) + 63) / 64;

  // A*: nodes in the order made; open ones by (time + estimate, deeper
  // first). A set reached again at no less time is not pushed.
  std::vector<Node> nodes;
  absl::flat_hash_map<OpSet, double> best_time;    // per set: the least time it was reached at
  using Entry = std::tuple<double, int, int32_t>;  // (f, -depth, node)
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> open;
  nodes.push_back({-1, kNoOp, -1, 0, total_estimate, 0});
  open.push({total_estimate, 0, 0});
  OpSet set(words);
  std::vector<int> path;  // local indices
  int32_t goal = -1;
  bool stopped = false;
  while (!open.empty()) {
    const auto [f, negative_depth, index] = open.top();
    if (f >= best) break;  // nothing open can beat the plan found
    if ((result.states & 255) == 0) {
      // Each set kept: its bits, its map slot, its node and queue entry.
      const int64_t held = static_cast<int64_t>(best_time.size()) * static_cast<int64_t>(8 * words + 48) +
                           static_cast<int64_t>(nodes.size()) * static_cast<int64_t>(sizeof(Node) + sizeof(Entry));
      if (Clock::now() >= deadline || Cancelled(limits) ||
          (limits.max_states > 0 && result.states >= limits.max_states) || !charge->TryResize(held)) {
        stopped = true;
        break;
      }
    }
    open.pop();
    const Node node = nodes[index];
    // The set and the tracker after it: replay the path from the segment's
    // start.
    path.clear();
    for (int32_t at = index; nodes[at].parent >= 0; at = nodes[at].parent) path.push_back(nodes[at].op);
    std::fill(set.begin(), set.end(), 0);
    MemoryTracker tracker = before;
    for (auto it = path.rbegin(); it != path.rend(); ++it) {
      tracker.Run(ops[*it]);
      Add(&set, *it);
    }
    auto seen = best_time.find(set);
    if (seen != best_time.end() && seen->second < node.time) continue;  // reached faster since
    if (node.depth == m) {
      goal = index;
      best = node.time;
      break;
    }
    ++result.states;
    // The ready ops, each with its fastest alternative that fits now.
    struct Move {
      OpId op;
      int local;  // its bit
      int choice;
      double time;
    };
    std::vector<Move> moves;
    int forced = -1;  // the index in moves of an op that runs at once
    for (int i = 0; i < m; ++i) {
      const OpId u = ops[i];
      if (Has(set, i)) continue;
      bool ready = true;
      for (int p : inside[i]) ready = ready && Has(set, p);
      if (!ready) continue;
      const Op& op = graph.op(u);
      const int64_t without = tracker.StepBytes(u) - op.workspace_bytes;
      double time = 0;
      const int choice = FastestThatFits(op, budget - without, &time);
      if (time == kInfinity) continue;
      moves.push_back({u, i, choice, time});
      // Its time here is the least it can have anywhere (estimate[u] is a
      // bound), and running it raises nothing: it runs at once.
      // (Graph inputs nobody reads die after the first step whichever op
      // runs it: no part of u's own change, which BytesAfter counts them in.)
      const int64_t unused = tracker.steps() == 0 ? buffers.unused_input_bytes() : 0;
      if (forced < 0 && time == estimate[u] && tracker.BytesAfter(u) + unused <= tracker.live_bytes()) {
        forced = static_cast<int>(moves.size()) - 1;
      }
    }
    if (forced >= 0) {
      const Move only = moves[forced];
      moves.assign(1, only);
    }
    for (const Move& move : moves) {
      OpSet next = set;
      Add(&next, move.local);
      const double time = node.time + move.time;
      const double rest = node.rest - estimate[move.op];
      if (time + rest >= best) continue;
      auto [it, inserted] = best_time.try_emplace(std::move(next), time);
      if (!inserted) {
        if (it->second <= time) continue;
        it->second = time;
      }
      nodes.push_back({index, move.local, move.choice, time, rest, node.depth + 1});
      open.push({time + rest, -(node.depth + 1), static_cast<int32_t>(nodes.size() - 1)});
    }
  }
  if (goal >= 0) {
    result.order.clear();
    result.choice.clear();
    for (int32_t at = goal; nodes[at].parent >= 0; at = nodes[at].parent) {
      result.order.push_back(ops[nodes[at].op]);
      result.choice.push_back(nodes[at].choice);
    }
    std::reverse(result.order.begin(), result.order.end());
    std::reverse(result.choice.begin(), result.choice.end());
    result.time = nodes[goal].time;
    result.feasible = true;
  }
  if (!stopped) {
    // Exhausted (or every open set at or above the plan found): optimal,
    // or nothing fits.
    result.proven = true;
    result.lower_bound = result.feasible ? best : total_estimate;
  } else {
    result.lower_bound = std::max(total_estimate, open.empty() ? total_estimate : std::get<0>(open.top()));
    if (result.feasible) result.lower_bound = std::min(result.lower_bound, best);
  }
  return result;
}

}  // namespace

std::optional<PrimitiveSelection> DowngradeUntilFits(const BufferModel& buffers, int64_t budget,
                                                     const SearchOptions& limits) {
  const Graph& graph = buffers.graph();
  const int n = graph.num_ops();
  const Clock::time_point deadline = DeadlineIn(limits.time_limit_seconds);
  // Per op the alternative aimed at: the fastest first (ties: the smaller
  // workspace).
  std::vector<int> target(n, -1);
  for (OpId u = 0; u < n; ++u) {
    double time = 0;
    target[u] = FastestThatFits(graph.op(u), std::numeric_limits<int64_t>::max(), &time);
  }
  while (Clock::now() < deadline && !Cancelled(limits)) {
    const Graph aimed = graph.WithWorkspaces(WorkspacesOf(graph, target));
    const BufferModel aimed_buffers(aimed, buffers.model());
    SearchOptions search = limits;
    search.time_limit_seconds = deadline == Clock::time_point::max()
                                    ? 0
                                    : std::max(1e-3, std::chrono::duration<double>(deadline - Clock::now()).count());
    const MinimizeResult best = MinimizePeak(aimed_buffers, GreedyOrder(aimed_buffers), 0, search, budget);
    const std::vector<OpId>& order = best.order;
    if (best.peak_bytes <= budget) return SelectForOrder(buffers, order, budget);
    // The steps above the budget: of their ops, the one whose next smaller
    // workspace costs the least time per byte saved steps down to it.
    MemoryTracker tracker(aimed_buffers);
    OpId pick = kNoOp;
    int pick_to = -1;
    double pick_rate = kInfinity;
    for (OpId u : order) {
      if (tracker.Run(u) <= budget) continue;
      const Op& op = graph.op(u);
      const int from = target[u];
      if (from < 0) continue;
      const int64_t bytes = op.alternatives[from].workspace_bytes;
      for (int a = 0; a < static_cast<int>(op.alternatives.size()); ++a) {
        const Primitive& p = op.alternatives[a];
        if (p.workspace_bytes >= bytes) continue;
        const double rate =
            (p.time_us - op.alternatives[from].time_us) / static_cast<double>(bytes - p.workspace_bytes);
        if (rate < pick_rate) {
          pick = u;
          pick_to = a;
          pick_rate = rate;
        }
      }
    }
    if (pick == kNoOp) return std::nullopt;  // nothing over the budget can shrink
    target[pick] = pick_to;
  }
  return std::nullopt;
}

TimeSearchResult MinimizeTime(const BufferModel& buffers, const std::vector<OpId>& start_order, int64_t budget,
                              const SearchOptions& limits, const std::vector<int64_t>* surely_live) {
  const Graph& graph = buffers.graph();
  const int n = graph.num_ops();
  const Clock::time_point deadline = DeadlineIn(limits.time_limit_seconds);
  TimeSearchResult result;

  // The estimate: per op, the fastest alternative that fits beside what is
  // surely live at its step in every order (SurelyLiveBytes; a tenth of the
  // time at most when computed here: the ops it does not reach keep a
  // weaker bound).
  std::vector<int64_t> computed;
  if (surely_live == nullptr) {
    computed = SurelyLiveBytes(buffers, deadline == Clock::time_point::max()
                                            ? deadline
                                            : TimeAfter(Clock::now(), 0.1 * limits.time_limit_seconds));
    surely_live = &computed;
  }
  std::vector<double> estimate(n, 0);
  double total_estimate = 0;
  for (OpId u = 0; u < n; ++u) {
    const Op& op = graph.op(u);
    FastestThatFits(op, budget - ((*surely_live)[u] - (op.alternatives.empty() ? op.workspace_bytes : 0)),
                    &estimate[u]);
    if (estimate[u] == kInfinity) {  // u fits at no step
      result.proven = true;
      return result;
    }
    total_estimate += estimate[u];
  }
  result.lower_bound_us = total_estimate;
  // The first plans: the start order's, and the primitives' side's
  // (DowngradeUntilFits, a fifth of the time); each segment starts from the
  // faster of the two there.
  std::vector<PrimitiveSelection> starts;
  if (std::optional<PrimitiveSelection> s = SelectForOrder(buffers, start_order, budget)) starts.push_back(*s);
  {
    SearchOptions downgrade = limits;
    // (No deadline: none for it either.)
    downgrade.time_limit_seconds =
        deadline == Clock::time_point::max()
            ? 0
            : std::max(1e-6, 0.2 * std::chrono::duration<double>(deadline - Clock::now()).count());
    if (std::optional<PrimitiveSelection> s = DowngradeUntilFits(buffers, budget, downgrade)) starts.push_back(*s);
  }

  // Segment by segment (partition.h): every order runs them one after the
  // other, and the bytes live while one runs depend on the earlier ops as a
  // set, so the least time is the sum of each segment's least time.
  PrimitiveSelection found;
  found.choice.assign(n, -1);
  found.workspace_bytes.assign(n, 0);
  MemoryTracker before(buffers);  // after the segments searched so far
  MemoryCharge charge(limits.memory);
  std::vector<std::vector<int>> positions;
  for (const PrimitiveSelection& start : starts) {
    positions.emplace_back(n, 0);
    for (int i = 0; i < n; ++i) positions.back()[start.order[i]] = i;
  }
  double lower_bound = 0;
  bool all_proven = true;
  // Time: each segment gets a share of what is left by its ops; a second
  // pass gives what the first left to the segments it did not prove.
  const std::vector<std::vector<OpId>> segments = SplitAtCutPoints(graph);
  std::vector<SegmentResult> solved(segments.size());
  std::vector<std::pair<size_t, MemoryTracker>> unproven;  // (segment, the state before it)
  const auto share = [&](int64_t ops, int64_t of) {
    const Clock::time_point now = Clock::now();
    if (deadline == Clock::time_point::max() || now >= deadline) return deadline;
    return now + std::chrono::duration_cast<Clock::duration>((deadline - now) * (static_cast<double>(ops) / of));
  };
  int64_t ops_left = n;
  for (size_t k = 0; k < segments.size(); ++k) {
    const std::vector<OpId>& ops = segments[k];
    std::optional<SegmentResult> from_start;
    for (size_t i = 0; i < starts.size(); ++i) {
      // Every order runs the segment contiguously.
      SegmentResult s;
      s.feasible = true;
      s.order = ops;
      const std::vector<int>& position = positions[i];
      std::sort(s.order.begin(), s.order.end(), [&](OpId a, OpId b) { return position[a] < position[b]; });
      for (OpId u : s.order) {
        s.choice.push_back(starts[i].choice[u]);
        s.time += TimeOf(graph.op(u), s.choice.back());
      }
      if (!from_start.has_value() || s.time < from_start->time) from_start = std::move(s);
    }
    const int64_t m = static_cast<int64_t>(ops.size());
    SegmentResult segment = SearchSegment(buffers, before, ops, estimate, budget, std::move(from_start),
                                          share(m, ops_left), limits, &charge);
    ops_left -= m;
    result.states += segment.states;
    if (!segment.feasible) {
      // Nothing fits this segment (proven), or the search stopped before
      // finding a plan for it and the start order has none.
      result.feasible = false;
      result.proven = segment.proven;
      result.selection = PrimitiveSelection();
      result.lower_bound_us = total_estimate;
      return result;
    }
    if (!segment.proven) unproven.emplace_back(k, before);
    for (OpId u : segment.order) before.Run(u);
    solved[k] = std::move(segment);
  }
  int64_t unproven_ops = 0;
  for (const auto& [k, state] : unproven) unproven_ops += static_cast<int64_t>(segments[k].size());
  for (const auto& [k, state] : unproven) {
    if (Clock::now() >= deadline || Cancelled(limits)) break;
    const int64_t m = static_cast<int64_t>(segments[k].size());
    SegmentResult again = SearchSegment(buffers, state, segments[k], estimate, budget, solved[k],
                                        share(m, unproven_ops), limits, &charge);
    unproven_ops -= m;
    result.states += again.states;
    again.lower_bound = std::max(again.lower_bound, solved[k].lower_bound);
    if (again.feasible && (again.time < solved[k].time || again.proven)) solved[k] = std::move(again);
  }
  for (SegmentResult& segment : solved) {
    all_proven = all_proven && segment.proven;
    lower_bound += segment.lower_bound;
    for (size_t i = 0; i < segment.order.size(); ++i) {
      const OpId u = segment.order[i];
      found.order.push_back(u);
      found.choice[u] = segment.choice[i];
      found.workspace_bytes[u] = WorkspaceOf(graph.op(u), segment.choice[i]);
      found.time_us += TimeOf(graph.op(u), segment.choice[i]);
    }
  }
  result.feasible = true;
  result.proven = all_proven;
  result.selection = std::move(found);
  result.lower_bound_us = all_proven ? result.selection.time_us : std::min(lower_bound, result.selection.time_us);
  return result;
}

}  // namespace serenity
