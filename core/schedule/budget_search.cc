#include "core/schedule/budget_search.h"

#include <algorithm>
#include <tuple>

#include "core/memory/simulator.h"
#include "core/schedule/signature_set.h"

namespace serenity {

using Clock = std::chrono::steady_clock;

// The search state is the scheduled set plus what follows from it (live
// bytes, remaining readers per buffer, indegrees, the ready list), updated
// in place with an undo trail for backtracking.
class BudgetSearch::Impl {
 public:
  Impl(const BufferModel& buffers, const SearchOptions& options)
      : options_(options),
        buffers_(buffers),
        graph_(buffers.graph()),
        n_(graph_.num_ops()),
        words_((static_cast<size_t>(n_) + 63) / 64),
        visited_(words_) {
    alloc_bytes_.assign(n_, 0);
    dead_bytes_.assign(n_, 0);
    for (OpId u = 0; u < n_; ++u) {
      for (BufferId b : buffers.allocates(u)) {
        const ActivationBuffer& buffer = buffers.buffers()[b];
        alloc_bytes_[u] += buffer.bytes;
        if (buffer.users.empty() && !buffer.live_to_end) dead_bytes_[u] += buffer.bytes;
      }
    }
    for (const ActivationBuffer& b : buffers.buffers()) {
      if (b.producer == kNoOp && b.users.empty() && !b.live_to_end) unused_input_bytes_ += b.bytes;
    }
  }

  Feasibility Check(int64_t budget, Clock::time_point deadline, std::vector<OpId>* order, int64_t* next_budget,
                    SearchStats* stats) {
    Reset();
    budget_ = budget;
    deadline_ = deadline;
    aborted_ = false;
    expanded_ = 0;
    next_budget_ = INT64_MAX;
    const bool found = Explore();
    stats->states += expanded_;
    stats->peak_memo_bytes = std::max<int64_t>(stats->peak_memo_bytes, static_cast<int64_t>(visited_.MemoryBytes()));
    ++stats->checks;
    if (found) {
      *order = trail_;
      return Feasibility::kFeasible;
    }
    if (aborted_) stats->hit_limit = true;
    *next_budget = next_budget_;
    visited_.Clear();
    return aborted_ ? Feasibility::kUnknown : Feasibility::kInfeasible;
  }

 private:
  void Reset() {
    scheduled_.assign(words_, 0);
    remaining_users_.resize(buffers_.buffers().size());
    for (size_t b = 0; b < remaining_users_.size(); ++b) {
      remaining_users_[b] = static_cast<int32_t>(buffers_.buffers()[b].users.size());
    }
    indegree_.resize(n_);
    ready_.clear();
    for (OpId u = 0; u < n_; ++u) {
      indegree_[u] = static_cast<int32_t>(graph_.op(u).predecessors.size());
      if (indegree_[u] == 0) ready_.push_back(u);
    }
    live_ = buffers_.resident_bytes() + buffers_.input_bytes();
    trail_.clear();
    live_trail_.clear();
    visited_.Clear();
  }

  int64_t StepBytes(OpId u) const { return live_ + alloc_bytes_[u] + graph_.op(u).workspace_bytes; }

  // How running `u` next changes the live bytes by itself: its outputs that
  // outlive the step, less the inputs whose last reader it is.
  int64_t OwnDelta(OpId u) const {
    int64_t delta = alloc_bytes_[u] - dead_bytes_[u];
    for (BufferId b : buffers_.reads(u)) {
      if (remaining_users_[b] == 1 && !buffers_.buffers()[b].live_to_end) delta -= buffers_.buffers()[b].bytes;
    }
    return delta;
  }

  // Live bytes after running `u` next. Graph inputs nobody reads die after
  // the first step whichever op runs it, so they are no part of OwnDelta.
  int64_t BytesAfter(OpId u) const {
    return live_ + OwnDelta(u) - (trail_.empty() ? unused_input_bytes_ : 0);
  }

  void Apply(OpId u) {
    live_trail_.push_back(live_);
    live_ = BytesAfter(u);
    for (BufferId b : buffers_.reads(u)) --remaining_users_[b];
    scheduled_[u / 64] |= uint64_t{1} << (u % 64);
    ready_.erase(std::find(ready_.begin(), ready_.end(), u));
    for (OpId v : graph_.op(u).successors) {
      if (--indegree_[v] == 0) ready_.insert(std::lower_bound(ready_.begin(), ready_.end(), v), v);
    }
    trail_.push_back(u);
  }

  void Undo() {
    OpId u = trail_.back();
    trail_.pop_back();
    for (OpId v : graph_.op(u).successors) {
      if (indegree_[v]++ == 0) ready_.erase(std::find(ready_.begin(), ready_.end(), v));
    }
    ready_.insert(std::lower_bound(ready_.begin(), ready_.end(), u), u);
    scheduled_[u / 64] &= ~(uint64_t{1} << (u % 64));
    for (BufferId b : buffers_.reads(u)) ++remaining_users_[b];
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
      for (size_t i = 0; i < ready_.size() && options_.forced_transitions; ++i) {
        const OpId u = ready_[i];
        if (StepBytes(u) <= budget_ && OwnDelta(u) <= 0) {
          Apply(u);
          progress = true;
          break;
        }
      }
      if (progress || !options_.forced_pairs) continue;
      for (size_t i = 0; i < ready_.size() && !progress; ++i) {
        const OpId u = ready_[i];
        if (StepBytes(u) > budget_) continue;
        const int64_t delta_u = OwnDelta(u);
        Apply(u);
        for (OpId v : graph_.op(u).successors) {
          if (indegree_[v] != 0) continue;
          const int64_t delta_v = OwnDelta(v);
          if (StepBytes(v) <= budget_ && delta_v <= 0 && delta_u + delta_v <= 0) {
            Apply(v);
            progress = true;
            break;
          }
        }
        if (!progress) Undo();
      }
    }
  }

