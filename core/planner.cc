#include "core/planner.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/arena/instance_search.h"
#include "core/schedule/baselines.h"
#include "core/schedule/compiler_baselines.h"
#include "core/schedule/budget_search.h"
#include "core/schedule/divide_and_conquer.h"
#include "core/schedule/reference_search.h"
#include "core/schedule/signature_dp.h"
#include "core/util/status_macros.h"

namespace serenity {
namespace {

using Clock = std::chrono::steady_clock;

double MillisSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

using ArenaPlanner = std::function<absl::StatusOr<ArenaPlan>(absl::Span<const ArenaBuffer>, int64_t)>;

// Plans the arena of `profile` with `planner`. Resident weights (live at
// every step) are stacked at the bottom first, so the planner only sees the
// activations: the band they take is the same in any packing.
absl::StatusOr<ArenaPlan> PlanProfileArena(const MemoryProfile& profile, int64_t alignment,
                                           const ArenaPlanner& planner) {
  std::vector<ArenaBuffer> activations;
  std::vector<size_t> activation_index;
  std::vector<int32_t> position(profile.buffers.size(), -1);  // profile index -> activation index
  ArenaPlan plan;
  plan.alignment = alignment;
  plan.offsets.assign(profile.buffers.size(), 0);
  int64_t band = 0;
  for (size_t i = 0; i < profile.buffers.size(); ++i) {
    const BufferLifetimeInfo& b = profile.buffers[i];
    if (b.kind == BufferKind::kWeight) {
      plan.offsets[i] = band;
      band = AlignUp(band + b.bytes, alignment);
      plan.size_bytes = std::max(plan.size_bytes, plan.offsets[i] + b.bytes);
      continue;
    }
    position[i] = static_cast<int32_t>(activations.size());
    activations.push_back({b.bytes, b.first_step, b.last_step, b.anchor, b.offset_from_anchor});
    activation_index.push_back(i);
  }
  // Anchors (first Concat slices) are activations too: remap them once
  // every position is known.
  for (ArenaBuffer& a : activations) {
    if (a.anchor >= 0) a.anchor = position[static_cast<size_t>(a.anchor)];
  }
  ASSIGN_OR_RETURN(ArenaPlan above, planner(activations, alignment));
  for (size_t k = 0; k < activations.size(); ++k) plan.offsets[activation_index[k]] = band + above.offsets[k];
  if (!activations.empty()) plan.size_bytes = std::max(plan.size_bytes, band + above.size_bytes);
  return plan;
}

absl::StatusOr<ArenaPlan> TfliteStyle(absl::Span<const ArenaBuffer> buffers, int64_t alignment) {
  return PlanArenaGreedyBySize(buffers, alignment);
}

// `order` with its peak, and its per-step bytes when `with_steps`; the
// arenas come later (PlanOrderArenas).
absl::StatusOr<OrderSummary> Summarize(const BufferModel& buffers, std::vector<OpId> order, bool with_steps) {
  OrderSummary summary;
  ASSIGN_OR_RETURN(MemoryProfile profile, Simulate(buffers, order));
  summary.order = std::move(order);
  summary.peak_bytes = profile.peak_bytes;
  if (with_steps) summary.step_bytes = std::move(profile.step_bytes);
  return summary;
}

}  // namespace

const char* CertificateName(Certificate certificate) {
  switch (certificate) {
    case Certificate::kOptimal:
      return "optimal";
    case Certificate::kBestFound:
      return "best_found";
    case Certificate::kBaseline:
      return "baseline";
  }
  return "baseline";
}

namespace {

Clock::time_point After(Clock::time_point start, double seconds) {
  if (!(seconds < 1e9)) return Clock::time_point::max();
  return start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(std::max(0.0, seconds)));
}

double SecondsLeft(Clock::time_point end) {
  if (end == Clock::time_point::max()) return 1e18;
  return std::chrono::duration<double>(end - Clock::now()).count();
}

std::vector<ArenaBuffer> ActivationBuffers(const MemoryProfile& profile) {
  std::vector<ArenaBuffer> activations;
  for (const BufferLifetimeInfo& b : profile.buffers) {
    if (b.kind != BufferKind::kWeight) activations.push_back({b.bytes, b.first_step, b.last_step, b.anchor, b.offset_from_anchor});
  }
  return activations;
}

// Plans each order's TFLite-style arena and our greedy placements while
// time lasts before `end`; the order that does not fit the time (by the
// placement's estimate) and the rest keep 0, and `fall_back` names the
// phase. Cancelled when options.cancelled became true.
using FallBack = std::function<void(const std::string& phase, const std::string& reason, const std::string& used)>;

absl::Status PlanOrderArenas(const BufferModel& buffers, const PlanOptions& options, Clock::time_point end,
                             const std::vector<OrderSummary*>& orders, const FallBack& fall_back) {
  for (OrderSummary* summary : orders) {
    if (options.cancelled != nullptr && options.cancelled->load(std::memory_order_relaxed)) {
      return absl::CancelledError("the call was cancelled");
    }
    ASSIGN_OR_RETURN(MemoryProfile profile, Simulate(buffers, summary->order));
    if (2 * EstimatePlacementSeconds(ActivationBuffers(profile)) > SecondsLeft(end)) {
      fall_back("baseline_arenas", "time_limit", "skipped");
      break;
    }
    ArenaLimits limits;
    limits.cancelled = options.cancelled;
    limits.memory = options.memory;
    limits.deadline = end;
    ArenaCut cut;
    ASSIGN_OR_RETURN(ArenaPlan tflite, PlanProfileArena(profile, options.alignment, TfliteStyle));
    ASSIGN_OR_RETURN(ArenaPlan ours,
                     PlanProfileArena(profile, options.alignment,
                                      [&](absl::Span<const ArenaBuffer> activations, int64_t alignment) {
                                        return PlanArena(activations, alignment, /*skyline_nodes=*/0, limits, &cut);
                                      }));
    summary->arena_bytes = tflite.size_bytes;
    summary->arena_bytes_ours = ours.size_bytes;
    if (!cut.reason.empty()) {
      fall_back("baseline_arenas", cut.reason, cut.used);
      break;
    }
  }
  return absl::OkStatus();
}

// The baseline orders (baseline_table.h) with their peaks (and per-step
// bytes unless score-only), no arenas; the list schedules stop choosing at
// `deadline` (then `fall_back` names the phase).
absl::StatusOr<BaselineReport> BaselineOrders(const BufferModel& buffers, const PlanOptions& options,
                                              Clock::time_point deadline, const FallBack& fall_back) {
  bool cut = false;
  ListScheduleLimits list_limits;
  list_limits.deadline = deadline;
  list_limits.cut = &cut;
  const bool steps = !options.score_only;
  BaselineReport report;
  for (const BaselineInfo& info : BaselineTable()) {
    ASSIGN_OR_RETURN(report.baselines[info.baseline], Summarize(buffers, info.order(buffers, list_limits), steps));
  }
  if (cut) fall_back("baselines", "time_limit", "plain topological order for the rest of the list schedules");
  return report;
}

// The baselines' summaries, in the table's order, after `first` (if any).
std::vector<OrderSummary*> BaselineSummaries(PerBaseline<OrderSummary>* baselines, OrderSummary* first = nullptr) {
  std::vector<OrderSummary*> summaries;
  if (first != nullptr) summaries.push_back(first);
  for (const BaselineInfo& info : BaselineTable()) summaries.push_back(&(*baselines)[info.baseline]);
  return summaries;
}

// The baselines' orders by name, in the table's order, after `first`.
using NamedOrder = std::pair<const char*, const std::vector<OpId>*>;
std::vector<NamedOrder> BaselineOrdersByName(const PerBaseline<OrderSummary>& baselines,
                                             std::optional<NamedOrder> first = std::nullopt) {
  std::vector<NamedOrder> orders;
  if (first.has_value()) orders.push_back(*first);
  for (const BaselineInfo& info : BaselineTable()) orders.emplace_back(info.name, &baselines[info.baseline].order);
  return orders;
}

// Appends to `traffic` each named order's off-chip traffic at
// options.onchip_bytes while time lasts before `end` (then `fall_back`
// names the phase). Cancelled when options.cancelled became true.
absl::Status OrderTraffic(const BufferModel& buffers, const PlanOptions& options, Clock::time_point end,
                          absl::Span<const NamedOrder> orders,
                          const FallBack& fall_back,
                          std::vector<std::pair<std::string, std::vector<TrafficResult>>>* traffic) {
  for (const auto& [name, order] : orders) {
    if (options.cancelled != nullptr && options.cancelled->load(std::memory_order_relaxed)) {
      return absl::CancelledError("the call was cancelled");
    }
    if (SecondsLeft(end) <= 0) {
      fall_back("traffic", "time_limit", traffic->empty() ? "skipped" : "skipped for the later orders");
      break;
    }
    std::vector<TrafficResult> points;
    for (int64_t onchip : options.onchip_bytes) points.push_back(SimulateTraffic(buffers, *order, onchip));
    traffic->emplace_back(name, std::move(points));
  }
  return absl::OkStatus();
}

// Times the phases of one PlanGraph into plan->phase_ms.
class PhaseTimer {
 public:
  PhaseTimer(Plan* plan, const char* phase) : plan_(plan), phase_(phase), start_(Clock::now()) {}
  ~PhaseTimer() { plan_->phase_ms[phase_] += MillisSince(start_); }

