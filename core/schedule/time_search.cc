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
#include "core/schedule/layout_conversions.h"
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
// own workspace does, in no time (index -1, `*time` 0). With `layouts`
// (LayoutConversions' ids of u's alternatives), only those of `layout`.
int FastestThatFits(const Op& op, int64_t room, double* time, const std::vector<int>* layouts = nullptr,
                    int layout = 0) {
  if (op.alternatives.empty()) {
    *time = op.workspace_bytes <= room ? 0 : kInfinity;
    return -1;
  }
  int best = -1;
  *time = kInfinity;
  for (int a = 0; a < static_cast<int>(op.alternatives.size()); ++a) {
    const Primitive& p = op.alternatives[a];
    if (p.workspace_bytes > room || (layouts != nullptr && (*layouts)[a] != layout)) continue;
    if (best < 0 || p.time_us < *time ||
        (p.time_us == *time && p.workspace_bytes < op.alternatives[best].workspace_bytes)) {
      best = a;
      *time = p.time_us;
    }
  }
  return best;
}

// One way to run a sensitive op (layout_conversions.h) at a step: its
// layout, its fastest alternative of that layout that fits beside its
// conversions, and their time together.
struct LayoutMove {
  int layout;
  int choice;
  double time;
};

// The ways op u can run with `room` bytes beside the live ones, its input
// producers' layouts given by `layout_of`: per layout, the fastest that
// fits; only the fastest of all when u's layout matters to no op after it.
template <typename LayoutOfProducer>
std::vector<LayoutMove> LayoutMoves(const Op& op, const LayoutConversions& conversions, OpId u, int64_t room,
                                    LayoutOfProducer layout_of) {
  std::vector<LayoutMove> moves;
  for (int layout : conversions.layouts(u)) {
    const ConversionCost cost = conversions.InputCost(u, layout, layout_of);
    double time = 0;
    const int choice =
        FastestThatFits(op, room - cost.workspace_bytes, &time, &conversions.alternative_layouts(u), layout);
    if (choice < 0) continue;
    moves.push_back({layout, choice, time + cost.time_us});
  }
  if (!conversions.feeds_sensitive(u) && moves.size() > 1) {
    auto fastest = std::min_element(moves.begin(), moves.end(),
                                    [](const LayoutMove& a, const LayoutMove& b) { return a.time < b.time; });
    moves = {*fastest};
  }
  return moves;
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

namespace {

// SelectForOrder when some alternatives state layouts: a shortest path over
// the order's steps whose states are the layouts of the ops run whose
// layout still matters (LayoutConversions::feeds_sensitive, with a
// consumer not run yet); the bytes live before each step are the same in
// every state. Past kMaxLayoutStates states at a step, the fastest are
// kept.
constexpr size_t kMaxLayoutStates = 4096;

std::optional<PrimitiveSelection> SelectForOrderWithLayouts(const BufferModel& buffers,
                                                            const LayoutConversions& conversions,
                                                            const std::vector<OpId>& order, int64_t budget) {
  const Graph& graph = buffers.graph();
  const int n = graph.num_ops();
  struct Step {
    int32_t parent;  // index in the previous step's states
    int choice;
    double time;
  };
  std::vector<std::vector<Step>> steps;
  // The current states: per state, the layouts of `open` (parallel).
  std::vector<std::vector<int>> signatures(1);
  std::vector<double> times(1, 0);
  std::vector<OpId> open;
  std::vector<int> slot(n, -1);    // an open op's index in `open`
  std::vector<int> pending(n, 0);  // sensitive consumers not run yet
  for (OpId u = 0; u < n; ++u) {
    for (const LayoutConversions::Input& input : conversions.inputs(u)) ++pending[input.producer];
  }
  MemoryTracker tracker(buffers);
  for (OpId u : order) {
    const Op& op = graph.op(u);
    const int64_t room = budget - (tracker.StepBytes(u) - op.workspace_bytes);
    // The open ops after u.
    for (const LayoutConversions::Input& input : conversions.inputs(u)) --pending[input.producer];
    std::vector<OpId> next_open;
    for (OpId p : open) {
      if (pending[p] > 0) next_open.push_back(p);
    }
    const bool opens = pending[u] > 0;
    absl::flat_hash_map<std::vector<int>, int32_t> index;
    std::vector<std::vector<int>> next_signatures;
    std::vector<Step> next;
    for (size_t s = 0; s < signatures.size(); ++s) {
      const std::vector<int>& signature = signatures[s];
      const auto layout_of = [&](OpId p) { return slot[p] < 0 ? 0 : signature[slot[p]]; };
      std::vector<LayoutMove> moves;
      if (conversions.sensitive(u)) {
        moves = LayoutMoves(op, conversions, u, room, layout_of);
      } else {
        double time = 0;
        const int choice = FastestThatFits(op, room, &time);
        if (time != kInfinity) moves.push_back({0, choice, time});
      }
      for (const LayoutMove& move : moves) {
        std::vector<int> key;
        for (OpId p : next_open) key.push_back(signature[slot[p]]);
        if (opens) key.push_back(move.layout);
        const double time = times[s] + move.time;
        auto [it, inserted] = index.try_emplace(std::move(key), static_cast<int32_t>(next.size()));
        if (inserted) {
          next_signatures.push_back(it->first);
          next.push_back({static_cast<int32_t>(s), move.choice, time});
        } else if (time < next[it->second].time) {
          next[it->second] = {static_cast<int32_t>(s), move.choice, time};
        }
      }
    }
    if (next.empty()) return std::nullopt;
    if (next.size() > kMaxLayoutStates) {
      std::vector<int32_t> keep(next.size());
      for (size_t i = 0; i < keep.size(); ++i) keep[i] = static_cast<int32_t>(i);
      std::nth_element(keep.begin(), keep.begin() + kMaxLayoutStates, keep.end(),
                       [&](int32_t a, int32_t b) { return next[a].time < next[b].time; });
      keep.resize(kMaxLayoutStates);
      std::vector<Step> kept;
      std::vector<std::vector<int>> kept_signatures;
      for (int32_t i : keep) {
        kept.push_back(next[i]);
        kept_signatures.push_back(std::move(next_signatures[i]));
      }
      next = std::move(kept);
      next_signatures = std::move(kept_signatures);
    }
    for (OpId p : open) slot[p] = -1;
    open = std::move(next_open);
    if (opens) open.push_back(u);
    for (size_t i = 0; i < open.size(); ++i) slot[open[i]] = static_cast<int>(i);
    signatures = std::move(next_signatures);
    times.clear();
    for (const Step& step : next) times.push_back(step.time);
    steps.push_back(std::move(next));
    tracker.Run(u);
  }
  PrimitiveSelection out;
  out.order = order;
  out.choice.assign(n, -1);
  int32_t at = static_cast<int32_t>(std::min_element(times.begin(), times.end()) - times.begin());
  for (size_t i = order.size(); i-- > 0;) {
    out.choice[order[i]] = steps[i][at].choice;
    at = steps[i][at].parent;
  }
  out.workspace_bytes = StepWorkspaces(graph, out.choice);
  out.time_us = ChoiceTime(graph, out.choice);
  return out;
}

}  // namespace

std::optional<PrimitiveSelection> SelectForOrder(const BufferModel& buffers, const std::vector<OpId>& order,
                                                 int64_t budget) {
  const Graph& graph = buffers.graph();
  const LayoutConversions conversions(graph);
  if (conversions.active()) return SelectForOrderWithLayouts(buffers, conversions, order, budget);
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

std::vector<int> FastestChoices(const Graph& graph) {
  std::vector<int> out(graph.num_ops());
  double time = 0;
  for (OpId u = 0; u < graph.num_ops(); ++u) {
    out[u] = FastestThatFits(graph.op(u), std::numeric_limits<int64_t>::max(), &time);
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

SegmentResult SearchSegment(const BufferModel& buffers, const LayoutConversions& conversions,
                            const MemoryTracker& before, const std::vector<OpId>& ops,
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
  // With layouts (layout_conversions.h), a state is the set and the
  // layouts of the ops run whose layout still matters: each such op (by
  // local index) with its sensitive consumers (all in the segment: the
  // caller does not cut between them).
  std::vector<std::pair<int, std::vector<int>>> layout_feeders;
  if (conversions.active()) {
    for (int i = 0; i < m; ++i) {
      if (!conversions.feeds_sensitive(ops[i])) continue;
      std::vector<int> consumers;
      for (OpId c : graph.op(ops[i]).successors) {
        auto it = local.find(c);
        if (it != local.end() && conversions.sensitive(c)) consumers.push_back(it->second);
      }
      layout_feeders.emplace_back(i, std::move(consumers));
    }
  }
  std::vector<int> layout_now(graph.num_ops(), 0);  // per op on the path replayed
  // The set's bits, then the layouts that still matter.
  const auto key_of = [&](const OpSet& set) {
    OpSet key = set;
    for (const auto& [i, consumers] : layout_feeders) {
      if (!Has(set, i)) continue;
      bool matters = false;
      for (int c : consumers) matters = matters || !Has(set, c);
      if (matters) key.push_back(static_cast<uint64_t>(layout_now[ops[i]]));
    }
    return key;
  };

  // A*: nodes in the order made; open ones by (time + estimate, deeper
  // first). A set reached again at no less time is not pushed.
  std::vector<Node> nodes;
  absl::flat_hash_map<OpSet, double> best_time;    // per set: the least time it was reached at
  int64_t layout_words = 0;                        // the keys' words past the sets'
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
      // (A key past the set's words holds the layouts that still matter:
      // layout_words counts them.)
      const int64_t held = static_cast<int64_t>(best_time.size()) * static_cast<int64_t>(8 * words + 48) +
                           8 * layout_words +
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
    for (int32_t at = index; nodes[at].parent >= 0; at = nodes[at].parent) {
      layout_now[ops[nodes[at].op]] = conversions.LayoutOf(ops[nodes[at].op], nodes[at].choice);
    }
    for (auto it = path.rbegin(); it != path.rend(); ++it) {
      tracker.Run(ops[*it]);
      Add(&set, *it);
    }
    auto seen = best_time.find(layout_feeders.empty() ? set : key_of(set));
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
      if (conversions.sensitive(u)) {
        for (const LayoutMove& move :
             LayoutMoves(op, conversions, u, budget - without, [&](OpId p) { return layout_now[p]; })) {
          moves.push_back({u, i, move.choice, move.time});
        }
        // (Its layout may matter later: not forced, unless it matters to
        // no op after it.)
        if (moves.empty() || moves.back().op != u || conversions.feeds_sensitive(u)) continue;
      } else {
        double time = 0;
        const int choice = FastestThatFits(op, budget - without, &time);
        if (time == kInfinity) continue;
        moves.push_back({u, i, choice, time});
      }
      const double time = moves.back().time;
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
      size_t key_words = words;
      if (!layout_feeders.empty()) {
        layout_now[move.op] = conversions.LayoutOf(move.op, move.choice);
        next = key_of(next);
        key_words = next.size();
      }
      auto [it, inserted] = best_time.try_emplace(std::move(next), time);
      if (inserted) layout_words += static_cast<int64_t>(key_words - words);
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

// The segments MinimizeTime searches one by one: the graph's at cut points
// (partition.h), joined where an op's layout matters to an op in a later
// one (their choices are then not independent).
std::vector<std::vector<OpId>> SegmentsFor(const Graph& graph, const LayoutConversions& conversions) {
  std::vector<std::vector<OpId>> segments = SplitAtCutPoints(graph);
  if (!conversions.active()) return segments;
  std::vector<int> segment_of(graph.num_ops());
  for (size_t k = 0; k < segments.size(); ++k) {
    for (OpId u : segments[k]) segment_of[u] = static_cast<int>(k);
  }
  // joined[k]: segment k + 1 joins segment k.
  std::vector<bool> joined(segments.size(), false);
  for (OpId u = 0; u < graph.num_ops(); ++u) {
    for (const LayoutConversions::Input& input : conversions.inputs(u)) {
      for (int k = segment_of[input.producer]; k < segment_of[u]; ++k) joined[k] = true;
    }
  }
  std::vector<std::vector<OpId>> out;
  for (size_t k = 0; k < segments.size(); ++k) {
    if (k == 0 || !joined[k - 1]) out.emplace_back();
    out.back().insert(out.back().end(), segments[k].begin(), segments[k].end());
  }
  return out;
}

}  // namespace

std::optional<PrimitiveSelection> DowngradeUntilFits(const BufferModel& buffers, int64_t budget,
                                                     const SearchOptions& limits) {
  const Graph& graph = buffers.graph();
  const Clock::time_point deadline = DeadlineIn(limits.time_limit_seconds);
  // Per op the alternative aimed at: the fastest first (ties: the smaller
  // workspace).
  std::vector<int> target = FastestChoices(graph);
  while (Clock::now() < deadline && !Cancelled(limits)) {
    const Graph aimed = graph.WithWorkspaces(StepWorkspaces(graph, target));
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
  const LayoutConversions conversions(graph);
  const std::vector<std::vector<OpId>> segments = SegmentsFor(graph, conversions);
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
        s.time += TimeOf(graph.op(u), s.choice.back()) + conversions.CostFor(u, starts[i].choice).time_us;
      }
      if (!from_start.has_value() || s.time < from_start->time) from_start = std::move(s);
    }
    const int64_t m = static_cast<int64_t>(ops.size());
    SegmentResult segment = SearchSegment(buffers, conversions, before, ops, estimate, budget, std::move(from_start),
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
    SegmentResult again = SearchSegment(buffers, conversions, state, segments[k], estimate, budget, solved[k],
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
    }
  }
  found.workspace_bytes = StepWorkspaces(graph, found.choice);
  found.time_us = ChoiceTime(graph, found.choice);
  result.feasible = true;
  result.proven = all_proven;
  result.selection = std::move(found);
  result.lower_bound_us = all_proven ? result.selection.time_us : std::min(lower_bound, result.selection.time_us);
  return result;
}

}  // namespace serenity
