#include "core/schedule/budget_search.h"

#include <algorithm>
#include <deque>
#include <functional>
#include <memory>
#include <tuple>

#include "core/memory/closure_bound.h"
#include "core/memory/simulator.h"
#include "core/schedule/partition.h"
#include "core/schedule/signature_set.h"
#include "core/schedule/window_search.h"

namespace serenity {

using Clock = std::chrono::steady_clock;

namespace {

// Bytes op `u` allocates, and those of them nobody reads and no output
// keeps (they die with its step).
int64_t AllocBytes(const BufferModel& buffers, OpId u) {
  int64_t bytes = 0;
  for (BufferId b : buffers.allocates(u)) bytes += buffers.buffers()[b].bytes;
  return bytes;
}
int64_t DeadBytes(const BufferModel& buffers, OpId u) {
  int64_t bytes = 0;
  for (BufferId b : buffers.allocates(u)) {
    const ActivationBuffer& buffer = buffers.buffers()[b];
    if (buffer.users.empty() && !buffer.live_to_end) bytes += buffer.bytes;
  }
  return bytes;
}
// Bytes buffer `b` frees when its last reader runs (0 when live to the end).
int64_t FreeableBytes(const BufferModel& buffers, BufferId b) {
  const ActivationBuffer& buffer = buffers.buffers()[b];
  return buffer.live_to_end ? 0 : buffer.bytes;
}

// The part's ops in ascending id (all ops for an empty part).
std::vector<OpId> PartOps(const Graph& graph, const Subproblem& part) {
  std::vector<OpId> ops = part.ops;
  if (ops.empty()) {
    ops.resize(graph.num_ops());
    for (OpId u = 0; u < graph.num_ops(); ++u) ops[u] = u;
  }
  std::sort(ops.begin(), ops.end());
  return ops;
}

}  // namespace

std::vector<int64_t> LiveBytesAlong(const BufferModel& buffers, absl::Span<const OpId> order) {
  std::vector<int64_t> live(order.size() + 1);
  MemoryTracker tracker(buffers);
  live[0] = tracker.live_bytes();
  for (size_t k = 0; k < order.size(); ++k) {
    tracker.Run(order[k]);
    live[k + 1] = tracker.live_bytes();
  }
  return live;
}

// The search state is the scheduled set plus what follows from it (live
// bytes, remaining readers per buffer, indegrees, the ready list), updated
// in place with an undo trail for backtracking. It knows only the part's
// ops and the buffers they read, by local index (ops_ and buffer_ids_; a
// local op index orders as its op id does): the done ops are summed up in
// the state a check starts from, so a segment of a long graph costs memory
// and setup time in proportion to itself, not to the graph.
class BudgetSearch::Impl {
 public:
  Impl(const BufferModel& buffers, const SearchOptions& options, const Subproblem& part)
      : options_(options),
        buffers_(buffers),
        graph_(buffers.graph()),
        ops_(PartOps(graph_, part)),
        words_((ops_.size() + 63) / 64),
        visited_(words_),
        memo_charge_(options.memory) {
    const int m = static_cast<int>(ops_.size());
    const bool whole = part.ops.empty();
    auto local_op = [&](OpId u) -> int32_t {
      if (whole) return u;
      auto it = std::lower_bound(ops_.begin(), ops_.end(), u);
      return it != ops_.end() && *it == u ? static_cast<int32_t>(it - ops_.begin()) : -1;
    };
    // Which ops ran before the part: by position when the caller gave
    // them, else the done list.
    int32_t begin = 0;
    std::vector<bool> done_mark;
    if (!whole && part.position != nullptr) {
      begin = INT32_MAX;
      for (OpId u : part.ops) begin = std::min(begin, (*part.position)[u]);
    } else if (!whole) {
      done_mark.assign(graph_.num_ops(), false);
      for (OpId u : part.done) done_mark[u] = true;
    }
    auto done = [&](OpId u) {
      if (whole) return false;
      return part.position != nullptr ? (*part.position)[u] < begin : static_cast<bool>(done_mark[u]);
    };
    at_start_ = whole || (part.position != nullptr ? begin == 0 : part.done.empty());
    live_start_ = whole                      ? buffers.resident_bytes() + buffers.input_bytes()
                  : part.position != nullptr ? part.live_after_done
                                             : LiveBytesAlong(buffers, part.done).back();

    if (!part.preferred.empty()) {
      rank_.assign(m, INT32_MAX);
      for (size_t k = 0; k < part.preferred.size(); ++k) {
        if (const int32_t j = local_op(part.preferred[k]); j >= 0) rank_[j] = static_cast<int32_t>(k);
      }
    }
    // The buffers the part's ops read, by id.
    for (OpId u : ops_) {
      for (BufferId b : buffers.reads(u)) buffer_ids_.push_back(b);
      for (BufferId b : buffers.in_place_inputs(u)) buffer_ids_.push_back(b);
    }
    std::sort(buffer_ids_.begin(), buffer_ids_.end());
    buffer_ids_.erase(std::unique(buffer_ids_.begin(), buffer_ids_.end()), buffer_ids_.end());
    auto local_buffer = [&](BufferId b) {
      return static_cast<int32_t>(std::lower_bound(buffer_ids_.begin(), buffer_ids_.end(), b) - buffer_ids_.begin());
    };

    alloc_bytes_.resize(m);
    dead_bytes_.resize(m);
    workspace_bytes_.resize(m);
    in_place_bytes_.resize(m);
    start_indegree_.resize(m);
    successors_.begin.push_back(0);
    reads_.begin.push_back(0);
    in_place_inputs_.begin.push_back(0);
    for (int i = 0; i < m; ++i) {
      const OpId u = ops_[i];
      alloc_bytes_[i] = AllocBytes(buffers, u);
      dead_bytes_[i] = DeadBytes(buffers, u);
      workspace_bytes_[i] = graph_.op(u).workspace_bytes;
      in_place_bytes_[i] = buffers.in_place_bytes(u);
      // Successors outside the part never become ready; predecessors
      // neither done nor in the part never run, so neither does `u`.
      for (OpId v : graph_.op(u).successors) {
        if (const int32_t j = local_op(v); j >= 0) successors_.items.push_back(j);
      }
      successors_.begin.push_back(static_cast<int32_t>(successors_.items.size()));
      int32_t indegree = 0;
      for (OpId p : graph_.op(u).predecessors) indegree += done(p) ? 0 : 1;
      start_indegree_[i] = indegree;
      if (indegree == 0) start_ready_.push_back(i);
      for (BufferId b : buffers.reads(u)) reads_.items.push_back(local_buffer(b));
      reads_.begin.push_back(static_cast<int32_t>(reads_.items.size()));
      for (BufferId b : buffers.in_place_inputs(u)) in_place_inputs_.items.push_back(local_buffer(b));
      in_place_inputs_.begin.push_back(static_cast<int32_t>(in_place_inputs_.items.size()));
    }

    // Buffers whose readers' persisting outputs, all of them together, take
    // no more than the buffer: any remaining readers then qualify for a
    // forced set on that count. (Checking the remaining readers instead
    // found a few more sets but made every state 1.7x dearer on RandWire.)
    // A buffer that a reader outside the part still waits for never
    // qualifies: that reader never becomes ready.
    const size_t buffer_count = buffer_ids_.size();
    freeable_bytes_.resize(buffer_count);
    start_remaining_.resize(buffer_count);
    set_candidate_.assign(buffer_count, false);
    users_.begin.push_back(0);
    for (size_t lb = 0; lb < buffer_count; ++lb) {
      const BufferId b = buffer_ids_[lb];
      const ActivationBuffer& buffer = buffers.buffers()[b];
      freeable_bytes_[lb] = FreeableBytes(buffers, b);
      int32_t remaining = 0;
      bool waits_outside = false;
      for (OpId v : buffer.users) {
        if (done(v)) continue;
        ++remaining;
        if (const int32_t j = local_op(v); j >= 0) {
          users_.items.push_back(j);  // users are in ascending op order
        } else {
          waits_outside = true;
        }
      }
      users_.begin.push_back(static_cast<int32_t>(users_.items.size()));
      start_remaining_[lb] = remaining;
      if (buffer.users.size() < 2 || freeable_bytes_[lb] == 0 || waits_outside) continue;
      int64_t outputs = 0;
      for (OpId v : buffer.users) outputs += AllocBytes(buffers, v) - DeadBytes(buffers, v);
      set_candidate_[lb] = outputs <= freeable_bytes_[lb];
      any_set_candidate_ = any_set_candidate_ || set_candidate_[lb];
    }
  }

