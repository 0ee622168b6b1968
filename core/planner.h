// The planner facade: Graph + PlanOptions -> Plan. The server and the CLI's
// --local mode both call this; everything they report comes from here.
#ifndef SERENITY_CORE_PLANNER_H_
#define SERENITY_CORE_PLANNER_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/arena/arena_planner.h"
#include "core/arena/defragment.h"
#include "core/baseline_table.h"
#include "core/graph/graph.h"
#include "core/memory/simulator.h"
#include "core/plan_options.h"
#include "core/schedule/budget_search.h"
#include "core/traffic/belady.h"
#include "core/util/executor.h"

namespace serenity {

enum class Certificate { kOptimal, kBestFound, kBaseline };

// Returns "optimal", "best_found" or "baseline".
const char* CertificateName(Certificate certificate);

// Peak and arena size of one order.
struct OrderSummary {
  std::vector<OpId> order;
  int64_t peak_bytes = 0;
  int64_t arena_bytes = 0;          // TensorFlow-Lite-style planner
  int64_t arena_bytes_ours = 0;     // PlanArena without the skyline search
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
  MemoryProfile profile;  // of `order`; peak_bytes is the reported peak
  int64_t lower_bound_bytes = 0;
  Certificate certificate = Certificate::kBaseline;
  ArenaPlan arena;  // offsets parallel to profile.buffers (PlanArena)
  // Defragmentation moves (buffer indices into profile.buffers) when the
  // budget fits the peak but not the static arena; then arena.offsets are
  // each buffer's offset at its first step.
  std::vector<ArenaMove> moves;
  int64_t moved_bytes = 0;
  bool arena_fits_budget = true;   // arena.size_bytes <= budget (or no budget): ApplyBudget
  int64_t arena_bytes_tflite = 0;  // the TFLite-style planner on the same order
  PerBaseline<OrderSummary> baselines;
  std::optional<OrderSummary> serenity;  // set when a given order was evaluated
  std::string algorithm;                 // the algorithm that produced `order`
  SearchStats search_stats;              // zero unless a search ran
  // Per order ("serenity" first, then the baselines), one result per
  // options.onchip_bytes entry.
  std::vector<std::pair<std::string, std::vector<TrafficResult>>> traffic;
  double solve_ms = 0;
  double total_ms = 0;
  bool feasible = true;  // peak within the budget (or no budget): ApplyBudget
  // Phases cut short by a limit, in the order they ran (empty: none).
  std::vector<PhaseFallback> fallbacks;
  // Wall time of each phase that ran, in milliseconds: "baselines" (the
  // baseline orders and their peaks), "search" (finding the order, the
  // lower bound included), "arena" (the plan's arena and the TFLite-style
  // one), "defragment", "baseline_arenas", "traffic".
  std::map<std::string, double> phase_ms;
  // Set when options.memories was given and the plan is complete (issue
  // 18): each of profile.buffers in one memory, with each memory's totals;
  // memory_access_bytes, per memory, the bytes the ops write into and read
  // from its buffers (each tensor and workspace written once, again by each
  // in-place or accumulating write; weights never; read once per reading op).
  std::optional<MemoryAssignment> memories;
  std::vector<int64_t> memory_access_bytes;
};

// What a memory budget says of a plan: whether its peak fits (feasible), by
// how much (headroom_bytes: budget - peak, unset without a budget), and
// whether its arena fits. Without a budget (0) everything fits.
struct BudgetFit {
  bool feasible = true;
  std::optional<int64_t> headroom_bytes;
  bool arena_fits_budget = true;
};

// The one derivation of BudgetFit, for a plan's peak and arena size under
// `budget_bytes` (not positive: none). The planner, PlanToProto and a cached
// plan answered under another budget (plan_proto.h's ApplyBudget) use it.
BudgetFit ApplyBudget(int64_t budget_bytes, int64_t peak_bytes, int64_t arena_bytes);

// The baseline orders of a graph (baseline_table.h), summarized as PlanGraph
// reports them (without arenas when options.score_only), with their traffic
// at options.onchip_bytes (in the table's order), within the same time as
// PlanGraph (options.deadline and the time limit plus finish_seconds; the
// list schedules stop choosing at half the time limit), cancellation and
// memory account: what did not fit is named in `fallbacks` (phases
// "baselines", "baseline_arenas", "traffic").
struct BaselineReport {
  PerBaseline<OrderSummary> baselines;
  std::vector<std::pair<std::string, std::vector<TrafficResult>>> traffic;
  std::vector<PhaseFallback> fallbacks;
};
absl::StatusOr<BaselineReport> SummarizeBaselines(const Graph& graph, const SanitizedOptions& options);
// The same for options not yet sanitized: SanitizePlanOptions first
// (InvalidArgument naming the problem).
absl::StatusOr<BaselineReport> SummarizeBaselines(const Graph& graph, const PlanOptions& options);

// Plans `graph`: evaluates the baselines, finds the order (by
// `options.algorithm`), simulates it, certifies it (`optimal` when a search
// proved it or the peak meets the lower bound; `best_found` when a search
// stopped on a limit; `baseline` for a baseline order) and plans the arena.
// Independent parts of the search run on `executor` (null: this thread).
// `options` must have been sanitized for `graph`.
absl::StatusOr<Plan> PlanGraph(const Graph& graph, const SanitizedOptions& options, Executor* executor = nullptr);
// What a caller that plans a graph close to one it has planned
// (core/rewrite/choose.cc) tells the search; the baselines are reported as
// without it, and the reference algorithms and a given order ignore it.
struct PlanHints {
  // Orders of the graph to start the search from instead of the best
  // baseline: the one of the lowest peak (the first on a tie), when that is
  // lower than the best baseline's (empty: none).
  std::vector<std::vector<OpId>> start_candidates;
  // When positive, only a peak below it matters (SearchOptions::only_below):
  // the plan is then minimised only if the search finds one below it, and
  // otherwise reports the best order found with a lower bound of at least it.
  int64_t only_below = 0;
};
// PlanGraph with `hints`. InvalidArgument when a start candidate is not
// an order of `graph` (CheckOrder).
absl::StatusOr<Plan> PlanGraph(const Graph& graph, const SanitizedOptions& options, Executor* executor,
                               const PlanHints& hints);
// The same for options not yet sanitized (tests, benchmarks): runs
// SanitizePlanOptions first (InvalidArgument naming the problem, e.g. an
// alignment below 1 or a given order that is not one of `graph`).
absl::StatusOr<Plan> PlanGraph(const Graph& graph, const PlanOptions& options, Executor* executor = nullptr);

// Completes `scored`, a plan PlanGraph made of `graph` with `options` but
// score_only, into the plan PlanGraph would make with `options` (same order,
// certificate and bounds), without searching again: the baselines' per-step
// bytes, the arenas and the traffic. For a caller that scores several graphs
// and keeps one (core/rewrite/choose.h). `options` score-only: `scored`.
absl::StatusOr<Plan> CompletePlan(const Graph& graph, const SanitizedOptions& options, Plan scored,
                                  Executor* executor = nullptr);

}  // namespace serenity

#endif  // SERENITY_CORE_PLANNER_H_
