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
#include "absl/container/inlined_vector.h"
#include "absl/hash/hash.h"
#include "absl/numeric/int128.h"
#include "core/graph/reachability.h"
#include "core/memory/closure_bound.h"
#include "core/schedule/baselines.h"
#include "core/schedule/layout_conversions.h"
#include "core/schedule/partition.h"
#include "core/schedule/primitive_weights.h"
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
// With `weights`, an alternative's own extra weights (ExtraAboveLeast) must
// fit in `room` beside its workspace.
int FastestThatFits(const Op& op, int64_t room, double* time, const std::vector<int>* layouts = nullptr, int layout = 0,
                    const PrimitiveWeights* weights = nullptr, OpId u = kNoOp) {
  if (op.alternatives.empty()) {
    *time = op.workspace_bytes <= room ? 0 : kInfinity;
    return -1;
  }
  int best = -1;
  *time = kInfinity;
  for (int a = 0; a < static_cast<int>(op.alternatives.size()); ++a) {
    const Primitive& p = op.alternatives[a];
    const int64_t extra = weights != nullptr ? weights->ExtraAboveLeast(u, a) : 0;
    if (p.workspace_bytes + extra > room || (layouts != nullptr && (*layouts)[a] != layout)) continue;
    if (best < 0 || p.time_us < *time ||
        (p.time_us == *time && p.workspace_bytes < op.alternatives[best].workspace_bytes)) {
      best = a;
      *time = p.time_us;
    }
  }
  return best;
}

// One way to run a ready op at a step: its layout (0 when no alternative
// of the op states one), its alternative (-1: none), their time with its
// conversions', and with transformed weights (primitive_weights.h) the
// state after it: the extra resident bytes chosen so far (above each op's
// least) and the most bytes live at a step so far (both 0 without).
struct StepMove {
  int layout;
  int choice;
  double time;
  int64_t extra;
  int64_t peak;
};

// True when `a` is no worse than `b` in every respect that matters later:
// time, extra, peak and, when u's layout matters to a later op, the same
// layout.
bool NoWorse(const StepMove& a, const StepMove& b, bool layout_matters) {
  return (!layout_matters || a.layout == b.layout) && a.time <= b.time && a.extra <= b.extra && a.peak <= b.peak;
}

// The ways op u can run at a step where `live` bytes are live beside its
// workspace, the budget being `budget`, after choices of `extra` and
// `peak` (StepMove), its input producers' layouts given by `layout_of`.
// Without transformed weights: per layout the fastest alternative that
// fits beside its conversions, only the fastest of all when u's layout
// matters to no later op. With them: every alternative whose step, with
// everything chosen so far, fits (max(peak, step) + extra + least_total <=
// budget), keeping those no other is no worse than. (Live bytes count the
// weights as given; every choice's weights differ from them by at least
// least_total.) Replaces `*moves` (a buffer
// the caller reuses).
template <typename LayoutOfProducer>
void MovesOf(const Graph& graph, const LayoutConversions& conversions, const PrimitiveWeights& weights, OpId u,
             int64_t live, int64_t budget, int64_t extra, int64_t peak, LayoutOfProducer layout_of,
             std::vector<StepMove>* out) {
  const Op& op = graph.op(u);
  std::vector<StepMove>& moves = *out;
  moves.clear();
  const bool sensitive = conversions.sensitive(u);
  const bool layout_matters = conversions.feeds_sensitive(u);
  static const std::vector<int> kAny = {0};
  for (int layout : sensitive ? conversions.layouts(u) : kAny) {
    const ConversionCost cost = sensitive ? conversions.InputCost(u, layout, layout_of) : ConversionCost();
    // (RoomFor saturates: harmless here, where every sum of bytes fits.)
    const int64_t room = weights.RoomFor(budget) - live - cost.workspace_bytes;
    if (!weights.active()) {
      double time = 0;
      const int choice =
          FastestThatFits(op, room, &time, sensitive ? &conversions.alternative_layouts(u) : nullptr, layout);
      if (time != kInfinity) moves.push_back({layout, choice, time + cost.time_us, 0, 0});
      continue;
    }
    const int count = static_cast<int>(op.alternatives.size());
    for (int a = count == 0 ? -1 : 0; a < count; ++a) {
      if (sensitive && conversions.alternative_layouts(u)[a] != layout) continue;
      const int64_t workspace = WorkspaceOf(op, a);
      if (workspace > room) continue;
      const int64_t after = extra + weights.ExtraAboveLeast(u, a);
      const int64_t step_peak = std::max(peak, live + cost.workspace_bytes + workspace);
      // (Each term fits; their sum may not, before least_total takes back
      // what it can.)
      if (absl::int128(step_peak) + after + weights.least_total() > budget) continue;
      moves.push_back({layout, a, TimeOf(op, a) + cost.time_us, after, step_peak});
    }
  }
  if (!weights.active()) {
    if (!layout_matters && moves.size() > 1) {
      const StepMove fastest = *std::min_element(moves.begin(), moves.end(),
                                                 [](const StepMove& a, const StepMove& b) { return a.time < b.time; });
      moves.assign(1, fastest);
    }
    return;
  }
  // Those no other is no worse than (of equal ones, the first).
  std::vector<bool> dominated(moves.size(), false);
  for (size_t i = 0; i < moves.size(); ++i) {
    for (size_t j = 0; j < moves.size() && !dominated[i]; ++j) {
      if (j == i || !NoWorse(moves[j], moves[i], layout_matters)) continue;
      dominated[i] = j < i || !NoWorse(moves[i], moves[j], layout_matters);
    }
  }
  size_t kept = 0;
  for (size_t i = 0; i < moves.size(); ++i) {
    if (!dominated[i]) moves[kept++] = moves[i];
  }
  moves.resize(kept);
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
  int64_t extra;  // StepMove's (0 without transformed weights)
  int64_t peak;
};