  Feasibility Check(int64_t budget, Clock::time_point deadline, std::vector<OpId>* order, int64_t* next_budget,
                    SearchStats* stats, int64_t max_states) {
    // The sets the last checks left in the memo have no completion within
    // memo_budget_, so none within a smaller budget either: a check at a
    // smaller budget skips them. A kept memo counts against this check's
    // cap, which may be smaller than the last one's (more segments to
    // check): it is kept only while it leaves at least half of the cap.
    // Otherwise the memo starts empty.
    max_states_ = max_states > 0 ? max_states : options_.max_states;
    const bool reuse =
        memo_budget_ >= 0 && budget <= memo_budget_ && static_cast<int64_t>(visited_.size()) * 2 <= max_states_;
    if (!reuse) ReleaseMemo();
    Reset();
    budget_ = budget;
    deadline_ = deadline;
    aborted_ = false;
    memory_limited_ = false;
    expanded_ = 0;
    // A set skipped for the memo may fit any budget above memo_budget_.
    next_budget_ = reuse ? memo_budget_ + 1 : INT64_MAX;
    path_marks_.clear();
    const bool found = Explore();
    stats->states += expanded_;
    stats->peak_memo_bytes = std::max<int64_t>(stats->peak_memo_bytes, static_cast<int64_t>(visited_.MemoryBytes()));
    ++stats->checks;
    if (found) {
      order->clear();
      for (int32_t i : trail_) order->push_back(ops_[i]);
      // The sets on the way to the order are in the memo but may have a
      // completion within a smaller budget; every other set in it failed.
      // (A relaxed search's failures prove nothing: its memo is not kept.)
      ForgetPath();
      memo_budget_ = options_.seemingly_good ? -1 : budget;
      return Feasibility::kFeasible;
    }
    if (aborted_) stats->hit_limit = true;
    if (memory_limited_) stats->hit_memory_limit = true;
    *next_budget = next_budget_;
    ReleaseMemo();
    // A relaxed search that found nothing proves nothing.
    return aborted_ || options_.seemingly_good ? Feasibility::kUnknown : Feasibility::kInfeasible;
  }

  void ReleaseMemo() {
    visited_.Clear();
    memo_charge_.Reset();
    memo_budget_ = -1;
  }

 private:
  // The state after the done ops.
  void Reset() {
    scheduled_.assign(words_, 0);
    remaining_users_ = start_remaining_;
    indegree_ = start_indegree_;
    ready_ = start_ready_;
    live_ = live_start_;
    trail_.clear();
    live_trail_.clear();
  }

