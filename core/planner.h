// The planner facade: Graph + PlanOptions -> Plan. The server and the CLI's
// --local mode both call this; everything they report comes from here.
#ifndef SERENITY_CORE_PLANNER_H_
#define SERENITY_CORE_PLANNER_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/arena/arena_planner.h"
#include "core/arena/defragment.h"
#include "core/graph/graph.h"
#include "core/memory/simulator.h"
#include "core/schedule/budget_search.h"
#include "core/traffic/belady.h"
#include "core/util/executor.h"
#include "core/util/memory_account.h"

namespace serenity {

inline constexpr int64_t kDefaultAlignment = 64;
// Search time limit when the request gives none.
inline constexpr double kDefaultTimeLimitSeconds = 10;
// Time kept for the phases after the search when the request gives none.
inline constexpr double kDefaultFinishSeconds = 0.25;

struct PlanOptions {
  MemoryModel memory_model;
  int64_t alignment = kDefaultAlignment;
  int64_t memory_budget_bytes = 0;  // 0: none
  // The request's time limit; 0: kDefaultTimeLimitSeconds. The baselines
  // and the search (it ends on it: best_found) share it; the phases after
  // the search get finish_seconds more (see deadline).
  double time_limit_seconds = 0;
  // The job's end on the steady clock, when the caller has one (a gRPC
  // deadline, the server's job limit); max(): none. PlanGraph ends its work
  // by the earlier of this and its start + time_limit_seconds +
  // finish_seconds: the search stops finish_seconds before that end (or at
  // time_limit_seconds, whichever first), and every phase after it (the
  // plan's arena and its searches, the TFLite-style arena, defragmentation,
  // the baselines' arenas, traffic) checks that end and falls back to a
  // cheaper method, or is skipped, when time is out or clearly would run
  // out (Plan::fallbacks names each). A deadline already past gives the
  // search no time and every later phase its cheapest method.
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  // Seconds kept for the phases after the search (>= 0).
  double finish_seconds = kDefaultFinishSeconds;
  // The job's memory account (memory_account.h), owned by the caller; null:
  // unlimited. Charged: the search's memo (a refusal stops the search:
  // best_found with a "search" fallback), the reachability bitsets of the
  // lower bound (a refusal fails PlanGraph with ResourceExhausted naming the
  // budget), the arena's co-live lists and searches (refused: greedy
  // placement) and defragmentation (refused: skipped).
  MemoryAccount* memory = nullptr;
  // "auto": exact budget search from the best baseline (budget_search.h);
  // "relaxed": the same search with the patent's "seemingly good"
  // transitions (SearchOptions::seemingly_good): faster, not exact, so
  // optimal only where the lower bound meets the peak;
  // "dp", "dp+dc", "dp+dc+asb": the paper's signature DP alone, after
  // divide-and-conquer, and with adaptive soft budgeting
  // (divide_and_conquer.h), for ablation; "exhaustive", "best_first":
  // enumeration and Dijkstra-style search (reference_search.h);
  // "baseline": the best of the baselines; "file_order", "kahn", "greedy",
  // "inductor", "xla": that baseline (compiler_baselines.h for the last two).
  // Ignored when given_order is set.
  std::string algorithm = "auto";
  // "min_peak": the smallest peak; "fit": the first order found whose peak
  // fits memory_budget_bytes (the minimum when none fits).
  std::string objective = "min_peak";
  // T of adaptive soft budgeting: the time one budgeted DP may take.
  double step_time_limit_seconds = 1;
  // Most states one search may remember (its memory cap).
  int64_t max_search_states = SearchOptions().max_states;
  // On-chip sizes for the off-chip traffic estimate (traffic/belady.h).
  std::vector<int64_t> onchip_bytes;
  // When set, the plan is for this order (the caller's own), and the `auto`
  // search runs only to report how far it is from Serenity's.
  std::vector<OpId> given_order;
  // Only the score: find the order and its peak, but skip the arena, the
  // per-step view, traffic and the baselines' arenas (their peaks are still
  // computed: the best one starts the search).
  bool score_only = false;
  // When set and it becomes true, the search stops and PlanGraph returns
  // Cancelled (the caller went away). Owned by the caller.
  const std::atomic<bool>* cancelled = nullptr;
};

enum class Certificate { kOptimal, kBestFound, kBaseline };

// Returns "optimal", "best_found" or "baseline".
const char* CertificateName(Certificate certificate);

// Peak and arena size of one order.
struct OrderSummary {
  std::vector<OpId> order;
  int64_t peak_bytes = 0;
  int64_t arena_bytes = 0;        // TensorFlow-Lite-style planner
  int64_t arena_bytes_ours = 0;   // PlanArena without the skyline search
  std::vector<int64_t> step_bytes;  // live bytes while each step runs
};

// A phase of PlanGraph that a limit cut short, and what was used instead.
struct PhaseFallback {
  // "search", "lower_bound", "arena", "tflite_arena", "baseline_arenas",
  // "defragment", "traffic".
  std::string phase;
  // "time_limit", "memory_limit", "cancelled", "size_limit".
  std::string reason;
  // e.g. "greedy placement", "fast greedy placement", "skipped",
  // "best order found before the limit".
  std::string used;
};

struct Plan {
  std::vector<OpId> order;
  MemoryProfile profile;             // of `order`; peak_bytes is the reported peak
  int64_t lower_bound_bytes = 0;
  Certificate certificate = Certificate::kBaseline;
  ArenaPlan arena;                   // offsets parallel to profile.buffers (PlanArena)
  // Defragmentation moves (buffer indices into profile.buffers) when the
  // budget fits the peak but not the static arena; then arena.offsets are
  // each buffer's offset at its first step.
  std::vector<ArenaMove> moves;
  int64_t moved_bytes = 0;
  bool arena_fits_budget = true;     // arena.size_bytes <= budget (or no budget)
  int64_t arena_bytes_tflite = 0;    // the TFLite-style planner on the same order
  OrderSummary file_order, kahn, greedy, inductor, xla;
  std::optional<OrderSummary> serenity;  // set when a given order was evaluated
  std::string algorithm;             // the algorithm that produced `order`
  SearchStats search_stats;          // zero unless a search ran
  // Per order ("serenity" first, then the baselines), one result per
  // options.onchip_bytes entry.
  std::vector<std::pair<std::string, std::vector<TrafficResult>>> traffic;
  double solve_ms = 0;
  double total_ms = 0;
  bool feasible = true;              // peak within the budget (or no budget)
  // Phases cut short by a limit, in the order they ran (empty: none).
  std::vector<PhaseFallback> fallbacks;
  // Wall time of each phase that ran, in milliseconds: "baselines" (the
  // baseline orders and their peaks), "search" (finding the order, the
  // lower bound included), "arena" (the plan's arena and the TFLite-style
  // one), "defragment", "baseline_arenas", "traffic".
  std::map<std::string, double> phase_ms;
};

// OK when PlanGraph accepts `options` (known algorithm and objective,
// alignment >= 1, non-negative budget, a budget for objective fit, positive
// limits and on-chip sizes); InvalidArgument naming the problem otherwise.
absl::Status ValidatePlanOptions(const PlanOptions& options);

// The five baseline orders of a graph, summarized as PlanGraph reports them
// (without arenas when options.score_only), with their traffic at
// options.onchip_bytes (in the order file_order, kahn, greedy, inductor,
// xla), within the same time as PlanGraph (options.deadline and the time
// limit plus finish_seconds; the list schedules stop choosing at half the
// time limit), cancellation and memory account: what did not fit is named
// in `fallbacks` (phases "baselines", "baseline_arenas", "traffic").
struct BaselineReport {
  OrderSummary file_order, kahn, greedy, inductor, xla;
  std::vector<std::pair<std::string, std::vector<TrafficResult>>> traffic;
  std::vector<PhaseFallback> fallbacks;
};
absl::StatusOr<BaselineReport> SummarizeBaselines(const Graph& graph, const PlanOptions& options);

// Returns the algorithm names PlanGraph accepts.
const std::vector<std::string>& PlanAlgorithms();

// Plans `graph`: evaluates the baselines, finds the order (by
// `options.algorithm`), simulates it, certifies it (`optimal` when a search
// proved it or the peak meets the lower bound; `best_found` when a search
// stopped on a limit; `baseline` for a baseline order) and plans the arena. InvalidArgument for an
// unknown algorithm or an alignment below 1.
// Independent parts of the search run on `executor` (null: this thread).
absl::StatusOr<Plan> PlanGraph(const Graph& graph, const PlanOptions& options, Executor* executor = nullptr);

}  // namespace serenity

#endif  // SERENITY_CORE_PLANNER_H_
