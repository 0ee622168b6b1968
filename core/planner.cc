#include "core/planner.h"

#include <algorithm>
#include <chrono>
#include <functional>

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

// Ours without the skyline search, so that five baselines stay cheap.
absl::StatusOr<ArenaPlan> OursGreedy(absl::Span<const ArenaBuffer> buffers, int64_t alignment) {
  return PlanArena(buffers, alignment, /*skyline_nodes=*/0);
}

absl::StatusOr<ArenaPlan> Ours(absl::Span<const ArenaBuffer> buffers, int64_t alignment) {
  return PlanArenaInstance(buffers, alignment, PlanArenaSearch());
}

absl::StatusOr<OrderSummary> Summarize(const BufferModel& buffers, std::vector<OpId> order,
                                       int64_t alignment, bool peak_only = false) {
  OrderSummary summary;
  ASSIGN_OR_RETURN(MemoryProfile profile, Simulate(buffers, order));
  if (peak_only) {
    summary.order = std::move(order);
    summary.peak_bytes = profile.peak_bytes;
    return summary;
  }
  ASSIGN_OR_RETURN(ArenaPlan arena, PlanProfileArena(profile, alignment, TfliteStyle));
  ASSIGN_OR_RETURN(ArenaPlan ours, PlanProfileArena(profile, alignment, OursGreedy));
  summary.arena_bytes_ours = ours.size_bytes;
  summary.order = std::move(order);
  summary.peak_bytes = profile.peak_bytes;
  summary.step_bytes = profile.step_bytes;
  summary.arena_bytes = arena.size_bytes;
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

const std::vector<std::string>& PlanAlgorithms() {
  static const std::vector<std::string> kAlgorithms = {
      "auto",     "relaxed",    "dp",    "dp+dc",  "dp+dc+asb", "exhaustive", "best_first",
      "baseline", "file_order", "kahn",  "greedy", "inductor",  "xla"};
  return kAlgorithms;
}

absl::Status ValidatePlanOptions(const PlanOptions& options) {
  const std::vector<std::string>& algorithms = PlanAlgorithms();
  if (std::find(algorithms.begin(), algorithms.end(), options.algorithm) == algorithms.end()) {
    return absl::InvalidArgumentError(absl::StrCat("unknown algorithm '", options.algorithm,
                                                   "'; choose one of: ", absl::StrJoin(algorithms, ", ")));
  }
  if (options.alignment < 1) return absl::InvalidArgumentError("alignment must be at least 1 byte");
  if (options.objective != "min_peak" && options.objective != "fit") {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown objective '", options.objective, "'; choose min_peak or fit"));
  }
  if (options.objective == "fit" && options.memory_budget_bytes <= 0) {
    return absl::InvalidArgumentError("objective fit needs a memory budget");
  }
  if (options.memory_budget_bytes < 0) return absl::InvalidArgumentError("memory budget must not be negative");
  if (options.max_search_states < 1) return absl::InvalidArgumentError("max_search_states must be at least 1");
  for (int64_t onchip : options.onchip_bytes) {
    if (onchip <= 0) return absl::InvalidArgumentError("on-chip sizes must be positive");
  }
  if (options.step_time_limit_seconds <= 0) {
    return absl::InvalidArgumentError("the per-step time limit must be positive");
  }
  return absl::OkStatus();
}

namespace {

absl::StatusOr<BaselineReport> SummarizeBaselines(const BufferModel& buffers, const PlanOptions& options,
                                                  bool with_traffic) {
  const Graph& graph = buffers.graph();
  const bool peak_only = options.score_only;
  BaselineReport report;
  ASSIGN_OR_RETURN(report.file_order, Summarize(buffers, FileOrder(graph), options.alignment, peak_only));
  ASSIGN_OR_RETURN(report.kahn, Summarize(buffers, KahnOrder(graph), options.alignment, peak_only));
  ASSIGN_OR_RETURN(report.greedy, Summarize(buffers, GreedyOrder(buffers), options.alignment, peak_only));
  ASSIGN_OR_RETURN(report.inductor, Summarize(buffers, InductorOrder(buffers), options.alignment, peak_only));
  ASSIGN_OR_RETURN(report.xla, Summarize(buffers, XlaOrder(buffers), options.alignment, peak_only));
  if (with_traffic && !peak_only && !options.onchip_bytes.empty()) {
    const std::pair<const char*, const std::vector<OpId>*> orders[] = {
        {"file_order", &report.file_order.order}, {"kahn", &report.kahn.order},
        {"greedy", &report.greedy.order},         {"inductor", &report.inductor.order},
        {"xla", &report.xla.order}};
    for (const auto& [name, order] : orders) {
      std::vector<TrafficResult> points;
      for (int64_t onchip : options.onchip_bytes) points.push_back(SimulateTraffic(buffers, *order, onchip));
      report.traffic.emplace_back(name, std::move(points));
    }
  }
  return report;
}

}  // namespace

absl::StatusOr<BaselineReport> SummarizeBaselines(const Graph& graph, const PlanOptions& options) {
  RETURN_IF_ERROR(ValidatePlanOptions(options));
  BufferModel buffers(graph, options.memory_model);
  return SummarizeBaselines(buffers, options, /*with_traffic=*/true);
}

absl::StatusOr<Plan> PlanGraph(const Graph& graph, const PlanOptions& options, Executor* executor) {
  const Clock::time_point start = Clock::now();
  RETURN_IF_ERROR(ValidatePlanOptions(options));
  BufferModel buffers(graph, options.memory_model);
  Plan plan;
  const Clock::time_point solve_start = Clock::now();
  const bool peak_only = options.score_only;
  {
    ASSIGN_OR_RETURN(BaselineReport report, SummarizeBaselines(buffers, options, /*with_traffic=*/false));
    plan.file_order = std::move(report.file_order);
    plan.kahn = std::move(report.kahn);
    plan.greedy = std::move(report.greedy);
    plan.inductor = std::move(report.inductor);
    plan.xla = std::move(report.xla);
  }

  // The best baseline (ties in the order file_order, kahn, greedy, inductor,
  // xla), or the one asked for.
  if (!options.given_order.empty()) RETURN_IF_ERROR(CheckOrder(graph, options.given_order));
  const bool relaxed = options.algorithm == "relaxed" && options.given_order.empty();
  const bool search = options.algorithm == "auto" || relaxed || !options.given_order.empty();
  const bool paper_dp = options.algorithm == "dp" || options.algorithm == "dp+dc" ||
                        options.algorithm == "dp+dc+asb" || options.algorithm == "exhaustive" ||
                        options.algorithm == "best_first";
  const bool best_baseline = search || paper_dp || options.algorithm == "baseline";
  const std::pair<const char*, const OrderSummary*> baselines[] = {
      {"file_order", &plan.file_order}, {"kahn", &plan.kahn}, {"greedy", &plan.greedy},
      {"inductor", &plan.inductor},     {"xla", &plan.xla}};
  const OrderSummary* chosen = &plan.file_order;
  plan.algorithm = "file_order";
  for (const auto& [name, summary] : baselines) {
    if (options.algorithm == name || (best_baseline && summary->peak_bytes < chosen->peak_bytes)) {
      chosen = summary;
      plan.algorithm = name;
    }
  }
  plan.order = chosen->order;
  // MinimizePeak derives the same bound itself, op by op per segment.
  if (!search) plan.lower_bound_bytes = LowerBoundBytes(buffers);
  plan.certificate = Certificate::kBaseline;
  if (search) {
    SearchOptions limits;
    limits.cancelled = options.cancelled;
    limits.max_states = options.max_search_states;
    limits.time_limit_seconds =
        options.time_limit_seconds > 0 ? options.time_limit_seconds : kDefaultTimeLimitSeconds;
    limits.seemingly_good = relaxed;
    const int64_t good_enough = options.objective == "fit" ? options.memory_budget_bytes : 0;
    MinimizeResult result = MinimizePeak(buffers, plan.order, /*lower_bound=*/0, limits, good_enough, executor);
    plan.order = std::move(result.order);
    plan.lower_bound_bytes = result.lower_bound_bytes;
    plan.certificate = result.optimal ? Certificate::kOptimal : Certificate::kBestFound;
    plan.search_stats = result.stats;
    plan.algorithm = relaxed ? "relaxed" : "auto";
    if (!options.given_order.empty()) {
      // Report the caller's order; Serenity's becomes the reference.
      ASSIGN_OR_RETURN(OrderSummary serenity, Summarize(buffers, plan.order, options.alignment, peak_only));
      plan.serenity = std::move(serenity);
      plan.order = options.given_order;
      plan.algorithm = "given";
      plan.certificate = Certificate::kBaseline;
    }
  } else if (paper_dp) {
    SegmentedDpOptions dp;
    dp.search.cancelled = options.cancelled;
    dp.search.max_states = options.max_search_states;
    dp.search.time_limit_seconds =
        options.time_limit_seconds > 0 ? options.time_limit_seconds : kDefaultTimeLimitSeconds;
    dp.soft_budget = options.algorithm == "dp+dc+asb";
    dp.step_time_limit_seconds = options.step_time_limit_seconds;
    MinimizeResult result = options.algorithm == "dp"           ? SignatureDp(buffers, dp.search)
                            : options.algorithm == "exhaustive" ? ExhaustiveSearch(buffers, dp.search)
                            : options.algorithm == "best_first" ? BestFirstSearch(buffers, dp.search)
                                                                : SegmentedDp(buffers, dp);
    plan.search_stats = result.stats;
    plan.algorithm = options.algorithm;
    // A search that gave up keeps the best baseline unless it found better.
    plan.certificate = result.optimal ? Certificate::kOptimal : Certificate::kBestFound;
    if (!result.order.empty() && (result.optimal || result.peak_bytes < chosen->peak_bytes)) {
      plan.order = std::move(result.order);
      plan.lower_bound_bytes = std::max(plan.lower_bound_bytes, result.lower_bound_bytes);
    }
  }
  plan.solve_ms = MillisSince(solve_start);
  if (options.cancelled != nullptr && options.cancelled->load(std::memory_order_relaxed)) {
    return absl::CancelledError("the call was cancelled");
  }

  ASSIGN_OR_RETURN(plan.profile, Simulate(buffers, plan.order));
  if (plan.profile.peak_bytes <= plan.lower_bound_bytes) plan.certificate = Certificate::kOptimal;
  plan.feasible = options.memory_budget_bytes == 0 || plan.profile.peak_bytes <= options.memory_budget_bytes;
  if (options.score_only) {
    plan.total_ms = MillisSince(start);
    return plan;
  }
  ASSIGN_OR_RETURN(plan.arena, PlanProfileArena(plan.profile, options.alignment, Ours));
  ASSIGN_OR_RETURN(ArenaPlan tflite, PlanProfileArena(plan.profile, options.alignment, TfliteStyle));
  plan.arena_bytes_tflite = tflite.size_bytes;
  if (options.memory_budget_bytes > 0 && plan.arena.size_bytes > options.memory_budget_bytes && plan.feasible) {
    // The peak fits the budget but the static arena does not: move buffers
    // (a Concat's slices together).
    std::vector<ArenaBuffer> lifetimes;
    for (const BufferLifetimeInfo& b : plan.profile.buffers) {
      lifetimes.push_back({b.bytes, b.first_step, b.last_step, b.anchor, b.offset_from_anchor});
    }
    absl::StatusOr<MovingArenaPlan> moving =
        PlanArenaWithMoves(lifetimes, options.alignment, options.memory_budget_bytes);
    if (moving.ok()) {
      plan.arena = std::move(moving->plan);
      plan.moves = std::move(moving->moves);
      plan.moved_bytes = moving->moved_bytes;
    }
  }
  plan.arena_fits_budget = options.memory_budget_bytes == 0 || plan.arena.size_bytes <= options.memory_budget_bytes;
  if (!options.onchip_bytes.empty()) {
    const std::pair<const char*, const std::vector<OpId>*> orders[] = {
        {plan.serenity.has_value() ? "given" : "serenity", &plan.order},
        {"file_order", &plan.file_order.order},
        {"kahn", &plan.kahn.order},
        {"greedy", &plan.greedy.order},     {"inductor", &plan.inductor.order},     {"xla", &plan.xla.order}};
    for (const auto& [name, order] : orders) {
      std::vector<TrafficResult> points;
      for (int64_t onchip : options.onchip_bytes) points.push_back(SimulateTraffic(buffers, *order, onchip));
      plan.traffic.emplace_back(name, std::move(points));
    }
  }
  plan.total_ms = MillisSince(start);
  return plan;
}

}  // namespace serenity