  // Erases from the memo the sets the search inserted on its way to the
  // order it found (their trail lengths are path_marks_).
  void ForgetPath() {
    std::vector<uint64_t> prefix(words_, 0);
    size_t length = 0;
    for (size_t mark : path_marks_) {
      for (; length < mark; ++length) {
        const int32_t i = trail_[length];
        prefix[i / 64] |= uint64_t{1} << (i % 64);
      }
      visited_.Erase(prefix.data());
    }
    path_marks_.clear();
  }

  // StepBytes and OwnDelta of ready_[i] in the state RunForced left.
  std::vector<int64_t> ready_step_, ready_delta_;
  std::vector<int32_t> set_scratch_;  // RunForcedSet's readers
  std::vector<bool> set_candidate_;   // see the constructor
  bool any_set_candidate_ = false;

  // Below, ops and buffers are the part's local indices.
  int64_t StepBytes(int32_t u) const {
    int64_t step = live_ + alloc_bytes_[u] + workspace_bytes_[u];
    for (int32_t b : in_place_inputs_.Of(u)) {
      if (remaining_users_[b] == 1) return step - in_place_bytes_[u];
    }
    return step;
  }

  // How running `u` next changes the live bytes by itself: its outputs that
  // outlive the step, less the inputs whose last reader it is.
  int64_t OwnDelta(int32_t u) const {
    int64_t delta = alloc_bytes_[u] - dead_bytes_[u];
    for (int32_t b : reads_.Of(u)) {
      if (remaining_users_[b] == 1) delta -= freeable_bytes_[b];
    }
    return delta;
  }

  // Live bytes after running `u` next. Graph inputs nobody reads die after
  // the first step whichever op runs it, so they are no part of OwnDelta.
  int64_t BytesAfter(int32_t u) const { return AfterDelta(OwnDelta(u)); }
  // The same for an op whose OwnDelta is `delta`.
  int64_t AfterDelta(int64_t delta) const {
    return live_ + delta - (at_start_ && trail_.empty() ? buffers_.unused_input_bytes() : 0);
  }

  void Apply(int32_t u) {
    live_trail_.push_back(live_);
    live_ = BytesAfter(u);
    for (int32_t b : reads_.Of(u)) --remaining_users_[b];
    scheduled_[u / 64] |= uint64_t{1} << (u % 64);
    ready_.erase(std::find(ready_.begin(), ready_.end(), u));
    for (int32_t v : successors_.Of(u)) {
      if (--indegree_[v] == 0) ready_.insert(std::lower_bound(ready_.begin(), ready_.end(), v), v);
    }
    trail_.push_back(u);
  }

  void Undo() {
    const int32_t u = trail_.back();
    trail_.pop_back();
    for (int32_t v : successors_.Of(u)) {
      if (indegree_[v]++ == 0) ready_.erase(std::find(ready_.begin(), ready_.end(), v));
    }
    ready_.insert(std::lower_bound(ready_.begin(), ready_.end(), u), u);
    scheduled_[u / 64] &= ~(uint64_t{1} << (u % 64));
    for (int32_t b : reads_.Of(u)) ++remaining_users_[b];
    live_ = live_trail_.back();
    live_trail_.pop_back();
  }

  void UndoTo(size_t mark) {
    while (trail_.size() > mark) Undo();
  }

  // Runs forced transitions until none applies: single ops that fit the
  // budget and do not raise the live bytes, then pairs (u, v) where v becomes
  // ready with u, both fit, v does not raise the live bytes after u, and the
  // pair together does not raise them. Moving such a pair to the front of a
  // completion that fits the budget lowers or keeps every later step: before
  // u's old position by the pair's delta, between u and v by v's.
  void RunForced() {
    bool progress = true;
    while (progress) {
      progress = false;
      // The ready ops' step bytes and deltas, computed once per state: the
      // pairs below and Expand's candidates read them.
      ready_step_.resize(ready_.size());
      ready_delta_.resize(ready_.size());
      for (size_t i = 0; i < ready_.size(); ++i) {
        const int32_t u = ready_[i];
        ready_step_[i] = StepBytes(u);
        ready_delta_[i] = OwnDelta(u);
        if (options_.forced_transitions && ready_step_[i] <= budget_ && ready_delta_[i] <= 0) {
          Apply(u);
          progress = true;
          break;
        }
      }
      if (progress || !options_.forced_pairs) continue;
      for (size_t i = 0; i < ready_.size() && !progress; ++i) {
        const int32_t u = ready_[i];
        if (ready_step_[i] > budget_) continue;
        const int64_t delta_u = ready_delta_[i];
        // Probe the state after u (live bytes, readers left) without
        // applying it: only a pair that qualifies is applied.
        const int64_t live_before = live_;
        live_ = AfterDelta(delta_u);
        for (int32_t b : reads_.Of(u)) --remaining_users_[b];
        int32_t pair = -1;
        for (int32_t v : successors_.Of(u)) {
          if (indegree_[v] != 1) continue;  // v becomes ready with u
          const int64_t delta_v = OwnDelta(v);
          if (StepBytes(v) <= budget_ && delta_v <= 0 && delta_u + delta_v <= 0) {
            pair = v;
            break;
          }
        }
        for (int32_t b : reads_.Of(u)) ++remaining_users_[b];
        live_ = live_before;
        if (pair >= 0) {
          Apply(u);
          Apply(pair);
          progress = true;
        }
      }
      if (!progress && options_.forced_sets && any_set_candidate_) progress = RunForcedSet();
      if (!progress && options_.seemingly_good) progress = RunSeeminglyGood();
    }
  }

