// Exact search for orders whose peak fits a memory budget, and the
// minimisation of the peak on top of it.
//
// The search walks the DAG of scheduled-op sets (the paper's zero-indegree
// signatures): the live bytes after a set S depend on S alone, so whether S
// can be completed within a budget B depends on S alone, and every set needs
// exploring at most once (a failed set is remembered by its signature). Two
// rules prune without losing optimality:
//  - budget: an op whose step would exceed B is never run;
//  - forced transitions: a ready op whose step fits B and that does not raise
//    the live bytes is run at once, without branching. Moving such an op to
//    the front of any completion that fits B lowers or keeps every later
//    step, so some completion that fits B starts with it. The same holds for
//    a pair (u, v) that v becomes ready with, when v does not raise the live
//    bytes after u and the pair together does not raise them (a Mul feeding
//    the Add of a weighted sum, say). And for a set: when every remaining
//    reader of a live buffer b is ready, the outputs that outlive their steps
//    of all of b's readers total at most b's bytes, and the remaining readers
//    run in op order from here each fit B, they all run at once (the
//    patent's forced transition set).
//    Moving the set to the front of a completion that fits B frees b at
//    once instead of at the set's last member; every step in between gains
//    b and pays at most the set's outputs, and reading earlier never frees
//    anything later.
// MinimizePeak's checks of a segment branch along the segment's best order
// when its first check starts, usually the start order
// (Subproblem::preferred): a start order close to the optimum, as a
// rewritten graph's carried-over plan, leads its check at the bound there.
// MinimizePeak first tries B at the proven lower bound (briefly), then
// asks for an order below the best peak found, again and again: each
// feasible check lowers the best peak, and the sets that failed there fail
// every smaller budget too, so the next check keeps them. The check that
// finds nothing proves the order optimal. A check that runs out of time or
// states proves nothing; time left after the state cap goes to raising the
// bound from below.
#ifndef SERENITY_CORE_SCHEDULE_BUDGET_SEARCH_H_
#define SERENITY_CORE_SCHEDULE_BUDGET_SEARCH_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/types/span.h"
#include "core/memory/buffer_model.h"
#include "core/util/executor.h"
#include "core/util/memory_account.h"

