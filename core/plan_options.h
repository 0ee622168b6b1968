// What PlanGraph is asked to do (PlanOptions), the names of its algorithms
// and objectives (parsed once, where a request is read), and the one step
// that checks options and applies their defaults (SanitizePlanOptions), as
// leveldb's SanitizeOptions does: PlanGraph trusts SanitizedOptions.
#ifndef SERENITY_CORE_PLAN_OPTIONS_H_
#define SERENITY_CORE_PLAN_OPTIONS_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/arena/memories.h"
#include "core/baseline_table.h"
#include "core/graph/graph.h"
#include "core/memory/buffer_model.h"
#include "core/schedule/budget_search.h"
#include "core/sparsity/nested_sparsity.h"
#include "core/util/memory_account.h"

namespace serenity {

inline constexpr int64_t kDefaultAlignment = 64;
// Search time limit when the request gives none.
inline constexpr double kDefaultTimeLimitSeconds = 10;
// Time kept for the phases after the search when the request gives none.
inline constexpr double kDefaultFinishSeconds = 0.25;

// How PlanGraph finds the order.
// kAuto: exact budget search from the best baseline (budget_search.h);
// kRelaxed: the same search with the patent's "seemingly good" transitions
// (SearchOptions::seemingly_good): faster, not exact, so optimal only where
// the lower bound meets the peak;
// kDp, kDpDc, kDpDcAsb: the paper's signature DP alone, after
// divide-and-conquer, and with adaptive soft budgeting
// (divide_and_conquer.h), for ablation; kExhaustive, kBestFirst:
// enumeration and Dijkstra-style search (reference_search.h);
// kBaseline: the best of the baselines; kFileOrder ... kXla: that baseline
// (baseline_table.h).
enum class Algorithm {
  kAuto,
  kRelaxed,
  kDp,
  kDpDc,
  kDpDcAsb,
  kExhaustive,
  kBestFirst,
  kBaseline,
  kFileOrder,
  kKahn,
  kGreedy,
  kInductor,
  kXla,
};

// The request's name of `algorithm`: "auto", "relaxed", "dp", "dp+dc",
// "dp+dc+asb", "exhaustive", "best_first", "baseline", or the baseline's
// name.
const char* AlgorithmName(Algorithm algorithm);

// The algorithm named `name`; InvalidArgument listing the choices otherwise.
absl::StatusOr<Algorithm> ParseAlgorithm(absl::string_view name);

// Every algorithm's name, in the enum's order.
const std::vector<std::string>& PlanAlgorithms();

// The baseline an algorithm names (kFileOrder ... kXla); nullopt for the
// others.
std::optional<Baseline> AlgorithmBaseline(Algorithm algorithm);

// kMinPeak: the smallest peak; kFit: the first order found whose peak fits
// the memory budget (the minimum when none fits); kTime: one alternative
// per op (graph.h's Primitive) and the order, the least total time within
// the memory budget (core/primitive_plan.h).
enum class Objective { kMinPeak, kFit, kTime };

// "min_peak", "fit" or "time".
const char* ObjectiveName(Objective objective);

// The objective named `name` ("peak" is "min_peak"); InvalidArgument listing
// the choices otherwise.
absl::StatusOr<Objective> ParseObjective(absl::string_view name);

// How a rewritten Concat -> Conv (group 1) sums its partial Convs (issue 17):
// kStandard, standard ONNX ops (Conv + Add; each Add a new buffer unless
// in_place); kAccumulate, serenity.ConvAccumulate ops that add into one
// buffer (core/onnx/serenity_ops.h), for runtimes that implement them.
enum class RewriteForm { kStandard, kAccumulate };

// "standard" or "accumulate".
const char* RewriteFormName(RewriteForm form);

// The form named `name`; InvalidArgument listing the choices otherwise.
absl::StatusOr<RewriteForm> ParseRewriteForm(absl::string_view name);

// A request's pin (issue 18): the buffer holding `tensor` sits in the memory
// named `memory`, at `offset` (-1: anywhere in it).
struct TensorPin {
  std::string tensor;
  std::string memory;
  int64_t offset = -1;
};

struct PlanOptions {
  MemoryModel memory_model;
  int64_t alignment = kDefaultAlignment;
  int64_t memory_budget_bytes = 0;  // 0: none
  // The request's time limit; not positive: kDefaultTimeLimitSeconds. The
  // baselines and the search (it ends on it: best_found) share it; the
  // phases after the search get finish_seconds more (see deadline).
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
  // Ignored when given_order is set.
  Algorithm algorithm = Algorithm::kAuto;
  Objective objective = Objective::kMinPeak;
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