  // Relaxed mode (SearchOptions::seemingly_good): runs the ready op that
  // fits, frees a buffer and leaves the fewest live bytes. True when one ran.
  bool RunSeeminglyGood() {
    int32_t chosen = -1;
    int64_t chosen_after = 0;
    for (int32_t u : ready_) {
      if (StepBytes(u) > budget_) continue;
      bool frees = false;
      for (int32_t b : reads_.Of(u)) frees = frees || (remaining_users_[b] == 1 && freeable_bytes_[b] > 0);
      if (!frees) continue;
      const int64_t after = BytesAfter(u);
      if (chosen < 0 || after < chosen_after) {
        chosen = u;
        chosen_after = after;
      }
    }
    if (chosen < 0) return false;
    Apply(chosen);
    return true;
  }

  // Runs one forced transition set, if any (see the header): the first live
  // buffer, by ready reader then input, with at least two remaining readers,
  // all ready, whose persisting outputs total at most its bytes and whose
  // steps fit the budget in op order. True when one ran.
  bool RunForcedSet() {
    std::vector<int32_t>& readers = set_scratch_;
    for (size_t i = 0; i < ready_.size(); ++i) {
      for (int32_t b : reads_.Of(ready_[i])) {
        if (!set_candidate_[b] || remaining_users_[b] < 2) continue;
        readers.clear();
        bool all_ready = true;
        for (int32_t v : users_.Of(b)) {
          if (Scheduled(v)) continue;
          if (indegree_[v] != 0) {
            all_ready = false;
            break;
          }
          readers.push_back(v);  // users are in ascending op order
        }
        if (!all_ready) continue;
        const size_t mark = trail_.size();
        bool fits = true;
        for (size_t k = 0; k < readers.size() && fits; ++k) {
          fits = StepBytes(readers[k]) <= budget_;
          if (fits) Apply(readers[k]);
        }
        if (fits) return true;
        UndoTo(mark);
      }
    }
    return false;
  }

  bool Explore() {
    const size_t mark = trail_.size();
    RunForced();
    if (trail_.size() == ops_.size()) return true;
    if (!aborted_) {
      const int64_t need = static_cast<int64_t>(visited_.BytesForInsert());
      if (need > memo_charge_.bytes() && !memo_charge_.TryResize(need)) {
        aborted_ = true;  // as at the state cap
        memory_limited_ = true;
      }
    }
    if (aborted_ || !visited_.Insert(scheduled_.data())) {
      UndoTo(mark);
      return false;
    }
    path_marks_.push_back(trail_.size());
    if (Expand(mark)) return true;
    path_marks_.pop_back();
    return false;
  }

  // Explore's branching over the ready ops, for a set just added to the
  // memo; `mark` is the trail length Explore started from.
  bool Expand(size_t mark) {
    if (++expanded_ % 1024 == 0 &&
        (Clock::now() > deadline_ || static_cast<int64_t>(visited_.size()) > max_states_ || Cancelled(options_))) {
      aborted_ = true;
      UndoTo(mark);
      return false;
    }
    // Branch over the ready ops that fit, in branching order (Before). A
    // node keeps at most options_.kept_candidates of them, the first in that order,
    // in its depth's list (reused across nodes, no allocation per node);
    // each later one is found by a scan of the ready ops, the state being
    // the same after each child's Undo. A search thousands of levels deep
    // over thousands of ready ops (a 100,000-op decoder stack) so holds
    // kilobytes per level, not its ready list (gigabytes).
    if (depth_ == candidates_.size()) candidates_.emplace_back();
    std::vector<Candidate>& kept = candidates_[depth_];  // a deque's: stable while deeper levels are added
    std::vector<Candidate>& fitting = fitting_scratch_;  // reused by the levels below
    fitting.clear();
    // RunForced left the ready ops' costs of this state.
    for (size_t i = 0; i < ready_.size(); ++i) {
      const int64_t step = ready_step_[i];
      if (step <= budget_) {
        fitting.emplace_back(AfterDelta(ready_delta_[i]), step, ready_[i]);
      } else {
        next_budget_ = std::min(next_budget_, step);
      }
    }
    // Relaxed mode branches only over the transitions that seem best.
    const size_t total = options_.seemingly_good
                             ? std::min(fitting.size(), static_cast<size_t>(std::max(1, options_.relaxed_branching)))
                             : fitting.size();
    const auto before = [this](const Candidate& a, const Candidate& b) { return Before(a, b); };
    const size_t keep = std::min(total, static_cast<size_t>(std::max(1, options_.kept_candidates)));
    if (keep == fitting.size()) {
      std::sort(fitting.begin(), fitting.end(), before);
    } else {
      std::partial_sort(fitting.begin(), fitting.begin() + static_cast<long>(keep), fitting.end(), before);
    }
    kept.assign(fitting.begin(), fitting.begin() + static_cast<long>(keep));
    ++depth_;
    Candidate last;
    for (size_t tried = 0; tried < total; ++tried) {
      if (tried < kept.size()) {
        last = kept[tried];
      } else if (!NextCandidate(&last)) {
        break;
      }
      Apply(std::get<2>(last));
      if (Explore()) {
        --depth_;
        return true;
      }
      Undo();
      if (aborted_) break;
    }
    --depth_;
    UndoTo(mark);
    return false;
  }