 private:
  Plan* plan_;
  const char* phase_;
  Clock::time_point start_;
};

}  // namespace

absl::StatusOr<BaselineReport> SummarizeBaselines(const Graph& graph, const SanitizedOptions& sanitized) {
  const PlanOptions& options = *sanitized;
  const Clock::time_point start = Clock::now();
  const double time_limit = options.time_limit_seconds;
  const Clock::time_point end = std::min(options.deadline, After(start, time_limit + options.finish_seconds));
  BufferModel buffers(graph, options.memory_model);
  std::vector<PhaseFallback> fallbacks;
  auto fall_back = [&](const std::string& phase, const std::string& reason, const std::string& used) {
    fallbacks.push_back({phase, reason, used});
  };
  ASSIGN_OR_RETURN(BaselineReport report,
                   BaselineOrders(buffers, options, std::min(end, After(start, time_limit / 2)), fall_back));
  if (!options.score_only) {
    RETURN_IF_ERROR(PlanOrderArenas(buffers, options, end, BaselineSummaries(&report.baselines), fall_back));
    if (!options.onchip_bytes.empty()) {
      RETURN_IF_ERROR(
          OrderTraffic(buffers, options, end, BaselineOrdersByName(report.baselines), fall_back, &report.traffic));
    }
  }
  report.fallbacks = std::move(fallbacks);
  return report;
}

