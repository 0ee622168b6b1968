#include "core/memory/closure_bound.h"

#include <algorithm>
#include <limits>
#include <memory>
#include <optional>
#include <queue>
#include <utility>
#include <vector>

#include "core/memory/simulator.h"

namespace serenity {
namespace {

constexpr int64_t kInfinite = std::numeric_limits<int64_t>::max() / 4;

// Work (ops and buffers scanned, flow edges added) spent on closures before
// the remaining ops keep their cone bound; counted, not timed, so the bounds
// do not depend on the machine.
constexpr int64_t kWorkBudget = 8'000'000;

// Dinic's maximum flow on a small graph with 64-bit capacities.
class MaxFlow {
 public:
  explicit MaxFlow(int nodes) : first_(nodes, -1), level_(nodes), next_edge_(nodes) {}

  void AddEdge(int from, int to, int64_t capacity) {
    edges_.push_back({to, first_[from], capacity});
    first_[from] = static_cast<int>(edges_.size()) - 1;
    edges_.push_back({from, first_[to], 0});
    first_[to] = static_cast<int>(edges_.size()) - 1;
  }

  int64_t edges() const { return static_cast<int64_t>(edges_.size()); }

  // The maximum flow, or nullopt when `deadline` passed first (read between
  // phases and every 1,024 augmenting paths: one flow over a segment of
  // thousands of ops may take longer than the whole time limit).
  std::optional<int64_t> Run(int source, int sink, std::chrono::steady_clock::time_point deadline) {
    const bool timed = deadline != std::chrono::steady_clock::time_point::max();
    int64_t flow = 0;
    int paths = 0;
    while (Levels(source, sink)) {
      if (timed && std::chrono::steady_clock::now() >= deadline) return std::nullopt;
      next_edge_ = first_;
      while (int64_t pushed = Push(source, sink, kInfinite)) {
        flow += pushed;
        if (timed && ++paths % 1024 == 0 && std::chrono::steady_clock::now() >= deadline) return std::nullopt;
      }
    }
    return flow;
  }

 private:
  struct Edge {
    int to;
    int next;
    int64_t capacity;
  };

  bool Levels(int source, int sink) {
    std::fill(level_.begin(), level_.end(), -1);
    std::queue<int> queue;
    level_[source] = 0;
    queue.push(source);
    while (!queue.empty()) {
      const int v = queue.front();
      queue.pop();
      for (int e = first_[v]; e >= 0; e = edges_[e].next) {
        if (edges_[e].capacity > 0 && level_[edges_[e].to] < 0) {
          level_[edges_[e].to] = level_[v] + 1;
          queue.push(edges_[e].to);
        }
      }
    }
    return level_[sink] >= 0;
  }

  int64_t Push(int v, int sink, int64_t limit) {
    if (v == sink) return limit;
    for (int& e = next_edge_[v]; e >= 0; e = edges_[e].next) {
      Edge& edge = edges_[e];
      if (edge.capacity <= 0 || level_[edge.to] != level_[v] + 1) continue;
      if (int64_t pushed = Push(edge.to, sink, std::min(limit, edge.capacity))) {
        edge.capacity -= pushed;
        edges_[e ^ 1].capacity += pushed;
        return pushed;
      }
    }
    return 0;
  }