  // A ready op's place in the branching order: (live bytes after it, its
  // step, the op).
  using Candidate = std::tuple<int64_t, int64_t, int32_t>;

  // Branching order: along the preferred order when there is one (not in
  // relaxed mode, which keeps the transitions that seem best), then by the
  // tuple: the op leaving the fewest live bytes first.
  bool Before(const Candidate& a, const Candidate& b) const {
    if (!rank_.empty() && !options_.seemingly_good) {
      const int32_t ra = rank_[std::get<2>(a)], rb = rank_[std::get<2>(b)];
      if (ra != rb) return ra < rb;
    }
    return a < b;
  }

  // The ready op that fits the budget and comes next after `*last` in
  // branching order, in the current state (the one Expand started from):
  // false when none does.
  bool NextCandidate(Candidate* last) const {
    bool found = false;
    Candidate next;
    for (int32_t u : ready_) {
      const int64_t step = StepBytes(u);
      if (step > budget_) continue;
      const Candidate c(BytesAfter(u), step, u);
      if (Before(*last, c) && (!found || Before(c, next))) {
        next = c;
        found = true;
      }
    }
    if (found) *last = next;
    return found;
  }

  // Lists by local index, back to back: item i's are items[begin[i]] up to
  // items[begin[i + 1]].
  struct Lists {
    std::vector<int32_t> begin, items;
    absl::Span<const int32_t> Of(int32_t i) const {
      return absl::Span<const int32_t>(items.data() + begin[i], static_cast<size_t>(begin[i + 1] - begin[i]));
    }
  };

  const SearchOptions options_;
  const BufferModel& buffers_;
  const Graph& graph_;
  const std::vector<OpId> ops_;  // the part's ops by local index, ascending
  const size_t words_;
  std::vector<BufferId> buffer_ids_;  // the buffers they read by local index, ascending
  bool at_start_ = true;              // no op ran before the part
  bool Scheduled(int32_t v) const { return (scheduled_[v / 64] >> (v % 64) & 1) != 0; }
  std::vector<int32_t> rank_;  // by local op: its place in Subproblem::preferred (empty: none)
  // By local op.
  std::vector<int64_t> alloc_bytes_;
  std::vector<int64_t> dead_bytes_;
  std::vector<int64_t> workspace_bytes_;
  std::vector<int64_t> in_place_bytes_;
  Lists successors_;       // in the part, in the graph's order
  Lists reads_;            // local buffers, as BufferModel::reads
  Lists in_place_inputs_;  // local buffers, as BufferModel::in_place_inputs
  // By local buffer: the bytes it frees when its last reader runs (0 when
  // it is live to the end), beside the remaining-reader counts: OwnDelta
  // reads no ActivationBuffer. Its readers in the part.
  std::vector<int64_t> freeable_bytes_;
  Lists users_;
  // The state after the done ops: what Reset starts a check from.
  int64_t live_start_ = 0;
  std::vector<int32_t> start_remaining_;  // by local buffer
  std::vector<int32_t> start_indegree_;   // by local op
  std::vector<int32_t> start_ready_;      // ascending

  int64_t budget_ = 0;
  int64_t max_states_ = 0;  // this check's cap
  Clock::time_point deadline_;
  bool aborted_ = false;
  int64_t expanded_ = 0;
  int64_t next_budget_ = INT64_MAX;  // smallest step the budget cut off