absl::StatusOr<BaselineReport> SummarizeBaselines(const Graph& graph, const PlanOptions& options) {
  ASSIGN_OR_RETURN(SanitizedOptions sanitized, SanitizePlanOptions(graph, options));
  return SummarizeBaselines(graph, sanitized);
}

absl::StatusOr<Plan> PlanGraph(const Graph& graph, const SanitizedOptions& sanitized, Executor* executor) {
  const PlanOptions& options = *sanitized;
  const Clock::time_point start = Clock::now();
  const double time_limit = options.time_limit_seconds;
  // The job's end, and the search's: finish_seconds before it, at most the
  // request's time limit after the start.
  const Clock::time_point end = std::min(options.deadline, After(start, time_limit + options.finish_seconds));
  const Clock::time_point search_end =
      std::min(After(start, time_limit),
               end == Clock::time_point::max()
                   ? end
                   : end - std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(options.finish_seconds)));
  // The search's limit in seconds, from now: never 0 (which means none).
  auto search_seconds = [&] { return std::max(1e-6, std::min(time_limit, SecondsLeft(search_end))); };
  auto is_cancelled = [&] { return options.cancelled != nullptr && options.cancelled->load(std::memory_order_relaxed); };
  BufferModel buffers(graph, options.memory_model);
  Plan plan;
  auto fall_back = [&](const std::string& phase, const std::string& reason, const std::string& used) {
    plan.fallbacks.push_back({phase, reason, used});
  };
  const Clock::time_point solve_start = Clock::now();
  {
    PhaseTimer timer(&plan, "baselines");
    // Peaks (and per-step bytes) now; their arenas after the search.
    // The list schedules (greedy, inductor, xla) choose among all ready ops
    // at every step: on a wide graph they may stop choosing at half the
    // time limit (fallback "baselines").
    ASSIGN_OR_RETURN(BaselineReport report,
                     BaselineOrders(buffers, options, std::min(search_end, After(start, time_limit / 2)), fall_back));
    plan.baselines = std::move(report.baselines);
  }

  // The best baseline (ties in the table's order), or the one asked for.
  const Algorithm algorithm = options.algorithm;
  const bool relaxed = algorithm == Algorithm::kRelaxed && options.given_order.empty();
  const bool search = algorithm == Algorithm::kAuto || relaxed || !options.given_order.empty();
  const bool paper_dp = algorithm == Algorithm::kDp || algorithm == Algorithm::kDpDc ||
                        algorithm == Algorithm::kDpDcAsb || algorithm == Algorithm::kExhaustive ||
                        algorithm == Algorithm::kBestFirst;
  const bool best_baseline = search || paper_dp || algorithm == Algorithm::kBaseline;
  const std::optional<Baseline> named = AlgorithmBaseline(algorithm);
  const OrderSummary* chosen = &plan.baselines[Baseline::kFileOrder];
  plan.algorithm = BaselineName(Baseline::kFileOrder);
  for (const BaselineInfo& info : BaselineTable()) {
    const OrderSummary* summary = &plan.baselines[info.baseline];
    if (named == info.baseline || (best_baseline && summary->peak_bytes < chosen->peak_bytes)) {
      chosen = summary;
      plan.algorithm = info.name;
    }
  }
  plan.order = chosen->order;
  {
    PhaseTimer timer(&plan, "search");
    // The lower bound (the search's, or LowerBoundBytes) holds the graph's
    // reachability bitsets: ancestors and descendants of every op.
    MemoryCharge reachability(options.memory);
    const int64_t n = graph.num_ops();
    const int64_t reachability_bytes = 2 * n * ((n + 63) / 64) * 8;
    if (!reachability.TryAdd(reachability_bytes)) {
      return MemoryLimitError(options.memory, reachability_bytes, "the lower bound's reachability bitsets");
    }
    // MinimizePeak derives the same bound itself, op by op per segment.
    if (!search) plan.lower_bound_bytes = LowerBoundBytes(buffers);
    plan.certificate = Certificate::kBaseline;
    if (search) {
      SearchOptions limits;
      limits.cancelled = options.cancelled;
      limits.max_states = options.max_search_states;
      limits.time_limit_seconds = search_seconds();
      limits.seemingly_good = relaxed;
      limits.memory = options.memory;
      const int64_t good_enough = options.objective == Objective::kFit ? options.memory_budget_bytes : 0;
      MinimizeResult result = MinimizePeak(buffers, plan.order, /*lower_bound=*/0, limits, good_enough, executor);
      plan.order = std::move(result.order);
      plan.lower_bound_bytes = result.lower_bound_bytes;
      plan.certificate = result.optimal ? Certificate::kOptimal : Certificate::kBestFound;
      plan.search_stats = result.stats;
      plan.algorithm = AlgorithmName(relaxed ? Algorithm::kRelaxed : Algorithm::kAuto);
      if (result.stats.hit_memory_limit && !result.optimal) {
        fall_back("search", "memory_limit", "best order found before the limit");
      }
      if (result.stats.lower_bound_cut) {
        fall_back("lower_bound", "time_limit", "cone bounds for the ops the closure bound did not reach");
      }
      if (!options.given_order.empty()) {
        // Report the caller's order; Serenity's becomes the reference (its
        // arenas come with the baselines').
        ASSIGN_OR_RETURN(OrderSummary serenity, Summarize(buffers, plan.order, /*with_steps=*/false));
        plan.serenity = std::move(serenity);
        plan.order = options.given_order;
        plan.algorithm = "given";
        plan.certificate = Certificate::kBaseline;
      }
    } else if (paper_dp) {
      SegmentedDpOptions dp;
      dp.search.cancelled = options.cancelled;
      dp.search.max_states = options.max_search_states;
      dp.search.time_limit_seconds = search_seconds();
      dp.soft_budget = algorithm == Algorithm::kDpDcAsb;
      dp.step_time_limit_seconds = options.step_time_limit_seconds;
      MinimizeResult result = algorithm == Algorithm::kDp           ? SignatureDp(buffers, dp.search)
                              : algorithm == Algorithm::kExhaustive ? ExhaustiveSearch(buffers, dp.search)
                              : algorithm == Algorithm::kBestFirst  ? BestFirstSearch(buffers, dp.search)
                                                                    : SegmentedDp(buffers, dp);
      plan.search_stats = result.stats;
      plan.algorithm = AlgorithmName(algorithm);
      // A search that gave up keeps the best baseline unless it found better.
      plan.certificate = result.optimal ? Certificate::kOptimal : Certificate::kBestFound;
      if (!result.order.empty() && (result.optimal || result.peak_bytes < chosen->peak_bytes)) {
        plan.order = std::move(result.order);
        plan.lower_bound_bytes = std::max(plan.lower_bound_bytes, result.lower_bound_bytes);
      }
    }
  }
  plan.solve_ms = MillisSince(solve_start);
  if (is_cancelled()) return absl::CancelledError("the call was cancelled");

  ASSIGN_OR_RETURN(plan.profile, Simulate(buffers, plan.order));
  if (plan.profile.peak_bytes <= plan.lower_bound_bytes) plan.certificate = Certificate::kOptimal;
  plan.feasible = options.memory_budget_bytes == 0 || plan.profile.peak_bytes <= options.memory_budget_bytes;
  if (options.score_only) {
    plan.total_ms = MillisSince(start);
    return plan;
  }
  {
    PhaseTimer timer(&plan, "arena");
    // The arena's searches may take half of what is left; the greedy
    // placements (or the fast one) always give a plan.
    ArenaLimits limits;
    limits.cancelled = options.cancelled;
    limits.memory = options.memory;
    limits.deadline = end == Clock::time_point::max() ? end : After(Clock::now(), SecondsLeft(end) / 2);
    ArenaCut cut;
    ASSIGN_OR_RETURN(plan.arena, PlanProfileArena(plan.profile, options.alignment,
                                                  [&](absl::Span<const ArenaBuffer> activations, int64_t alignment) {
                                                    return PlanArenaInstance(activations, alignment, PlanArenaSearch(),
                                                                             limits, &cut);
                                                  }));
    if (is_cancelled()) return absl::CancelledError("the call was cancelled");
    if (!cut.reason.empty()) fall_back("arena", cut.reason, cut.used);
    if (EstimatePlacementSeconds(ActivationBuffers(plan.profile)) > SecondsLeft(end)) {
      fall_back("tflite_arena", "time_limit", "skipped");
    } else {
      ASSIGN_OR_RETURN(ArenaPlan tflite, PlanProfileArena(plan.profile, options.alignment, TfliteStyle));
      plan.arena_bytes_tflite = tflite.size_bytes;
    }
  }
  if (options.memory_budget_bytes > 0 && plan.arena.size_bytes > options.memory_budget_bytes && plan.feasible) {
    PhaseTimer timer(&plan, "defragment");
    // The peak fits the budget but the static arena does not: move buffers
    // (a Concat's slices together).
    std::vector<ArenaBuffer> lifetimes;
    for (const BufferLifetimeInfo& b : plan.profile.buffers) {
      lifetimes.push_back({b.bytes, b.first_step, b.last_step, b.anchor, b.offset_from_anchor});
    }
    // Its placement compares each new buffer with the live ones: like a
    // greedy placement in time, and a few hundred bytes per buffer.
    MemoryCharge charge(options.memory);
    if (is_cancelled()) return absl::CancelledError("the call was cancelled");
    if (EstimatePlacementSeconds(lifetimes) > SecondsLeft(end)) {
      fall_back("defragment", "time_limit", "skipped");
    } else if (!charge.TryAdd(256 * static_cast<int64_t>(lifetimes.size()))) {
      fall_back("defragment", "memory_limit", "skipped");
    } else {
      absl::StatusOr<MovingArenaPlan> moving =
          PlanArenaWithMoves(lifetimes, options.alignment, options.memory_budget_bytes);
      if (moving.ok()) {
        plan.arena = std::move(moving->plan);
        plan.moves = std::move(moving->moves);
        plan.moved_bytes = moving->moved_bytes;
      }
    }
  }
  plan.arena_fits_budget = options.memory_budget_bytes == 0 || plan.arena.size_bytes <= options.memory_budget_bytes;
  {
    PhaseTimer timer(&plan, "baseline_arenas");
    // Each order's TFLite-style arena and our greedy placements, while time
    // lasts for both; the rest keep 0.
    RETURN_IF_ERROR(PlanOrderArenas(
        buffers, options, end, BaselineSummaries(&plan.baselines, plan.serenity.has_value() ? &*plan.serenity : nullptr),
        fall_back));
  }
  if (!options.onchip_bytes.empty()) {
    PhaseTimer timer(&plan, "traffic");
    const std::vector<NamedOrder> orders = BaselineOrdersByName(
        plan.baselines, NamedOrder{plan.serenity.has_value() ? "given" : "serenity", &plan.order});
    RETURN_IF_ERROR(OrderTraffic(buffers, options, end, orders, fall_back, &plan.traffic));
  }
  plan.total_ms = MillisSince(start);
  return plan;
}

absl::StatusOr<Plan> PlanGraph(const Graph& graph, const PlanOptions& options, Executor* executor) {
  ASSIGN_OR_RETURN(SanitizedOptions sanitized, SanitizePlanOptions(graph, options));
  return PlanGraph(graph, sanitized, executor);
}

}  // namespace serenity
