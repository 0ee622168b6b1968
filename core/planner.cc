#include "core/planner.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "core/arena/instance_search.h"
#include "core/arena/memories.h"
#include "core/graph/reachability.h"
#include "core/schedule/baselines.h"
#include "core/schedule/budget_search.h"
#include "core/schedule/compiler_baselines.h"
#include "core/schedule/divide_and_conquer.h"
#include "core/schedule/reference_search.h"
#include "core/schedule/signature_dp.h"
#include "core/util/deadline.h"
#include "core/util/saturating.h"
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

namespace {

struct CertificateInfo {
  Certificate certificate;
  const char* name;
};

// Every certificate's name, in the enum's order.
constexpr CertificateInfo kCertificates[] = {
    {Certificate::kOptimal, "optimal"},
    {Certificate::kBestFound, "best_found"},
    {Certificate::kBaseline, "baseline"},
};

}  // namespace

const char* CertificateName(Certificate certificate) { return kCertificates[static_cast<size_t>(certificate)].name; }

namespace {

double SecondsLeft(Clock::time_point end) {
  if (end == Clock::time_point::max()) return 1e18;
  return std::chrono::duration<double>(end - Clock::now()).count();
}

std::vector<ArenaBuffer> ActivationBuffers(const MemoryProfile& profile) {
  std::vector<ArenaBuffer> activations;
  for (const BufferLifetimeInfo& b : profile.buffers) {
    if (b.kind != BufferKind::kWeight)
      activations.push_back({b.bytes, b.first_step, b.last_step, b.anchor, b.offset_from_anchor});
  }
  return activations;
}

// Whether the caller went away (options.cancelled set).
bool IsCancelled(const PlanOptions& options) {
  return options.cancelled != nullptr && options.cancelled->load(std::memory_order_relaxed);
}

// The most wall time an arena phase after the search takes on `buffers`
// buffers (and no more than the time limit leaves): the plan's own arena,
// what a runtime allocates, gets max(kPlanArenaFloorSeconds, 2.5 us per
// buffer); its TFLite-style arena and the baselines' arenas, reports, get
// max(kReportArenaFloorSeconds, 2.5 us per buffer) each (the baselines'
// all together). It grows linearly with the buffers, not with the time
// limit: a search proven early does not leave seconds of quadratic
// placements behind it. The plan's floor leaves room, on a loaded machine,
// to the arena searches of a cell whose arena misses its bound and which
// run out their node limits (nasnet_a_cifar10 with Concats in place;
// bench/RESULTS.md, "Long graphs with the default time limit").
constexpr double kPlanArenaFloorSeconds = 1.0;
constexpr double kReportArenaFloorSeconds = 0.25;
constexpr double kArenaPhaseSecondsPerBuffer = 2.5e-6;
double ArenaPhaseSeconds(size_t buffers, double floor_seconds) {
  return std::max(floor_seconds, kArenaPhaseSecondsPerBuffer * static_cast<double>(buffers));
}

// Plans each order's TFLite-style arena and our greedy placements while
// time lasts before `end` and within the reports' ArenaPhaseSeconds for all
// of them: each distinct order a task on `executor` when all of them fit the
// time one after another and twice their co-live lists fit the memory
// account (by the first one's placement estimates), else one
// after another here until one does not fit or a limit cuts it (the plan's
// arena runs beside them, and on a long graph more placements at once only
// take its time). An order whose placement does not fit the time left keeps
// 0, one a limit cut keeps what the cut placement gave, and `fall_back`
// names the phase once (the first such order's reason). An order equal to
// one before it gets that one's arenas. Cancelled when options.cancelled
// became true.
using FallBack = std::function<void(const std::string& phase, const std::string& reason, const std::string& used)>;

absl::Status PlanOrderArenas(const BufferModel& buffers, const PlanOptions& options, Clock::time_point end,
                             const std::vector<OrderSummary*>& orders, const FallBack& fall_back, Executor* executor) {
  std::vector<OrderSummary*> distinct;
  std::vector<std::pair<OrderSummary*, const OrderSummary*>> copies;  // (summary, the equal one before it)
  for (OrderSummary* summary : orders) {
    const auto same = std::find_if(distinct.begin(), distinct.end(),
                                   [&](const OrderSummary* before) { return before->order == summary->order; });
    if (same != distinct.end()) {
      copies.push_back({summary, *same});
    } else {
      distinct.push_back(summary);
    }
  }
  if (distinct.empty()) return absl::OkStatus();
  if (IsCancelled(options)) return absl::CancelledError("the call was cancelled");
  // The phase's time, from the first order's buffers (every order of the
  // graph has the same ones).
  ASSIGN_OR_RETURN(MemoryProfile first_profile, Simulate(buffers, distinct[0]->order));
  const std::vector<ArenaBuffer> first_activations = ActivationBuffers(first_profile);
  end = std::min(end, TimeAfter(Clock::now(), ArenaPhaseSeconds(first_activations.size(), kReportArenaFloorSeconds)));
  // In parallel the orders' co-live lists are held at once, beside the
  // plan's own arena: a limited account must have room for twice as much.
  const PlacementEstimate first_estimate = EstimatePlacement(first_activations);
  const double order_count = static_cast<double>(distinct.size());
  const bool all_fit = 2 * first_estimate.seconds * order_count <= SecondsLeft(end) &&
                       (options.memory == nullptr || options.memory->unlimited() ||
                        2 * static_cast<double>(first_estimate.list_bytes) * order_count <=
                            static_cast<double>(options.memory->limit() - options.memory->used()));
  struct Outcome {
    absl::Status status;
    ArenaCut cut;  // reason "time_limit", used "skipped": the placement did not fit the time left
  };
  std::vector<Outcome> outcomes(distinct.size());
  std::vector<std::function<void()>> tasks;
  for (size_t k = 0; k < distinct.size(); ++k) {
    tasks.push_back([&, k] {
      Outcome& outcome = outcomes[k];
      if (IsCancelled(options)) {
        outcome.status = absl::CancelledError("the call was cancelled");
        return;
      }
      absl::StatusOr<MemoryProfile> profile =
          k == 0 ? absl::StatusOr<MemoryProfile>(std::move(first_profile)) : Simulate(buffers, distinct[k]->order);
      if (!profile.ok()) {
        outcome.status = profile.status();
        return;
      }
      const double seconds = k == 0 ? first_estimate.seconds : EstimatePlacementSeconds(ActivationBuffers(*profile));
      if (2 * seconds > SecondsLeft(end)) {
        outcome.cut = {"time_limit", "skipped"};
        return;
      }
      ArenaLimits limits;
      limits.cancelled = options.cancelled;
      limits.memory = options.memory;
      limits.deadline = end;
      // Ours first: its first placement is the TFLite-style one.
      std::optional<ArenaPlan> by_size;
      absl::StatusOr<ArenaPlan> ours = PlanProfileArena(
          *profile, options.alignment, [&](absl::Span<const ArenaBuffer> activations, int64_t alignment) {
            return PlanArena(activations, alignment, /*skyline_nodes=*/0, limits, &outcome.cut, &by_size);
          });
      if (!ours.ok()) {
        outcome.status = ours.status();
        return;
      }
      absl::StatusOr<ArenaPlan> tflite = PlanProfileArena(
          *profile, options.alignment,
          [&](absl::Span<const ArenaBuffer> activations, int64_t alignment) -> absl::StatusOr<ArenaPlan> {
            if (by_size.has_value()) return *std::move(by_size);
            if (IsCancelled(options)) return absl::CancelledError("the call was cancelled");
            return TfliteStyle(activations, alignment);
          });
      if (!tflite.ok()) {
        outcome.status = tflite.status();
        return;
      }
      distinct[k]->arena_bytes = tflite->size_bytes;
      distinct[k]->arena_bytes_ours = ours->size_bytes;
    });
  }
  if (all_fit) {
    RunAll(executor, tasks);
  } else {
    for (size_t k = 0; k < tasks.size(); ++k) {
      tasks[k]();
      if (!outcomes[k].status.ok() || !outcomes[k].cut.reason.empty()) break;
    }
  }
  for (const Outcome& outcome : outcomes) RETURN_IF_ERROR(outcome.status);
  for (const Outcome& outcome : outcomes) {
    if (outcome.cut.reason.empty()) continue;
    fall_back("baseline_arenas", outcome.cut.reason, outcome.cut.used);
    break;
  }
  for (const auto& [summary, same] : copies) {
    summary->arena_bytes = same->arena_bytes;
    summary->arena_bytes_ours = same->arena_bytes_ours;
  }
  return absl::OkStatus();
}

// The baseline orders (baseline_table.h) with their peaks (and per-step
// bytes unless score-only), no arenas, each a task on `executor` (null:
// one after another here); the list schedules stop choosing at `deadline`
// (then `fall_back` names the phase).
absl::StatusOr<BaselineReport> BaselineOrders(const BufferModel& buffers, const PlanOptions& options,
                                              Clock::time_point deadline, const FallBack& fall_back,
                                              Executor* executor) {
  const absl::Span<const BaselineInfo> table = BaselineTable();
  const bool steps = !options.score_only;
  std::vector<absl::StatusOr<OrderSummary>> summaries(table.size(), absl::UnknownError("not run"));
  std::unique_ptr<bool[]> cuts(new bool[table.size()]());  // one flag per task
  std::vector<std::function<void()>> tasks;
  for (size_t i = 0; i < table.size(); ++i) {
    tasks.push_back([&, i] {
      ListScheduleLimits list_limits;
      list_limits.deadline = deadline;
      list_limits.cut = &cuts[i];
      summaries[i] = Summarize(buffers, table[i].order(buffers, list_limits), steps);
    });
  }
  RunAll(executor, tasks);
  BaselineReport report;
  bool cut = false;
  for (size_t i = 0; i < table.size(); ++i) {
    if (!summaries[i].ok()) return summaries[i].status();
    report.baselines[table[i].baseline] = *std::move(summaries[i]);
    cut = cut || cuts[i];
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
                          absl::Span<const NamedOrder> orders, const FallBack& fall_back,
                          std::vector<std::pair<std::string, std::vector<TrafficResult>>>* traffic) {
  for (const auto& [name, order] : orders) {
    if (IsCancelled(options)) {
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

// The end of a job that started at `start`: the earlier of the caller's
// deadline and the time limit plus the finishing time.
Clock::time_point JobEnd(Clock::time_point start, const PlanOptions& options) {
  return std::min(options.deadline, TimeAfter(start, options.time_limit_seconds + options.finish_seconds));
}

// How an algorithm finds the order.
enum class Family {
  kSearch,        // auto, relaxed: the budget search from the best baseline
  kReference,     // the paper's DP variants and the reference searches
  kBestBaseline,  // the best baseline
  kOneBaseline,   // the baseline named
};

Family FamilyOf(Algorithm algorithm) {
  switch (algorithm) {
    case Algorithm::kAuto:
    case Algorithm::kRelaxed:
      return Family::kSearch;
    case Algorithm::kDp:
    case Algorithm::kDpDc:
    case Algorithm::kDpDcAsb:
    case Algorithm::kExhaustive:
    case Algorithm::kBestFirst:
      return Family::kReference;
    case Algorithm::kBaseline:
      return Family::kBestBaseline;
    case Algorithm::kFileOrder:
    case Algorithm::kKahn:
    case Algorithm::kGreedy:
    case Algorithm::kInductor:
    case Algorithm::kXla:
      break;
  }
  return Family::kOneBaseline;
}

// One PlanGraph call: its clock and limits, and the plan it builds, one
// step (Run's list) at a time.
class PlanRun {
 public:
  PlanRun(const Graph& graph, const PlanOptions& options, Executor* executor, PlanHints hints = {})
      : graph_(graph),
        options_(options),
        executor_(executor),
        start_(Clock::now()),
        time_limit_(options.time_limit_seconds),
        end_(JobEnd(start_, options)),
        // The search's end: finish_seconds before the job's, at most the
        // time limit after the start.
        search_end_(std::min(TimeAfter(start_, time_limit_),
                             end_ == Clock::time_point::max()
                                 ? end_
                                 : end_ - std::chrono::duration_cast<Clock::duration>(
                                              std::chrono::duration<double>(options.finish_seconds)))),
        buffers_(graph, options.memory_model),
        fall_back_([this](const std::string& phase, const std::string& reason, const std::string& used) {
          plan_.fallbacks.push_back({phase, reason, used});
        }),
        hints_(std::move(hints)) {}

  absl::StatusOr<Plan> Run() {
    const Clock::time_point solve_start = Clock::now();
    RETURN_IF_ERROR(StartOrder());
    RETURN_IF_ERROR(Search());
    plan_.solve_ms = MillisSince(solve_start);
    if (IsCancelled(options_)) return absl::CancelledError("the call was cancelled");
    RETURN_IF_ERROR(Certify());
    if (!options_.score_only) {
      RETURN_IF_ERROR(AllArenas());
      RETURN_IF_ERROR(Traffic());
    }
    plan_.total_ms = MillisSince(start_);
    return std::move(plan_);
  }

  // The phases Run skips for a score-only plan, on `scored` (made by Run for
  // the same graph and options but score_only): the baselines' per-step
  // bytes, the arenas and the traffic.
  absl::StatusOr<Plan> Complete(Plan scored) {
    plan_ = std::move(scored);
    const double scored_ms = plan_.total_ms;
    for (const BaselineInfo& info : BaselineTable()) {
      OrderSummary& summary = plan_.baselines[info.baseline];
      if (!summary.step_bytes.empty() || summary.order.empty()) continue;
      ASSIGN_OR_RETURN(summary, Summarize(buffers_, summary.order, /*with_steps=*/true));
    }
    if (plan_.serenity.has_value() && plan_.serenity->step_bytes.empty()) {
      ASSIGN_OR_RETURN(plan_.serenity, Summarize(buffers_, plan_.serenity->order, /*with_steps=*/true));
    }
    RETURN_IF_ERROR(AllArenas());
    RETURN_IF_ERROR(Traffic());
    plan_.total_ms = scored_ms + MillisSince(start_);
    return std::move(plan_);
  }

 private:
  // What the budget says of the plan's peak and (current) arena.
  BudgetFit Fit() const {
    return ApplyBudget(options_.memory_budget_bytes, plan_.profile.peak_bytes, plan_.arena.size_bytes);
  }

  // The search's limit in seconds, from now: never 0 (which means none).
  double SearchSeconds() const { return std::max(1e-6, std::min(time_limit_, SecondsLeft(search_end_))); }

  // The baselines' peaks (and per-step bytes; their arenas come after the
  // search) and the order the search starts from: the best baseline (ties
  // in the table's order), or the one asked for.
  absl::Status StartOrder() {
    {
      PhaseTimer timer(&plan_, "baselines");
      // The list schedules (greedy, inductor, xla; list_schedule.h) stop
      // choosing at half the time limit (fallback "baselines"); near-linear,
      // they rarely need to.
      ASSIGN_OR_RETURN(BaselineReport report,
                       BaselineOrders(buffers_, options_, std::min(search_end_, TimeAfter(start_, time_limit_ / 2)),
                                      fall_back_, executor_));
      plan_.baselines = std::move(report.baselines);
    }
    const Algorithm algorithm = options_.algorithm;
    const bool given = !options_.given_order.empty();
    const Family family = FamilyOf(algorithm);
    relaxed_ = algorithm == Algorithm::kRelaxed && !given;
    search_ = family == Family::kSearch || given;
    reference_ = family == Family::kReference;
    const bool best_baseline = given || family != Family::kOneBaseline;
    const std::optional<Baseline> named = AlgorithmBaseline(algorithm);
    start_baseline_ = Baseline::kFileOrder;
    for (const BaselineInfo& info : BaselineTable()) {
      if (named == info.baseline ||
          (best_baseline && plan_.baselines[info.baseline].peak_bytes < plan_.baselines[start_baseline_].peak_bytes)) {
        start_baseline_ = info.baseline;
      }
    }
    plan_.algorithm = BaselineName(start_baseline_);
    plan_.order = plan_.baselines[start_baseline_].order;
    // A search starts from the caller's candidate instead when its peak is
    // lower (the reference searches start from their own).
    if (search_ && !given) {
      int64_t start_peak = plan_.baselines[start_baseline_].peak_bytes;
      for (const std::vector<OpId>& candidate : hints_.start_candidates) {
        const int64_t peak = PeakOf(buffers_, candidate);
        if (peak < start_peak) {
          start_peak = peak;
          plan_.order = candidate;
        }
      }
    }
    return absl::OkStatus();
  }

  // Improves on the start order by the family's search (none for the
  // baselines) and sets the lower bound and the certificate.
  absl::Status Search() {
    PhaseTimer timer(&plan_, "search");
    // The lower bound (the search's, or LowerBoundBytes) holds the graph's
    // reachability bitsets: ancestors and descendants of every op within
    // its segment, at most n^2/4 bytes and Reachability::kMaxBitsetBytes.
    MemoryCharge reachability(options_.memory);
    const int64_t n = graph_.num_ops();
    const int64_t reachability_bytes = std::min(2 * n * ((n + 63) / 64) * 8, Reachability::kMaxBitsetBytes);
    if (!reachability.TryAdd(reachability_bytes)) {
      return MemoryLimitError(options_.memory, reachability_bytes, "the lower bound's reachability bitsets");
    }
    // MinimizePeak derives the same bound itself, op by op per segment.
    if (!search_) plan_.lower_bound_bytes = LowerBoundBytes(buffers_);
    plan_.certificate = Certificate::kBaseline;
    if (search_) return BudgetSearch();
    if (reference_) ReferenceSearch();
    return absl::OkStatus();
  }

  // kSearch (or a given order): the exact (or relaxed) budget search.
  absl::Status BudgetSearch() {
    SearchOptions limits;
    limits.cancelled = options_.cancelled;
    limits.max_states = options_.max_search_states;
    limits.time_limit_seconds = SearchSeconds();
    limits.seemingly_good = relaxed_;
    limits.memory = options_.memory;
    limits.only_below = options_.given_order.empty() ? hints_.only_below : 0;
    const int64_t good_enough = options_.objective == Objective::kFit ? options_.memory_budget_bytes : 0;
    MinimizeResult result = MinimizePeak(buffers_, plan_.order, /*lower_bound=*/0, limits, good_enough, executor_);
    plan_.order = std::move(result.order);
    plan_.lower_bound_bytes = result.lower_bound_bytes;
    plan_.certificate = result.optimal ? Certificate::kOptimal : Certificate::kBestFound;
    plan_.search_stats = result.stats;
    plan_.algorithm = AlgorithmName(relaxed_ ? Algorithm::kRelaxed : Algorithm::kAuto);
    if (result.stats.hit_memory_limit && !result.optimal) {
      fall_back_("search", "memory_limit", "best order found before the limit");
    }
    if (result.stats.lower_bound_cut) {
      fall_back_("lower_bound", "time_limit", "cone bounds for the ops the closure bound did not reach");
    }
    if (!options_.given_order.empty()) {
      // Report the caller's order; Serenity's becomes the reference (its
      // arenas come with the baselines').
      ASSIGN_OR_RETURN(OrderSummary serenity, Summarize(buffers_, plan_.order, /*with_steps=*/false));
      plan_.serenity = std::move(serenity);
      plan_.order = options_.given_order;
      plan_.algorithm = "given";
      plan_.certificate = Certificate::kBaseline;
    }
    return absl::OkStatus();
  }

  // kReference: the paper's DP variants and the reference searches. A
  // search that gave up keeps the start order unless it found better.
  void ReferenceSearch() {
    SegmentedDpOptions dp;
    dp.search.cancelled = options_.cancelled;
    dp.search.max_states = options_.max_search_states;
    dp.search.time_limit_seconds = SearchSeconds();
    dp.soft_budget = options_.algorithm == Algorithm::kDpDcAsb;
    dp.step_time_limit_seconds = options_.step_time_limit_seconds;
    MinimizeResult result = options_.algorithm == Algorithm::kDp           ? SignatureDp(buffers_, dp.search)
                            : options_.algorithm == Algorithm::kExhaustive ? ExhaustiveSearch(buffers_, dp.search)
                            : options_.algorithm == Algorithm::kBestFirst  ? BestFirstSearch(buffers_, dp.search)
                                                                           : SegmentedDp(buffers_, dp);
    plan_.search_stats = result.stats;
    plan_.algorithm = AlgorithmName(options_.algorithm);
    plan_.certificate = result.optimal ? Certificate::kOptimal : Certificate::kBestFound;
    if (!result.order.empty() && (result.optimal || result.peak_bytes < plan_.baselines[start_baseline_].peak_bytes)) {
      plan_.order = std::move(result.order);
      plan_.lower_bound_bytes = std::max(plan_.lower_bound_bytes, result.lower_bound_bytes);
    }
  }

  // Simulates the order: its profile, and optimal when the peak meets the
  // lower bound.
  absl::Status Certify() {
    ASSIGN_OR_RETURN(plan_.profile, Simulate(buffers_, plan_.order));
    if (plan_.profile.peak_bytes <= plan_.lower_bound_bytes) plan_.certificate = Certificate::kOptimal;
    plan_.feasible = Fit().feasible;
    return absl::OkStatus();
  }

  // The plan's arena, the TFLite-style one for comparison, and
  // defragmentation moves when the peak fits the budget but the arena does
  // not.
  absl::Status Arenas() {
    {
      PhaseTimer timer(&plan_, "arena");
      // The arena's searches may take half of what is left, and at most
      // ArenaPhaseSeconds; the greedy placements (or the fast one) always
      // give a plan. Then the TFLite-style arena, within its own time.
      const std::vector<ArenaBuffer> activations = ActivationBuffers(plan_.profile);
      const double phase_seconds = ArenaPhaseSeconds(activations.size(), kPlanArenaFloorSeconds);
      ArenaLimits limits;
      limits.cancelled = options_.cancelled;
      limits.memory = options_.memory;
      limits.deadline = TimeAfter(Clock::now(), std::min(SecondsLeft(end_) / 2, phase_seconds));
      ArenaCut cut;
      ASSIGN_OR_RETURN(plan_.arena, PlanProfileArena(plan_.profile, options_.alignment,
                                                     [&](absl::Span<const ArenaBuffer> activations, int64_t alignment) {
                                                       return PlanArenaInstance(activations, alignment,
                                                                                PlanArenaSearch(), limits, &cut);
                                                     }));
      if (IsCancelled(options_)) return absl::CancelledError("the call was cancelled");
      // The TFLite-style arena, reported beside ours, is the plan's when
      // smaller (ours may have been cut short, or, on a long graph, left
      // out the greedy placements that include it).
      const bool tflite_fits =
          EstimatePlacementSeconds(activations) <=
          std::min(SecondsLeft(end_), ArenaPhaseSeconds(activations.size(), kReportArenaFloorSeconds));
      if (tflite_fits) {
        ASSIGN_OR_RETURN(ArenaPlan tflite, PlanProfileArena(plan_.profile, options_.alignment, TfliteStyle));
        plan_.arena_bytes_tflite = tflite.size_bytes;
        if (tflite.size_bytes < plan_.arena.size_bytes) {
          plan_.arena = std::move(tflite);
          cut.used = "the TFLite-style placement";
        }
      }
      if (!cut.reason.empty()) fall_back_("arena", cut.reason, cut.used);
      if (!tflite_fits) fall_back_("tflite_arena", "time_limit", "skipped");
    }
    const BudgetFit fit = Fit();
    if (fit.feasible && !fit.arena_fits_budget) RETURN_IF_ERROR(Defragment());
    plan_.arena_fits_budget = Fit().arena_fits_budget;
    return absl::OkStatus();
  }

  // Every buffer in one of options.memories (issue 18): pins by tensor name
  // become pins of the buffers holding them.
  absl::Status Memories() {
    if (options_.memories.empty()) return absl::OkStatus();
    PhaseTimer timer(&plan_, "memories");
    const std::vector<BufferLifetimeInfo>& profile = plan_.profile.buffers;
    std::vector<ArenaBuffer> buffers;
    std::vector<std::string> names;
    std::vector<BufferPin> pins(profile.size());
    absl::flat_hash_map<TensorId, size_t> buffer_of;  // tensors and their aliases
    for (size_t i = 0; i < profile.size(); ++i) {
      const BufferLifetimeInfo& b = profile[i];
      buffers.push_back({b.bytes, b.first_step, b.last_step});
      if (b.kind == BufferKind::kWorkspace) {
        names.push_back(absl::StrCat(graph_.op(b.op).name, " (workspace)"));
        continue;
      }
      names.push_back(graph_.tensor(b.tensor).name);
      buffer_of[b.tensor] = i;
      for (TensorId alias : b.aliases) buffer_of[alias] = i;
    }
    absl::flat_hash_map<std::string, int> memory_index;
    for (size_t m = 0; m < options_.memories.size(); ++m) memory_index[options_.memories[m].name] = static_cast<int>(m);
    std::vector<const std::string*> pinned_by(profile.size(), nullptr);
    for (const TensorPin& pin : options_.pins) {
      const std::optional<TensorId> t = graph_.FindTensor(pin.tensor);  // SanitizePlanOptions checked it
      auto it = t.has_value() ? buffer_of.find(*t) : buffer_of.end();
      if (it == buffer_of.end()) {
        return absl::InvalidArgumentError(absl::StrCat("pinned tensor '", pin.tensor,
                                                       "' has no buffer of its own (a weight not counted, or never "
                                                       "live)"));
      }
      BufferPin& p = pins[it->second];
      if (pinned_by[it->second] != nullptr) {
        return absl::InvalidArgumentError(absl::StrCat("tensors '", *pinned_by[it->second], "' and '", pin.tensor,
                                                       "' share one buffer and are both pinned"));
      }
      pinned_by[it->second] = &pin.tensor;
      p.memory = memory_index.at(pin.memory);
      p.offset = pin.offset;
    }
    ArenaLimits limits;
    limits.cancelled = options_.cancelled;
    limits.memory = options_.memory;
    limits.deadline = end_;
    ASSIGN_OR_RETURN(plan_.memories, AssignMemories(buffers, names, options_.memories, pins, limits));
    plan_.memory_access_bytes.assign(options_.memories.size(), 0);
    for (size_t i = 0; i < profile.size(); ++i) {
      const BufferLifetimeInfo& b = profile[i];
      int64_t writes = 0, reads = 0;
      if (b.kind == BufferKind::kWorkspace) {
        writes = reads = 1;
      } else if (b.kind == BufferKind::kWeight) {
        reads = static_cast<int64_t>(graph_.tensor(b.tensor).consumers.size());
      } else {
        // Ops reading the base or any tensor sharing its buffer, once each.
        writes = 1;
        absl::flat_hash_set<OpId> readers(graph_.tensor(b.tensor).consumers.begin(),
                                          graph_.tensor(b.tensor).consumers.end());
        for (TensorId alias : b.aliases) {
          const OpId producer = graph_.tensor(alias).producer;
          writes += producer != kNoOp && !IsViewOp(graph_.op(producer).type) ? 1 : 0;
          readers.insert(graph_.tensor(alias).consumers.begin(), graph_.tensor(alias).consumers.end());
        }
        reads = static_cast<int64_t>(readers.size());
      }
      int64_t& access = plan_.memory_access_bytes[plan_.memories->memory[i]];
      access = SaturatingAdd(access, SaturatingMul(b.bytes, writes + reads));
    }
    return absl::OkStatus();
  }

  // The peak fits the budget but the static arena does not: move buffers (a
  // Concat's slices together).
  absl::Status Defragment() {
    PhaseTimer timer(&plan_, "defragment");
    std::vector<ArenaBuffer> lifetimes;
    for (const BufferLifetimeInfo& b : plan_.profile.buffers) {
      lifetimes.push_back({b.bytes, b.first_step, b.last_step, b.anchor, b.offset_from_anchor});
    }
    // Its placement compares each new buffer with the live ones: like a
    // greedy placement in time, and a few hundred bytes per buffer.
    MemoryCharge charge(options_.memory);
    if (IsCancelled(options_)) return absl::CancelledError("the call was cancelled");
    if (EstimatePlacementSeconds(lifetimes) > SecondsLeft(end_)) {
      fall_back_("defragment", "time_limit", "skipped");
    } else if (!charge.TryAdd(256 * static_cast<int64_t>(lifetimes.size()))) {
      fall_back_("defragment", "memory_limit", "skipped");
    } else {
      absl::StatusOr<MovingArenaPlan> moving =
          PlanArenaWithMoves(lifetimes, options_.alignment, options_.memory_budget_bytes);
      if (moving.ok()) {
        plan_.arena = std::move(moving->plan);
        plan_.moves = std::move(moving->moves);
        plan_.moved_bytes = moving->moved_bytes;
      }
    }
    return absl::OkStatus();
  }

  // Each order's TFLite-style arena and our greedy placements (Serenity's
  // first when a given order was evaluated), while time lasts for both,
  // the orders as tasks on the executor when all of them fit the phase's
  // time (PlanOrderArenas).
  // They touch only the baselines' summaries, and name their fallbacks in
  // `fallbacks`; returns the phase's milliseconds in `ms`.
  absl::Status BaselineArenas(std::vector<PhaseFallback>* fallbacks, double* ms) {
    const Clock::time_point start = Clock::now();
    const FallBack fall_back = [fallbacks](const std::string& phase, const std::string& reason,
                                           const std::string& used) {
      fallbacks->push_back({phase, reason, used});
    };
    absl::Status status =
        PlanOrderArenas(buffers_, options_, end_,
                        BaselineSummaries(&plan_.baselines, plan_.serenity.has_value() ? &*plan_.serenity : nullptr),
                        fall_back, executor_);
    *ms = MillisSince(start);
    return status;
  }

  // The plan's arenas and memories, and the baselines' arenas, as two tasks
  // on the executor: they share nothing but the read-only model, and each
  // keeps its own time caps. The reply lists the plan's fallbacks first.
  absl::Status AllArenas() {
    absl::Status plan_status, baseline_status;
    std::vector<PhaseFallback> baseline_fallbacks;
    double baseline_ms = 0;
    std::vector<std::function<void()>> tasks = {
        [&] {
          plan_status = Arenas();
          if (plan_status.ok()) plan_status = Memories();
        },
        [&] { baseline_status = BaselineArenas(&baseline_fallbacks, &baseline_ms); },
    };
    RunAll(executor_, tasks);
    RETURN_IF_ERROR(plan_status);
    RETURN_IF_ERROR(baseline_status);
    plan_.phase_ms["baseline_arenas"] += baseline_ms;
    plan_.fallbacks.insert(plan_.fallbacks.end(), baseline_fallbacks.begin(), baseline_fallbacks.end());
    return absl::OkStatus();
  }

  // Off-chip traffic of the plan's order, then of each baseline.
  absl::Status Traffic() {
    if (options_.onchip_bytes.empty()) return absl::OkStatus();
    PhaseTimer timer(&plan_, "traffic");
    const std::vector<NamedOrder> orders = BaselineOrdersByName(
        plan_.baselines, NamedOrder{plan_.serenity.has_value() ? "given" : "serenity", &plan_.order});
    return OrderTraffic(buffers_, options_, end_, orders, fall_back_, &plan_.traffic);
  }

  const Graph& graph_;
  const PlanOptions& options_;
  Executor* const executor_;
  const Clock::time_point start_;
  const double time_limit_;
  const Clock::time_point end_;
  const Clock::time_point search_end_;
  const BufferModel buffers_;
  const FallBack fall_back_;
  const PlanHints hints_;
  Plan plan_;
  // Set by StartOrder.
  bool relaxed_ = false;
  bool search_ = false;
  bool reference_ = false;
  Baseline start_baseline_ = Baseline::kFileOrder;
};

}  // namespace

BudgetFit ApplyBudget(int64_t budget_bytes, int64_t peak_bytes, int64_t arena_bytes) {
  BudgetFit fit;
  if (budget_bytes <= 0) return fit;
  fit.feasible = peak_bytes <= budget_bytes;
  fit.headroom_bytes = budget_bytes - peak_bytes;
  fit.arena_fits_budget = arena_bytes <= budget_bytes;
  return fit;
}

absl::StatusOr<BaselineReport> SummarizeBaselines(const Graph& graph, const SanitizedOptions& sanitized) {
  const PlanOptions& options = *sanitized;
  const Clock::time_point start = Clock::now();
  const Clock::time_point end = JobEnd(start, options);
  BufferModel buffers(graph, options.memory_model);
  std::vector<PhaseFallback> fallbacks;
  auto fall_back = [&](const std::string& phase, const std::string& reason, const std::string& used) {
    fallbacks.push_back({phase, reason, used});
  };
  ASSIGN_OR_RETURN(
      BaselineReport report,
      BaselineOrders(buffers, options, std::min(end, TimeAfter(start, options.time_limit_seconds / 2)), fall_back,
                     /*executor=*/nullptr));
  if (!options.score_only) {
    RETURN_IF_ERROR(PlanOrderArenas(buffers, options, end, BaselineSummaries(&report.baselines), fall_back,
                                    /*executor=*/nullptr));
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

absl::StatusOr<Plan> PlanGraph(const Graph& graph, const SanitizedOptions& options, Executor* executor) {
  return PlanRun(graph, *options, executor).Run();
}

absl::StatusOr<Plan> PlanGraph(const Graph& graph, const SanitizedOptions& options, Executor* executor,
                               const PlanHints& hints) {
  for (const std::vector<OpId>& candidate : hints.start_candidates) RETURN_IF_ERROR(CheckOrder(graph, candidate));
  return PlanRun(graph, *options, executor, hints).Run();
}

absl::StatusOr<Plan> CompletePlan(const Graph& graph, const SanitizedOptions& options, Plan scored,
                                  Executor* executor) {
  if (options->score_only) return scored;
  return PlanRun(graph, *options, executor).Complete(std::move(scored));
}

absl::StatusOr<Plan> PlanGraph(const Graph& graph, const PlanOptions& options, Executor* executor) {
  ASSIGN_OR_RETURN(SanitizedOptions sanitized, SanitizePlanOptions(graph, options));
  return PlanGraph(graph, sanitized, executor);
}

}  // namespace serenity