  bool Explore() {
    const size_t mark = trail_.size();
    RunForced();
    if (static_cast<int>(trail_.size()) == n_) return true;
    if (aborted_ || !visited_.Insert(scheduled_.data())) {
      UndoTo(mark);
      return false;
    }
    if (++expanded_ % 1024 == 0 &&
        (Clock::now() > deadline_ || static_cast<int64_t>(visited_.size()) > options_.max_states)) {
      aborted_ = true;
      UndoTo(mark);
      return false;
    }
    // Branch over the ready ops that fit, freeing ones first.
    std::vector<std::tuple<int64_t, int64_t, OpId>> candidates;
    for (OpId u : ready_) {
      int64_t step = StepBytes(u);
      if (step <= budget_) {
        candidates.emplace_back(BytesAfter(u), step, u);
      } else {
        next_budget_ = std::min(next_budget_, step);
      }
    }
    std::sort(candidates.begin(), candidates.end());
    for (const auto& [after, step, u] : candidates) {
      Apply(u);
      if (Explore()) return true;
      Undo();
      if (aborted_) break;
    }
    UndoTo(mark);
    return false;
  }

  const SearchOptions options_;
  const BufferModel& buffers_;
  const Graph& graph_;
  const int n_;
  const size_t words_;
  std::vector<int64_t> alloc_bytes_;
  std::vector<int64_t> dead_bytes_;
  int64_t unused_input_bytes_ = 0;

  int64_t budget_ = 0;
  Clock::time_point deadline_;
  bool aborted_ = false;
  int64_t expanded_ = 0;
  int64_t next_budget_ = INT64_MAX;  // smallest step the budget cut off

  std::vector<uint64_t> scheduled_;
  std::vector<int32_t> remaining_users_;
  std::vector<int32_t> indegree_;
  std::vector<OpId> ready_;  // ascending
  int64_t live_ = 0;
  std::vector<OpId> trail_;
  std::vector<int64_t> live_trail_;
  SignatureSet visited_;
};

BudgetSearch::BudgetSearch(const BufferModel& buffers, const SearchOptions& options)
    : impl_(std::make_unique<Impl>(buffers, options)) {}
BudgetSearch::~BudgetSearch() = default;

Feasibility BudgetSearch::Check(int64_t budget, Clock::time_point deadline, std::vector<OpId>* order,
                                int64_t* next_budget, SearchStats* stats) {
  return impl_->Check(budget, deadline, order, next_budget, stats);
}

MinimizeResult MinimizePeak(const BufferModel& buffers, std::vector<OpId> initial_order, int64_t lower_bound,
                            const SearchOptions& options, int64_t good_enough) {
  const Clock::time_point deadline =
      options.time_limit_seconds > 0
          ? Clock::now() + std::chrono::microseconds(static_cast<int64_t>(options.time_limit_seconds * 1e6))
          : Clock::time_point::max();
  MinimizeResult result;
  result.order = std::move(initial_order);
  result.peak_bytes = PeakOf(buffers, result.order);
  result.lower_bound_bytes = std::min(lower_bound, result.peak_bytes);
  BudgetSearch search(buffers, options);
  // lo: the smallest budget not refuted (the proven bound). floor: the
  // smallest budget still worth trying; a check that runs out of time or
  // states raises it without proving anything, so the search goes on looking
  // for better orders above a region it cannot settle. Each check may use half
  // of the remaining time (the first a tenth), the last possible one all of it.
  int64_t lo = result.lower_bound_bytes;
  int64_t floor = lo;
  bool first = true;
  while (floor < result.peak_bytes && result.peak_bytes > good_enough && Clock::now() < deadline) {
    int64_t budget = first ? lo : floor + (result.peak_bytes - 1 - floor) / 2;
    if (first && good_enough > lo) budget = good_enough;
    Clock::time_point check_deadline = deadline;
    if (deadline != Clock::time_point::max() && budget + 1 < result.peak_bytes) {
      // The first check only tests whether the bound is tight: a tenth.
      check_deadline = Clock::now() + (deadline - Clock::now()) / (first ? 10 : 2);
    }
    first = false;
    std::vector<OpId> order;
    int64_t next_budget = INT64_MAX;
    Feasibility answer = search.Check(budget, check_deadline, &order, &next_budget, &result.stats);
    if (answer == Feasibility::kFeasible) {
      result.order = std::move(order);
      result.peak_bytes = PeakOf(buffers, result.order);
    } else if (answer == Feasibility::kInfeasible) {
      // Every budget below the smallest step the search cut off explores
      // the same sets, so all of them are infeasible too.
      lo = std::max(lo, std::max(budget + 1, next_budget));
      floor = std::max(floor, lo);
    } else {
      floor = budget + 1;
    }
    result.lower_bound_bytes = std::min(lo, result.peak_bytes);
  }
  result.optimal = result.lower_bound_bytes >= result.peak_bytes;
  if (result.optimal) result.lower_bound_bytes = result.peak_bytes;
  return result;
}

}  // namespace serenity