  std::vector<int> first_;
  std::vector<Edge> edges_;
  std::vector<int> level_;
  std::vector<int> next_edge_;
};

}  // namespace

// The closure bound at one op's step, with the per-segment data every op
// of a graph shares: only the ops of u's segment that are neither ancestors
// of u nor u or its descendants ("free" ops) are choices (ops of earlier
// segments are ancestors, of later ones descendants), so only the buffers
// made or read in u's segment need a look; the others are live at every op
// of the segment (made before it, read after it) or at none.
class ClosureCuts {
 public:
  ClosureCuts(const BufferModel& buffers, const Reachability& reach)
      : buffers_(buffers),
        graph_(buffers.graph()),
        reach_(reach),
        touching_(reach.num_segments()),
        spanning_(reach.num_segments() + 1, 0),
        span_(buffers.buffers().size()),
        side_(graph_.num_ops()),
        node_of_(graph_.num_ops()) {
    const int segments = reach.num_segments();
    const std::vector<ActivationBuffer>& all = buffers.buffers();
    for (size_t b = 0; b < all.size(); ++b) {
      const ActivationBuffer& buffer = all[b];
      const int first = buffer.producer == kNoOp ? -1 : reach.segment_of(buffer.producer);
      int last = buffer.live_to_end ? segments : first;
      if (first >= 0) touching_[first].push_back(b);
      for (OpId user : buffer.users) {
        const int k = reach.segment_of(user);
        last = std::max(last, k);
        if (k != first && (touching_[k].empty() || touching_[k].back() != b)) touching_[k].push_back(b);
      }
      span_[b] = {first, last};
      if (first + 1 < last) {
        spanning_[first + 1] += buffer.bytes;
        spanning_[last] -= buffer.bytes;
      }
    }
    for (int k = 1; k < segments; ++k) spanning_[k] += spanning_[k - 1];
  }

  // Whether u's bound can be more than its cone bound: its segment has
  // other ops.
  bool HasChoices(OpId u) const { return reach_.segment(reach_.segment_of(u)).size() > 1; }

  // The least bytes live at u's step over the sets S of ops run before it
  // (down-closed, holding u's ancestors and none of its descendants), and,
  // when `forced` is not kNoOp, holding `forced` (forced_before) or not:
  // that op must be free (neither an ancestor nor a descendant of u, nor u)
  // and of u's segment. Adds the work done to `*work`; nullopt when
  // `deadline` passed during the max-flow.
  std::optional<int64_t> At(OpId u, OpId forced, bool forced_before, std::chrono::steady_clock::time_point deadline,
                            int64_t* work) {
    const int k = reach_.segment_of(u);
    const std::vector<OpId>& ops = reach_.segment(k);
    const std::vector<ActivationBuffer>& all = buffers_.buffers();
    auto side_of = [&](OpId v) {
      const int kv = reach_.segment_of(v);
      return kv < k ? kBefore : kv > k ? kAfter : side_[v];
    };
    if (reach_.has_bits(k)) {
      for (OpId v : ops) {
        side_[v] = reach_.IsAncestor(v, u) ? kBefore : (v == u || reach_.IsDescendant(v, u)) ? kAfter : kFree;
      }
    } else {
      // A segment too long for bitsets: u's ancestors and descendants in
      // it by a walk over the edges (paths between its ops stay inside it).
      for (OpId v : ops) side_[v] = kFree;
      MarkReached(u, k, /*forward=*/true, kAfter);
      MarkReached(u, k, /*forward=*/false, kBefore);
      side_[u] = kAfter;
      *work += static_cast<int64_t>(ops.size());
    }
    int nodes = 2;
    for (OpId v : ops) node_of_[v] = side_[v] == kBefore ? kSource : side_[v] == kAfter ? kSink : nodes++;
    int64_t fixed =
        buffers_.resident_bytes() + graph_.op(u).workspace_bytes - buffers_.in_place_bytes(u) + spanning_[k];
    // One extra node per buffer made before or by a free op, read by free ops.
    const std::vector<size_t>& local = touching_[k];
    MaxFlow flow(nodes + static_cast<int>(local.size()));
    bool any_choice = false;
    for (OpId v : ops) {
      if (side_[v] != kFree) continue;
      // Down-closed: a free op that ran brings its free predecessors.
      for (OpId p : graph_.op(v).predecessors) {
        if (side_of(p) == kFree) flow.AddEdge(node_of_[v], node_of_[p], kInfinite);
      }
    }
    if (forced != kNoOp) {
      flow.AddEdge(forced_before ? kSource : node_of_[forced], forced_before ? node_of_[forced] : kSink, kInfinite);
    }
    for (size_t i = 0; i < local.size(); ++i) {
      const ActivationBuffer& buffer = all[local[i]];
      if (span_[local[i]].first < k && k < span_[local[i]].second) continue;  // in spanning_[k]
      if (buffer.producer == u) {
        fixed += buffer.bytes;  // u's outputs
        continue;
      }
      const Side made = buffer.producer == kNoOp ? kBefore : side_of(buffer.producer);
      if (made == kAfter) continue;  // not made yet at u's step
      bool read_after = buffer.live_to_end, read_free = false;
      for (OpId user : buffer.users) {
        read_after = read_after || side_of(user) == kAfter;
        read_free = read_free || side_of(user) == kFree;
      }
      const int node = nodes + static_cast<int>(i);
      if (made == kBefore) {
        if (read_after) {
          fixed += buffer.bytes;  // made before u and read at or after it
        } else if (read_free) {
          // Live unless every free reader ran before u.
          flow.AddEdge(kSource, node, buffer.bytes);
          for (OpId user : buffer.users) {
            if (side_of(user) == kFree) flow.AddEdge(node, node_of_[user], kInfinite);
          }
          any_choice = true;
        }
        continue;
      }
      // Made by a free op: live if that op ran and a reader has not.
      if (read_after) {
        flow.AddEdge(node_of_[buffer.producer], kSink, buffer.bytes);
        any_choice = true;
      } else if (read_free) {
        flow.AddEdge(node_of_[buffer.producer], node, buffer.bytes);
        for (OpId user : buffer.users) {
          if (side_of(user) == kFree) flow.AddEdge(node, node_of_[user], kInfinite);
        }
        any_choice = true;
      }
    }
    *work += static_cast<int64_t>(ops.size() + local.size()) + 4 * flow.edges();
    const std::optional<int64_t> cut_bytes = any_choice ? flow.Run(kSource, kSink, deadline) : 0;
    if (!cut_bytes.has_value()) return std::nullopt;
    return fixed + *cut_bytes;
  }