// The ways a set (with its layouts) was reached that are kept, as the
// nodes that reached it: a way is kept while no other way to it is no worse
// in time, extra and peak (without transformed weights: while none is
// faster, so one per set).
using Labels = absl::InlinedVector<int32_t, 1>;

bool NoWorse(const Node& a, const Node& b) { return a.time <= b.time && a.extra <= b.extra && a.peak <= b.peak; }

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

// SelectForOrder when some alternatives state layouts or transformed
// weights count: a shortest path over the order's steps whose states are
// the layouts of the ops run whose layout still matters
// (LayoutConversions::feeds_sensitive, with a consumer not run yet) and,
// with weights, the extra bytes chosen so far and the most bytes live at a
// step so far (StepMove); of the states of one layout signature only those
// no other is no worse than are kept. The bytes live before each step are
// the same in every state. Past kMaxOrderStates states at a step, the
// fastest are kept.
constexpr size_t kMaxOrderStates = 4096;

std::optional<PrimitiveSelection> SelectForOrderByStates(const BufferModel& buffers,
                                                         const LayoutConversions& conversions,
                                                         const PrimitiveWeights& weights,
                                                         const std::vector<OpId>& order, int64_t budget,
                                                         Clock::time_point deadline) {
  const Graph& graph = buffers.graph();
  const int n = graph.num_ops();
  struct State {
    int32_t parent;  // index in the previous step's states
    int choice;
    double time;
    int64_t extra;
    int64_t peak;
  };
  std::vector<std::vector<State>> steps;
  // The current states and, parallel, the layouts of `open` in each.
  std::vector<State> states = {{-1, -1, 0, 0, 0}};
  std::vector<std::vector<int>> signatures(1);
  std::vector<OpId> open;
  std::vector<int> slot(n, -1);    // an open op's index in `open`
  std::vector<int> pending(n, 0);  // sensitive consumers not run yet
  for (OpId u = 0; u < n; ++u) {
    for (const LayoutConversions::Input& input : conversions.inputs(u)) ++pending[input.producer];
  }
  MemoryTracker tracker(buffers);
  std::vector<StepMove> ways;  // (reused)
  bool late = false;
  for (OpId u : order) {
    const int64_t live = tracker.StepBytes(u) - graph.op(u).workspace_bytes;
    // The open ops after u.
    for (const LayoutConversions::Input& input : conversions.inputs(u)) --pending[input.producer];
    std::vector<OpId> next_open;
    for (OpId p : open) {
      if (pending[p] > 0) next_open.push_back(p);
    }
    const bool opens = pending[u] > 0;
    // Per signature after u (in the order reached), the states reaching it.
    absl::flat_hash_map<std::vector<int>, size_t> group_of;
    std::vector<std::pair<std::vector<int>, std::vector<State>>> groups;
    for (size_t s = 0; s < states.size(); ++s) {
      const std::vector<int>& signature = signatures[s];
      const auto layout_of = [&](OpId p) { return slot[p] < 0 ? 0 : signature[slot[p]]; };
      MovesOf(graph, conversions, weights, u, live, budget, states[s].extra, states[s].peak, layout_of, &ways);
      for (const StepMove& move : ways) {
        std::vector<int> key;
        for (OpId p : next_open) key.push_back(signature[slot[p]]);
        if (opens) key.push_back(move.layout);
        auto [it, inserted] = group_of.try_emplace(key, groups.size());
        if (inserted) groups.emplace_back(std::move(key), std::vector<State>());
        const State next{static_cast<int32_t>(s), move.choice, states[s].time + move.time, move.extra, move.peak};
        // Kept unless one reached is no worse; it replaces those it is no
        // worse than.
        std::vector<State>& here = groups[it->second].second;
        const auto no_worse = [](const State& a, const State& b) {
          return a.time <= b.time && a.extra <= b.extra && a.peak <= b.peak;
        };
        if (std::any_of(here.begin(), here.end(), [&](const State& o) { return no_worse(o, next); })) continue;
        here.erase(std::remove_if(here.begin(), here.end(), [&](const State& o) { return no_worse(next, o); }),
                   here.end());
        here.push_back(next);
      }
    }
    std::vector<State> next;
    std::vector<std::vector<int>> next_signatures;
    for (const auto& [signature, reaching] : groups) {
      for (const State& state : reaching) {
        next.push_back(state);
        next_signatures.push_back(signature);
      }
    }
    if (next.empty()) return std::nullopt;
    // (Past the deadline, checked every 64 steps, one.)
    late = late || ((steps.size() & 63) == 0 && deadline != Clock::time_point::max() && Clock::now() >= deadline);
    const size_t most = late ? 1 : kMaxOrderStates;
    if (next.size() > most) {
      std::vector<int32_t> keep(next.size());
      for (size_t i = 0; i < keep.size(); ++i) keep[i] = static_cast<int32_t>(i);
      std::nth_element(keep.begin(), keep.begin() + most, keep.end(),
                       [&](int32_t a, int32_t b) { return next[a].time < next[b].time; });
      keep.resize(most);
      std::vector<State> kept;
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
    states = next;
    steps.push_back(std::move(next));
    tracker.Run(u);
  }
  PrimitiveSelection out;
  out.order = order;
  out.choice.assign(n, -1);
  int32_t at = static_cast<int32_t>(
      std::min_element(states.begin(), states.end(), [](const State& a, const State& b) { return a.time < b.time; }) -
      states.begin());
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
                                                 int64_t budget, Clock::time_point deadline) {
  const Graph& graph = buffers.graph();
  const LayoutConversions conversions(graph);
  const PrimitiveWeights weights(graph, buffers.model().count_weights);
  if (conversions.active() || weights.active()) {
    return SelectForOrderByStates(buffers, conversions, weights, order, budget, deadline);
  }
  PrimitiveSelection out;
  out.order = order;
  out.choice.assign(graph.num_ops(), -1);
  out.workspace_bytes.assign(graph.num_ops(), 0);
  MemoryTracker tracker(buffers);
  for (OpId u : order) {
    const Op& op = graph.op(u);
    // (Weights that every choice transforms alike count in full.)
    const int64_t without = tracker.StepBytes(u) - op.workspace_bytes;
    double time = 0;
    const int choice = FastestThatFits(op, weights.RoomFor(budget) - without, &time);
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
                            const PrimitiveWeights& weights, const MemoryTracker& before, const std::vector<OpId>& ops,
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
  absl::flat_hash_map<OpSet, Labels> reached;      // per set: the ways kept
  int64_t layout_words = 0;                        // the keys' words past the sets'
  int64_t more_labels = 0;                         // labels past one per set
  using Entry = std::tuple<double, int, int32_t>;  // (f, -depth, node)
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> open;
  nodes.push_back({-1, kNoOp, -1, 0, total_estimate, 0, 0, 0});
  open.push({total_estimate, 0, 0});
  OpSet set(words);
  std::vector<int> path;  // local indices
  struct Move {
    OpId op;
    int local;  // its bit
    StepMove step;
  };
  std::vector<Move> moves;     // (reused at every set)
  std::vector<StepMove> ways;  // (reused at every op)
  int32_t goal = -1;
  bool stopped = false;
  while (!open.empty()) {
    const auto [f, negative_depth, popped] = open.top();
    const int32_t index = popped;  // (a lambda below reads it: no binding)
    if (f >= best) break;          // nothing open can beat the plan found
    if ((result.states & 255) == 0) {
      // Each set kept: its bits, its map slot, its node and queue entry.
      // (A key past the set's words holds the layouts that still matter:
      // layout_words counts them.)
      const int64_t held =
          static_cast<int64_t>(reached.size()) * static_cast<int64_t>(8 * words + 40 + sizeof(Labels)) +
          8 * layout_words + more_labels * static_cast<int64_t>(sizeof(int32_t)) +
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
    // Skipped when a way to its set found since is no worse.
    auto seen = reached.find(layout_feeders.empty() ? set : key_of(set));
    if (seen != reached.end() &&
        std::none_of(seen->second.begin(), seen->second.end(), [&](int32_t l) { return l == index; })) {
      continue;
    }
    if (node.depth == m) {
      goal = index;
      best = node.time;
      break;
    }
    ++result.states;
    // The ready ops, each with its ways to run now (MovesOf).
    moves.clear();
    int forced = -1;  // the index in moves of an op that runs at once
    for (int i = 0; i < m; ++i) {
      const OpId u = ops[i];
      if (Has(set, i)) continue;
      bool ready = true;
      for (int p : inside[i]) ready = ready && Has(set, p);
      if (!ready) continue;
      const int64_t live = tracker.StepBytes(u) - graph.op(u).workspace_bytes;
      MovesOf(
          graph, conversions, weights, u, live, budget, node.extra, node.peak, [&](OpId p) { return layout_now[p]; },
          &ways);
      for (const StepMove& way : ways) moves.push_back({u, i, way});
      // An op whose layout may matter later is not forced.
      if (ways.empty() || conversions.feeds_sensitive(u) || forced >= 0) continue;
      // A way whose time is the least u can have anywhere (estimate[u] is
      // a bound), that raises neither the extra weights nor the peak so
      // far, when running u raises nothing: it runs at once.
      // (Graph inputs nobody reads die after the first step whichever op
      // runs it: no part of u's own change, which BytesAfter counts them in.)
      const int64_t unused = tracker.steps() == 0 ? buffers.unused_input_bytes() : 0;
      if (tracker.BytesAfter(u) + unused > tracker.live_bytes()) continue;
      for (size_t k = moves.size() - ways.size(); k < moves.size(); ++k) {
        const StepMove& way = moves[k].step;
        if (way.time == estimate[u] && way.extra == node.extra && way.peak == node.peak) {
          forced = static_cast<int>(k);
          break;
        }
      }
    }
    if (forced >= 0) {
      const Move only = moves[forced];
      moves.assign(1, only);
    }
    for (const Move& move : moves) {
      OpSet next = set;
      Add(&next, move.local);
      const double time = node.time + move.step.time;
      const double rest = node.rest - estimate[move.op];
      if (time + rest >= best) continue;
      size_t key_words = words;
      if (!layout_feeders.empty()) {
        layout_now[move.op] = conversions.LayoutOf(move.op, move.step.choice);
        next = key_of(next);
        key_words = next.size();
      }
      const Node next_node{index, move.local,     move.step.choice, time,
                           rest,  node.depth + 1, move.step.extra,  move.step.peak};
      auto [it, inserted] = reached.try_emplace(std::move(next));
      Labels& labels = it->second;
      if (inserted) layout_words += static_cast<int64_t>(key_words - words);
      if (std::any_of(labels.begin(), labels.end(), [&](int32_t l) { return NoWorse(nodes[l], next_node); })) {
        continue;
      }
      const size_t before_count = labels.size();
      labels.erase(
          std::remove_if(labels.begin(), labels.end(), [&](int32_t l) { return NoWorse(next_node, nodes[l]); }),
          labels.end());
      labels.push_back(static_cast<int32_t>(nodes.size()));
      if (!inserted) more_labels += static_cast<int64_t>(labels.size()) - static_cast<int64_t>(before_count);
      nodes.push_back(next_node);
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
// one (their choices are then not independent), all joined when
// transformed weights count (every choice's weights are resident at every
// step).
std::vector<std::vector<OpId>> SegmentsFor(const Graph& graph, const LayoutConversions& conversions,
                                           const PrimitiveWeights& weights) {
  std::vector<std::vector<OpId>> segments = SplitAtCutPoints(graph);
  if (weights.active()) {
    std::vector<std::vector<OpId>> one(1);
    for (const std::vector<OpId>& segment : segments) one[0].insert(one[0].end(), segment.begin(), segment.end());
    return one;
  }
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
  const PrimitiveWeights weights(graph, buffers.model().count_weights);
  // Per op the alternative aimed at: the fastest first (ties: the smaller
  // workspace).
  std::vector<int> target = FastestChoices(graph);
  while (Clock::now() < deadline && !Cancelled(limits)) {
    const Graph aimed = ChosenGraph(graph, target);
    const BufferModel aimed_buffers(aimed, buffers.model());
    SearchOptions search = limits;
    search.time_limit_seconds = deadline == Clock::time_point::max()
                                    ? 0
                                    : std::max(1e-3, std::chrono::duration<double>(deadline - Clock::now()).count());
    const MinimizeResult best = MinimizePeak(aimed_buffers, GreedyOrder(aimed_buffers), 0, search, budget);
    const std::vector<OpId>& order = best.order;
    if (best.peak_bytes <= budget) return SelectForOrder(buffers, order, budget, deadline);
    // The ops at steps above the budget; with transformed weights, every
    // op (its weights are live at every step). Of them, the one whose
    // step down (an alternative with no more workspace and no more
    // weights) costs the least time per byte saved (the workspace's, at a
    // step above the budget, and the weights') steps down to it.
    std::vector<bool> over(graph.num_ops(), false);
    MemoryTracker tracker(aimed_buffers);
    for (OpId u : order) over[u] = tracker.Run(u) > budget;
    OpId pick = kNoOp;
    int pick_to = -1;
    double pick_rate = kInfinity;
    for (OpId u : order) {  // (ties: the earliest in the order)
      const int from = target[u];
      if (from < 0 || (!over[u] && !weights.active())) continue;
      const Op& op = graph.op(u);
      const int64_t bytes = op.alternatives[from].workspace_bytes;
      for (int a = 0; a < static_cast<int>(op.alternatives.size()); ++a) {
        const Primitive& p = op.alternatives[a];
        const int64_t fewer_weights = weights.Extra(u, from) - weights.Extra(u, a);
        if (p.workspace_bytes > bytes || fewer_weights < 0) continue;
        const int64_t saved = (over[u] ? bytes - p.workspace_bytes : 0) + fewer_weights;
        if (saved <= 0) continue;
        const double rate = (p.time_us - op.alternatives[from].time_us) / static_cast<double>(saved);
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
  // With transformed weights, what is left of the budget past every op's
  // least extra bounds each op's room (MovesOf counts the extras above it).
  const PrimitiveWeights weights(graph, buffers.model().count_weights);
  const int64_t room = weights.RoomFor(budget);

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
    // With transformed weights, an alternative's own extra is resident at
    // its step too.
    FastestThatFits(op, room - ((*surely_live)[u] - (op.alternatives.empty() ? op.workspace_bytes : 0)), &estimate[u],
                    nullptr, 0, weights.active() ? &weights : nullptr, u);
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
  if (std::optional<PrimitiveSelection> s = SelectForOrder(buffers, start_order, budget, deadline)) {
    starts.push_back(*s);
  }
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
  const std::vector<std::vector<OpId>> segments = SegmentsFor(graph, conversions, weights);
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
    SegmentResult segment = SearchSegment(buffers, conversions, weights, before, ops, estimate, budget,
                                          std::move(from_start), share(m, ops_left), limits, &charge);
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
    SegmentResult again = SearchSegment(buffers, conversions, weights, state, segments[k], estimate, budget, solved[k],
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