  // --- identity graph rewriting (issue 17) ---
  // Rewrite the ONNX model's Concat -> Conv sites where that lowers the best
  // peak (core/rewrite/choose.h; the request path runs it, PlanGraph ignores
  // it). Not with a given order.
  bool rewrite = false;
  // The form of the rewritten sums; kAccumulate only with rewrite.
  RewriteForm rewrite_form = RewriteForm::kStandard;
  // --- Nested sparse models (issue 20; core/sparsity/). They change no order
  // or arena, only the plan's SparsityReport.
  // Sparsity levels, densest first (empty: no report); checked with
  // CheckLevels against the graph's weights.
  std::vector<SparsityLevel> levels;
  // Names of the ops after which the run may switch to the next sparser
  // level; each an op of the graph, and only with levels.
  std::vector<std::string> switch_points;
  // --- Several memories and pinned buffers (issue 18; core/arena/memories.h).
  // The device's memories, fastest first (empty: one arena, as without).
  // Given, every buffer of the plan is placed in one of them after the
  // arena (Plan::memories); no memory_budget_bytes, no concat_in_place.
  std::vector<MemorySpace> memories;
  // Needs memories; each tensor pinned at most once.
  std::vector<TensorPin> pins;
  // --- Primitive selection (issue 19; core/primitive_plan.h). With
  // objective kTime, pareto or max_time_us the plan chooses one of each op's
  // alternatives.
  // The (peak, time) frontier too (Plan.time.pareto), at most
  // max_pareto_points of it (>= 1).
  bool pareto = false;
  int max_pareto_points = 16;
  // > 0: the least peak whose time is at most this (objective kMinPeak).
  double max_time_us = 0;
  // Also plan the baselines (Plan.time.baselines).
  bool primitive_baselines = false;
  // Several budgets (objective kTime; core/budget_levels.h): one plan per
  // budget, in place of memory_budget_bytes. Each positive, no two equal, at
  // most kMaxBudgets; not with pareto, max_time_us, a given order, rewrite,
  // sparsity levels or memories.
  std::vector<int64_t> budgets;
};

// Most budgets of one request (PlanOptions::budgets).
inline constexpr size_t kMaxBudgets = 16;

// True when `options` ask for time (objective kTime, pareto or
// max_time_us): the ops' alternatives are read then only.
bool AsksForTime(const PlanOptions& options);

// OK when PlanGraph accepts `options` (alignment >= 1, non-negative budget,
// a budget for objective fit, positive limits and on-chip sizes; memories
// with unique non-empty names, positive capacities, alignments >= 1, not
// with a budget or concat_in_place; pins only with memories, each naming
// one of them, a tensor once, an offset -1 or >= 0);
// InvalidArgument naming the problem otherwise. Does not look at the given
// order (SanitizePlanOptions checks it against the graph).
absl::Status ValidatePlanOptions(const PlanOptions& options);

// The one error for a given order combined with rewrite.
absl::Status GivenOrderWithRewriteError();

// A search time limit as PlanGraph uses it: `seconds`, or
// kDefaultTimeLimitSeconds when it is not positive.
double TimeLimitOrDefault(double seconds);

// Options that passed SanitizePlanOptions for one graph: valid, the given
// order (if any) checked against that graph, the defaults applied (the time
// limit is positive). PlanGraph and SummarizeBaselines trust them and check
// nothing again. Read them as a PlanOptions; the setters change only what
// cannot make them invalid.
class SanitizedOptions {
 public:
  const PlanOptions& operator*() const { return options_; }
  const PlanOptions* operator->() const { return &options_; }
  // For functions that read a PlanOptions (the plan key, the stored plan).
  operator const PlanOptions&() const { return options_; }  // NOLINT: a SanitizedOptions is a PlanOptions

  // The job's context, which the caller knows only after reading the
  // request.
  void set_score_only(bool score_only) { options_.score_only = score_only; }
  void set_cancelled(const std::atomic<bool>* cancelled) { options_.cancelled = cancelled; }
  void set_deadline(std::chrono::steady_clock::time_point deadline) { options_.deadline = deadline; }
  void set_memory(MemoryAccount* memory) { options_.memory = memory; }
  // The job's time limit: TimeLimitOrDefault(seconds).
  void set_time_limit_seconds(double seconds);
  // Caps max_search_states at `cap` (at least 1).
  void CapMaxSearchStates(int64_t cap);

 private:
  friend absl::StatusOr<SanitizedOptions> SanitizePlanOptions(const Graph& graph, PlanOptions options);
  explicit SanitizedOptions(PlanOptions options) : options_(std::move(options)) {}

  PlanOptions options_;
};

// Checks `options` for `graph` (ValidatePlanOptions, then CheckOrder of a
// given order; InvalidArgument for a given order with rewrite, then the sparsity levels and switch
// points: CheckSparsityOptions; every pinned tensor must be one of the
// graph's) and applies the defaults (TimeLimitOrDefault; with memories and
// no onchip_bytes, the first memory's capacity as the on-chip size). The one place a
// request's options are checked: InvalidArgument naming the problem.
absl::StatusOr<SanitizedOptions> SanitizePlanOptions(const Graph& graph, PlanOptions options);

}  // namespace serenity

#endif  // SERENITY_CORE_PLAN_OPTIONS_H_