  // Whether u's segment has bitsets (reachability.h).
  bool HasBits(OpId u) const { return reach_.has_bits(reach_.segment_of(u)); }

 private:
  enum Side : int8_t { kBefore, kFree, kAfter };
  static constexpr int kSource = 0, kSink = 1;

  // Sets `side` on the ops of segment k reached from u over successors
  // (forward) or predecessors, u excluded.
  void MarkReached(OpId u, int k, bool forward, Side side) {
    walk_.assign(1, u);
    while (!walk_.empty()) {
      const OpId v = walk_.back();
      walk_.pop_back();
      const Op& op = graph_.op(v);
      for (OpId w : forward ? op.successors : op.predecessors) {
        if (reach_.segment_of(w) != k || side_[w] == side) continue;
        side_[w] = side;
        walk_.push_back(w);
      }
    }
  }

  const BufferModel& buffers_;
  const Graph& graph_;
  const Reachability& reach_;
  std::vector<std::vector<size_t>> touching_;
  std::vector<int64_t> spanning_;          // a difference over segments, summed
  std::vector<std::pair<int, int>> span_;  // producer's and last reader's segments
  std::vector<Side> side_;
  std::vector<int> node_of_;
  std::vector<OpId> walk_;  // MarkReached's stack
};

std::vector<int64_t> ClosureStepLowerBounds(const BufferModel& buffers, const Reachability& reach,
                                            std::chrono::steady_clock::time_point deadline, bool* cut,
                                            absl::Span<const int64_t> steps, int64_t floor) {
  const Graph& graph = buffers.graph();
  const int n = graph.num_ops();
  // Start from the cone bounds; improve ops in order of decreasing cone
  // bound (the likeliest to set the maximum) while the work budget lasts.
  std::vector<int64_t> bounds = StepLowerBounds(buffers, reach);
  std::vector<OpId> by_bound(n);
  for (OpId u = 0; u < n; ++u) by_bound[u] = u;
  std::stable_sort(by_bound.begin(), by_bound.end(), [&](OpId a, OpId b) { return bounds[a] > bounds[b]; });
  // The largest bound found so far, or `floor`.
  int64_t largest = floor;
  for (OpId u = 0; u < n; ++u) largest = std::max(largest, bounds[u]);
  ClosureCuts cuts(buffers, reach);
  int64_t work = 0;
  const bool timed = deadline != std::chrono::steady_clock::time_point::max();
  for (OpId u : by_bound) {
    if (work > kWorkBudget) break;
    // A cut point has no free ops: its cone bound is its closure bound.
    if (!cuts.HasChoices(u)) continue;
    // Its bound, at most its step, cannot raise the largest.
    if (!steps.empty() && steps[u] <= largest) continue;
    if (timed && std::chrono::steady_clock::now() >= deadline) {
      if (cut != nullptr) *cut = true;
      break;
    }
    const std::optional<int64_t> at = cuts.At(u, kNoOp, false, deadline, &work);
    if (!at.has_value()) {  // u keeps its cone bound
      if (cut != nullptr) *cut = true;
      break;
    }
    bounds[u] = std::max(bounds[u], *at);
    largest = std::max(largest, bounds[u]);
  }
  return bounds;
}

PairBounds::PairBounds(const BufferModel& buffers, const Reachability& reach)
    : cuts_(std::make_unique<ClosureCuts>(buffers, reach)), reach_(reach) {}

PairBounds::~PairBounds() = default;

int64_t PairBounds::Of(absl::Span<const OpId> ops, int64_t known, std::chrono::steady_clock::time_point deadline,
                       bool* cut, absl::Span<const int64_t> steps) {
  int64_t best = known;
  const bool timed = deadline != std::chrono::steady_clock::time_point::max();
  bool stopped = false;
  // The least bytes at x's step with y run before it (or not); nullopt on
  // the deadline (then *cut) or the work budget.
  const auto at = [&](OpId x, OpId y, bool y_before) -> std::optional<int64_t> {
    if (work_ > kWorkBudget) return std::nullopt;
    if (timed && std::chrono::steady_clock::now() >= deadline) {
      stopped = true;
      return std::nullopt;
    }
    std::optional<int64_t> bytes = cuts_->At(x, y, y_before, deadline, &work_);
    stopped = stopped || !bytes.has_value();
    return bytes;
  };
  const size_t first = std::min(ops.size(), kFirstOps);
  for (size_t i = 0; i < first; ++i) {
    const OpId u = ops[i];
    // Partners need the bitsets (IsAncestor below).
    if (!cuts_->HasChoices(u) || !cuts_->HasBits(u)) continue;
    size_t partners = 0;
    for (size_t j = 0; j < ops.size() && partners < kPartners; ++j) {
      const OpId v = ops[j];
      if (j == i || reach_.segment_of(u) != reach_.segment_of(v) || reach_.IsAncestor(u, v) ||
          reach_.IsDescendant(u, v)) {
        continue;
      }
      ++partners;
      if (j < i) continue;  // v is a first op too: tried from v's list, if at all
      if (!steps.empty() && std::max(steps[u], steps[v]) <= best) continue;  // cannot raise it
      // v before u, or u before v: the order pays the larger step of each.
      std::optional<int64_t> a = at(u, v, true), a2 = a.has_value() ? at(v, u, false) : std::nullopt;
      if (!a2.has_value()) {
        if (stopped && cut != nullptr) *cut = true;
        return best;
      }
      const int64_t v_first = std::max(*a, *a2);
      if (v_first <= best) continue;  // the pair cannot raise the bound
      std::optional<int64_t> b = at(v, u, true), b2 = b.has_value() ? at(u, v, false) : std::nullopt;
      if (!b2.has_value()) {
        if (stopped && cut != nullptr) *cut = true;
        return best;
      }
      best = std::max(best, std::min(v_first, std::max(*b, *b2)));
    }
  }
  return best;
}

}  // namespace serenity