namespace serenity {

struct SearchOptions {
  // Wall-clock limit of the whole minimisation; <= 0 means none.
  double time_limit_seconds = 0;
  // Cap on signatures remembered at once: MinimizePeak splits it between the
  // checks of segments that run at the same time (memory of the search is
  // about (ops / 8 + 8) bytes per signature, ops of the segment checked, plus its slot in the index).
  // The default lets the proof of RandWire stage 2 (26M states, 860 MB)
  // finish.
  int64_t max_states = 32'000'000;
  // Pruning rules, on by default; off only to measure what they save.
  bool forced_transitions = true;  // single ops
  bool forced_pairs = true;        // an op and a successor it makes ready
  bool forced_sets = true;         // all remaining readers of a live buffer
  // Relaxed mode (the patent's "seemingly good" transitions), off by
  // default: when no exact rule applies, a ready op that fits the budget and
  // frees a buffer (it is that buffer's last reader) runs at once even if it
  // raises the live bytes; of several, the one leaving the fewest live bytes
  // (then the lowest id). Otherwise only the `relaxed_branching` ready ops
  // leaving the fewest live bytes are tried. Far less search, but not exact:
  // an order may be missed, so a check that finds none reports kUnknown,
  // never kInfeasible, and MinimizePeak proves only what its bounds prove.
  bool seemingly_good = false;
  int relaxed_branching = 3;
  // Candidates a search node keeps, the first in its branching order; each
  // later one is found by a scan of the ready ops. The same search either
  // way: fewer kept cost a scan per branch tried beyond them, more cost
  // memory on searches thousands of levels deep over thousands of ready
  // ops. At least 1.
  int kept_candidates = 64;
  // When set and true, the search stops as if its time were up (the caller
  // went away). Read with relaxed ordering; owned by the caller.
  const std::atomic<bool>* cancelled = nullptr;
  // When set, each check charges its memo (SignatureSet::BytesForInsert)
  // here before it grows; a refused charge stops the check as the state cap
  // does (kUnknown, SearchStats::hit_memory_limit). Owned by the caller.
  MemoryAccount* memory = nullptr;
  // MinimizePeak only: when positive, only orders of a peak below it
  // matter to the caller. Each round after the first asks for one below
  // both it and the best peak, and the minimisation stops once the bound
  // reaches it (the result then says so: lower_bound_bytes >= only_below,
  // and its order is the best found, not minimised further).
  int64_t only_below = 0;
};

// True when `options.cancelled` is set and true.
inline bool Cancelled(const SearchOptions& options) {
  return options.cancelled != nullptr && options.cancelled->load(std::memory_order_relaxed);
}

struct SearchStats {
  int64_t states = 0;             // signatures expanded, over all checks
  int64_t peak_memo_bytes = 0;    // largest memo of one check
  int checks = 0;                 // feasibility checks run
  int segment_checks = 0;         // of them, checks of whole segments (the rest are windows', window_search.h)
  bool hit_limit = false;         // a check ended on a limit
  bool hit_memory_limit = false;  // a check ended because the memory account refused its memo
  bool lower_bound_cut = false;   // the per-op closure bounds stopped at their time (budget_search.cc)
};

enum class Feasibility { kFeasible, kInfeasible, kUnknown };

// A part of the graph to order: `ops` (a segment, see partition.h) after the
// ops of `done` (already run, in this valid order). Empty `ops`: all ops.
// `preferred`, when not empty, is an order of the part's ops (a plan known
// to be good) that the search branches along: of the ready ops that fit,
// the one earliest in it first (ops not in it last, then as without it).
// Without it, the ready op leaving the fewest live bytes comes first.
struct Subproblem {
  std::vector<OpId> done;
  std::vector<OpId> ops;
  std::vector<OpId> preferred;
  // BudgetSearch only: instead of listing `done` (which costs every search
  // of a late segment of a long graph the length of all segments before
  // it), the caller may give each op's position in an order that runs the
  // done ops, then `ops`, then the rest (the done ops are those before
  // every op of `ops`), and the live bytes after the done ops
  // (LiveBytesAlong that order). Not owned; must outlive the search.
  const std::vector<int32_t>* position = nullptr;
  int64_t live_after_done = 0;
};

// The live bytes a BudgetSearch counts after each prefix of `order` (a
// valid order of some ops): element k after its first k ops.
std::vector<int64_t> LiveBytesAlong(const BufferModel& buffers, absl::Span<const OpId> order);

// Answers "is there an order with peak <= budget?" for one graph.
class BudgetSearch {
 public:
  // Searches orders of `part` only (by default the whole graph); the step
  // bytes it compares with the budget are those of the part's own steps.
  BudgetSearch(const BufferModel& buffers, const SearchOptions& options, const Subproblem& part = Subproblem());
  ~BudgetSearch();
  BudgetSearch(const BudgetSearch&) = delete;
  BudgetSearch& operator=(const BudgetSearch&) = delete;

  // kFeasible fills `order` with an order of the part's ops whose steps all
  // fit the budget.
  // kInfeasible sets `next_budget` to the smallest step bytes the budget cut
  // off: every budget below it is infeasible too (INT64_MAX: none was cut).
  // kUnknown when `deadline` passed or the state cap was hit first: the
  // options' max_states, or `max_states` when positive.
  // A check at a budget no larger than that of the feasible check before it
  // skips the sets that failed there (they fail this budget too), when they
  // fill at most half of this check's state cap; any other check starts from
  // an empty memo.
  Feasibility Check(int64_t budget, std::chrono::steady_clock::time_point deadline, std::vector<OpId>* order,
                    int64_t* next_budget, SearchStats* stats, int64_t max_states = 0);

  // Frees the memo a feasible check kept.
  void ReleaseMemo();

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

struct MinimizeResult {
  std::vector<OpId> order;
  int64_t peak_bytes = 0;
  int64_t lower_bound_bytes = 0;  // proven: no order has a smaller peak
  bool optimal = false;           // peak_bytes == lower_bound_bytes
  SearchStats stats;
};

// Minimises the peak starting from `initial_order` (a valid order, e.g. the
// best baseline) and a `lower_bound` the caller proved (0: none; the search
// takes ClosureStepLowerBounds of every op itself); stops early once the peak is at
// most `good_enough` (0: never; the "fit" objective passes the budget, which
// is then tried first). The graph is split at cut points (partition.h); a
// budget is feasible when every segment fits it, and the segments that need a
// search run as parallel tasks on `executor` (null: on this thread).
// Deterministic for a given input when no limit is hit.
MinimizeResult MinimizePeak(const BufferModel& buffers, std::vector<OpId> initial_order, int64_t lower_bound,
                            const SearchOptions& options, int64_t good_enough = 0, Executor* executor = nullptr);

}  // namespace serenity

#endif  // SERENITY_CORE_SCHEDULE_BUDGET_SEARCH_H_