  std::vector<uint64_t> scheduled_;
  std::vector<int32_t> remaining_users_;
  std::vector<int32_t> indegree_;
  std::vector<int32_t> ready_;  // ascending
  int64_t live_ = 0;
  std::vector<int32_t> trail_;
  std::vector<int64_t> live_trail_;
  SignatureSet visited_;
  MemoryCharge memo_charge_;  // visited_'s bytes, on options_.memory
  bool memory_limited_ = false;
  // Budget at or below which no set in visited_ has a fitting completion;
  // -1 when the memo is not to be reused.
  int64_t memo_budget_ = -1;
  std::vector<size_t> path_marks_;                 // trail lengths of the sets on the current path
  size_t depth_ = 0;                               // recursion depth of Explore
  std::deque<std::vector<Candidate>> candidates_;  // kept candidates by depth (Expand)
  std::vector<Candidate> fitting_scratch_;         // one node's fitting ready ops, while it sorts them
};

BudgetSearch::BudgetSearch(const BufferModel& buffers, const SearchOptions& options, const Subproblem& part)
    : impl_(std::make_unique<Impl>(buffers, options, part)) {}
BudgetSearch::~BudgetSearch() = default;

void BudgetSearch::ReleaseMemo() { impl_->ReleaseMemo(); }

Feasibility BudgetSearch::Check(int64_t budget, Clock::time_point deadline, std::vector<OpId>* order,
                                int64_t* next_budget, SearchStats* stats, int64_t max_states) {
  return impl_->Check(budget, deadline, order, next_budget, stats, max_states);
}

namespace {

// The most time the first round of MinimizePeak spends at the proven bound.
constexpr std::chrono::seconds kBoundTestTime(1);

// With a time limit, the per-op closure bounds and the pairs' bounds before
// the rounds take at most max(kBoundsSecondsFloor, kBoundsSecondsPerOp x
// ops) (and half the limit). On the benchmark models they end far below
// the floor; on long segments their max-flows grow faster than the graph,
// and on layered DAGs of thousands of ops they took seconds of the default
// limit without raising the bound that the windows then settled
// (bench/RESULTS.md, "Long graphs with the default time limit").
constexpr double kBoundsSecondsFloor = 0.25;
constexpr double kBoundsSecondsPerOp = 2.5e-6;

// Segments of at least this many ops that the bounds leave open are worked
// on by windows (window_search.h) before the rounds. Below it the rounds'
// own checks find better orders and the proof needs the time (a layered
// DAG of 1,000 ops is proven in about 0.9 s of a 1 s limit).
constexpr size_t kWindowSegmentOps = 1500;

// The memo of one check of such a segment holds at most this many bytes.
constexpr int64_t kMaxLongMemoBytes = int64_t{256} << 20;

// One segment of the graph (partition.h) and what is known about it.
struct Segment {
  std::vector<OpId> ops;
  size_t done_before = 0;                // ops of the segments before it
  std::unique_ptr<BudgetSearch> search;  // made at its first check
  std::vector<OpId> best;                // best order of the segment's ops
  int64_t best_peak = 0;                 // its largest step
  int64_t lower = 0;                     // proven: no order of the segment has a smaller largest step
  // The last check's outcome.
  Feasibility answer = Feasibility::kUnknown;
  std::vector<OpId> order;
  int64_t next_budget = INT64_MAX;
  SearchStats stats;
};

}  // namespace

MinimizeResult MinimizePeak(const BufferModel& buffers, std::vector<OpId> initial_order, int64_t lower_bound,
                            const SearchOptions& options, int64_t good_enough, Executor* executor) {
  const Graph& graph = buffers.graph();
  const Clock::time_point deadline =
      options.time_limit_seconds > 0
          ? Clock::now() + std::chrono::microseconds(static_cast<int64_t>(options.time_limit_seconds * 1e6))
          : Clock::time_point::max();

  // Step bytes of the initial order by op.
  std::vector<int64_t> step_of(graph.num_ops());
  {
    MemoryTracker tracker(buffers);
    for (OpId u : initial_order) step_of[u] = tracker.Run(u);
  }
  const int64_t initial_peak = step_of.empty() ? 0 : *std::max_element(step_of.begin(), step_of.end());
  std::vector<int> position(graph.num_ops());
  for (size_t i = 0; i < initial_order.size(); ++i) position[initial_order[i]] = static_cast<int>(i);

  // A segment's search is made when it is first checked: most segments of a
  // long graph (a chain has one per op) never need one. Each costs time and
  // memory in proportion to the segment and the buffers it reads: it starts
  // from the state before the segment (segment_position, live_before).
  std::vector<Segment> segments;
  // Every segment's ops, segment after segment (each in a topological
  // order: partition.h), so a prefix is a valid order of the segments before.
  std::vector<OpId> segment_ops;
  for (std::vector<OpId>& ops : SplitAtCutPoints(graph)) {
    Segment segment;
    segment.best = ops;
    std::sort(segment.best.begin(), segment.best.end(), [&](OpId a, OpId b) { return position[a] < position[b]; });
    for (OpId u : ops) segment.best_peak = std::max(segment.best_peak, step_of[u]);
    segment.done_before = segment_ops.size();
    segment_ops.insert(segment_ops.end(), ops.begin(), ops.end());
    segment.ops = std::move(ops);
    segments.push_back(std::move(segment));
  }
  std::vector<int32_t> segment_position(graph.num_ops());
  for (size_t i = 0; i < segment_ops.size(); ++i) segment_position[segment_ops[i]] = static_cast<int32_t>(i);
  const std::vector<int64_t> live_before = LiveBytesAlong(buffers, segment_ops);

  // The per-op bounds take at most half the time limit (the search needs
  // the rest), and no more than kBoundsSecondsFloor or kBoundsSecondsPerOp
  // per op, whichever is more; the ops not reached keep their cone bounds.
  bool bounds_cut = false;
  const Clock::time_point bounds_deadline =
      deadline == Clock::time_point::max()
          ? deadline
          : Clock::now() + std::chrono::microseconds(static_cast<int64_t>(
                               1e6 * std::min(options.time_limit_seconds * 0.5,
                                              std::max(kBoundsSecondsFloor,
                                                       kBoundsSecondsPerOp * static_cast<double>(graph.num_ops())))));
  {
    const Reachability reach(graph);
    const std::vector<int64_t> op_bounds = ClosureStepLowerBounds(buffers, reach, bounds_deadline, &bounds_cut, step_of,
                                                                  std::min(lower_bound, initial_peak));
    for (Segment& s : segments) {
      for (OpId u : s.ops) s.lower = std::max(s.lower, op_bounds[u]);
    }
    // The last step of any order holds every buffer live to the end: the
    // last segment's steps are at least that.
    if (!segments.empty()) segments.back().lower = std::max(segments.back().lower, FinalStepLowerBound(buffers));
    int64_t graph_floor = std::min(lower_bound, initial_peak);
    for (const Segment& s : segments) graph_floor = std::max(graph_floor, s.lower);
    // Where a segment's best peak is above both its bound and the graph's,
    // pairs of its ops (closure_bound.h), those of the largest bounds first,
    // may raise its bound: highest peak first, in the same time. Not when
    // the start order is good enough or the bound is at only_below.
    const bool pairs_matter =
        initial_peak > good_enough && (options.only_below <= 0 || graph_floor < options.only_below);
    std::vector<Segment*> open;
    for (Segment& s : segments) {
      if (pairs_matter && s.best_peak > std::max(s.lower, graph_floor) && s.ops.size() > 2) open.push_back(&s);
    }
    std::stable_sort(open.begin(), open.end(),
                     [](const Segment* a, const Segment* b) { return a->best_peak > b->best_peak; });
    std::optional<PairBounds> pairs;
    for (Segment* s : open) {
      if (s->best_peak <= graph_floor || Clock::now() >= bounds_deadline || Cancelled(options)) continue;
      std::vector<OpId> by_bound = s->ops;
      std::stable_sort(by_bound.begin(), by_bound.end(), [&](OpId a, OpId b) {
        return std::make_pair(op_bounds[a], step_of[a]) > std::make_pair(op_bounds[b], step_of[b]);
      });
      if (!pairs.has_value()) pairs.emplace(buffers, reach);
      s->lower = pairs->Of(by_bound, s->lower, bounds_deadline, nullptr, step_of);
      graph_floor = std::max(graph_floor, s->lower);
    }
  }

  MinimizeResult result;
  result.stats.lower_bound_cut = bounds_cut;
  auto search_of = [&](Segment& s) -> BudgetSearch& {
    if (s.search == nullptr) {
      Subproblem part;
      part.ops = s.ops;
      part.preferred = s.best;
      part.position = &segment_position;
      part.live_after_done = live_before[s.done_before];
      s.search = std::make_unique<BudgetSearch>(buffers, options, part);
    }
    return *s.search;
  };

  auto peak = [&] {
    int64_t p = 0;
    for (const Segment& s : segments) p = std::max(p, s.best_peak);
    return p;
  };
  auto proven = [&] {
    int64_t p = std::min(lower_bound, peak());
    for (const Segment& s : segments) p = std::max(p, std::min(s.lower, s.best_peak));
    return p;
  };

  // Before the first round (after it with only_below): segments of
  // kWindowSegmentOps ops or more still open are worked on by windows
  // (window_search.h), in parallel on `executor`: one check of such a
  // segment below its best peak gets lost deep in it. Their orders are
  // improved by windows for half the time left, then bounded by windows
  // counted alone until 0.7 of it; the rounds
  // get the rest. The state before a segment is the same whatever order the
  // segments before it take, so the segments' windows are independent.
  const auto run_windows = [&] {
    const auto in = [&, start = Clock::now()](double fraction) {
      return deadline == Clock::time_point::max()
                 ? deadline
                 : start + std::chrono::duration_cast<Clock::duration>((deadline - start) * fraction);
    };
    struct Windowed {
      std::vector<OpId> order;  // empty: no lower peak found
      int64_t known = 0;        // what LowerBoundByWindows started from
      int64_t lower = 0;
      SearchStats stats;
    };
    std::vector<Windowed> windowed(segments.size());
    std::vector<std::function<void()>> window_tasks;
    // No segment's peak below the graph's proven bound lowers the graph's.
    const int64_t graph_floor = proven();
    for (size_t k = 0; k < segments.size(); ++k) {
      const Segment& s = segments[k];
      const int64_t floor = std::max({s.lower, good_enough, graph_floor});
      if (s.ops.size() < kWindowSegmentOps || s.best_peak <= floor) continue;
      window_tasks.push_back([&, k, floor] {
        const absl::Span<const OpId> done(segment_ops.data(), segments[k].done_before);
        Windowed& w = windowed[k];
        w.order = segments[k].best;
        const WindowSearchOptions window_options;
        if (!LowerPeakByWindows(buffers, done, &w.order, floor, options, in(0.5), window_options, &w.stats)) {
          w.order.clear();
        }
        // Known: the segment's bound, or the graph's when higher (a
        // segment's own bound may be a cone bound, closure_bound.h); only a
        // bound above it comes from the segment's windows.
        w.known = std::max(segments[k].lower, graph_floor);
        w.lower = LowerBoundByWindows(buffers, done, w.order.empty() ? segments[k].best : w.order, w.known, options,
                                      in(0.7), window_options, &w.stats);
      });
    }
    // (RunAll on a shared pool may run another request's task first.)
    if (window_tasks.empty()) return;
    RunAll(executor, window_tasks);

    for (size_t k = 0; k < segments.size(); ++k) {
      Segment& s = segments[k];
      Windowed& w = windowed[k];
      if (w.lower > w.known) s.lower = std::max(s.lower, w.lower);
      result.stats.states += w.stats.states;
      result.stats.checks += w.stats.checks;
      if (w.order.empty()) continue;
      // Kept only when the model's own replay agrees that the peak fell.
      MemoryTracker tracker(buffers);
      for (size_t i = 0; i < s.done_before; ++i) tracker.Run(segment_ops[i]);
      int64_t windowed_peak = 0;
      for (OpId u : w.order) windowed_peak = std::max(windowed_peak, tracker.Run(u));
      if (windowed_peak < s.best_peak) {
        s.best = std::move(w.order);
        s.best_peak = windowed_peak;
      }
    }
  };

  // Rounds: the first tests whether the proven bound is tight, with a tenth
  // of the time (at most kBoundTestTime). Then each round asks for an order
  // below the best peak with all the time left (a proof is one such round
  // that finds nothing; unseen RandWire seeds 5 and 8 spend most of a 10 s
  // limit on it, bench/RESULTS.md). The parts keep the memo of the sets
  // that failed, which fail every smaller budget too, so the rounds down to
  // the optimum cost about as much as the last one. When a round stops on the state cap, the
  // time left goes to raising the bound: refuting the budget at the bound
  // again and again.
  bool first = true;
  bool raising = false;
  bool windows_run = false;
  while (peak() > good_enough && Clock::now() < deadline && !Cancelled(options)) {
    // Nothing the caller wants is left once the bound reaches only_below
    // (before the windows, which would look for it all the same).
    if (options.only_below > 0 && proven() >= options.only_below) break;
    // Segments of kWindowSegmentOps ops or more go to the windows before
    // any check: a check of such a segment at its bound rarely settles it
    // and then runs out its time (layered DAGs of 20,000-100,000 ops, where
    // the windows then prove the optimum). With only_below the check at the
    // bound comes first: one refutation there ends the call.
    if (!windows_run && (!first || options.only_below <= 0)) {
      windows_run = true;
      run_windows();
      continue;
    }
    const int64_t lo = proven();
    if (lo >= peak()) break;
    int64_t budget = first || raising ? lo : peak() - 1;
    if (options.only_below > 0) budget = std::min(budget, options.only_below - 1);
    if (first && good_enough > lo) budget = std::min(good_enough, peak() - 1);
    Clock::time_point round_deadline = deadline;
    if (first && deadline != Clock::time_point::max() && budget + 1 < peak()) {
      round_deadline = Clock::now() + std::min<Clock::duration>((deadline - Clock::now()) / 10, kBoundTestTime);
    }
    const bool testing_bound = first;
    first = false;

    // Segments already known to fit, or known not to, need no search.
    std::vector<Segment*> to_check;
    bool refuted = false;
    for (Segment& s : segments) {
      s.answer = Feasibility::kUnknown;
      if (s.best_peak <= budget) {
        s.answer = Feasibility::kFeasible;
      } else if (budget < s.lower) {
        refuted = true;
      } else {
        to_check.push_back(&s);
      }
    }
    // The checks of one round may run at once: they share the state cap.
    const int64_t cap =
        std::max<int64_t>(1, options.max_states / std::max<int64_t>(1, static_cast<int64_t>(to_check.size())));
    std::vector<std::function<void()>> tasks;
    for (Segment* s : to_check) {
      // A long segment's signatures hold thousands of bits each: its memo
      // is capped at kMaxLongMemoBytes (a check at its bound often settles
      // it quickly; one far from it holds gigabytes and rarely gets there).
      const int64_t per_signature = SignatureSet::BytesPerSignature((s->ops.size() + 63) / 64);
      const int64_t segment_cap = s->ops.size() < kWindowSegmentOps
                                      ? cap
                                      : std::max<int64_t>(1, std::min(cap, kMaxLongMemoBytes / per_signature));
      // A check that would start past the round's deadline (or once the
      // caller went away) is not made: a round of thousands of small checks
      // ends at its deadline, not after them all.
      tasks.push_back([s, budget, round_deadline, segment_cap, &search_of, &options] {
        s->stats = SearchStats();
        if (Clock::now() >= round_deadline || Cancelled(options)) {
          s->answer = Feasibility::kUnknown;
          s->stats.hit_limit = true;
          return;
        }
        s->answer = search_of(*s).Check(budget, round_deadline, &s->order, &s->next_budget, &s->stats, segment_cap);
      });
    }
    if (refuted) continue;  // proven() has risen past the budget
    // A part that sits out this round gives its memo back: the round's cap
    // bounds the memory of its checks alone.
    for (Segment& s : segments) {
      if (s.search != nullptr && s.answer != Feasibility::kUnknown) s.search->ReleaseMemo();
    }
    RunAll(executor, tasks);

    // The new orders' peaks by the model's own replay, one pass over the
    // graph up to the last segment with a new order (the state before a
    // segment is the same whatever order the segments before it take).
    const auto improved = [budget](const Segment& s) {
      return s.answer == Feasibility::kFeasible && s.best_peak > budget;
    };
    size_t replay_end = 0;  // segments [0, replay_end) are replayed
    for (size_t k = 0; k < segments.size(); ++k) {
      if (improved(segments[k])) replay_end = k + 1;
    }
    bool all_fit = true, any_unknown = false;
    MemoryTracker tracker(buffers);
    for (size_t k = 0; k < segments.size(); ++k) {
      Segment& s = segments[k];
      if (improved(s)) {
        s.best = std::move(s.order);
        s.best_peak = 0;
        for (OpId u : s.best) s.best_peak = std::max(s.best_peak, tracker.Run(u));
      } else if (k < replay_end) {
        for (OpId u : s.ops) tracker.Run(u);
      }
      if (s.answer == Feasibility::kInfeasible) {
        // Every budget below the smallest step the search cut off explores
        // the same sets, so all of them are infeasible too.
        s.lower = std::max(s.lower, std::max(budget + 1, s.next_budget));
      }
      all_fit = all_fit && s.answer == Feasibility::kFeasible;
      any_unknown = any_unknown || s.answer == Feasibility::kUnknown;
      result.stats.states += s.stats.states;
      result.stats.peak_memo_bytes = std::max(result.stats.peak_memo_bytes, s.stats.peak_memo_bytes);
      result.stats.checks += s.stats.checks;
      result.stats.segment_checks += s.stats.checks;
      result.stats.hit_limit = result.stats.hit_limit || s.stats.hit_limit;
      result.stats.hit_memory_limit = result.stats.hit_memory_limit || s.stats.hit_memory_limit;
      s.stats = SearchStats();
    }
    if (!all_fit && any_unknown && !testing_bound) {
      if (raising) break;  // out of time or states at the bound
      raising = true;
    }
  }

  for (Segment& s : segments) result.order.insert(result.order.end(), s.best.begin(), s.best.end());
  result.peak_bytes = PeakOf(buffers, result.order);
  result.lower_bound_bytes = std::min(proven(), result.peak_bytes);
  result.optimal = result.lower_bound_bytes >= result.peak_bytes;
  return result;
}

}  // namespace serenity
