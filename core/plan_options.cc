#include "core/plan_options.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/util/status_macros.h"

namespace serenity {
namespace {

struct AlgorithmInfo {
  Algorithm algorithm;
  const char* name;
  std::optional<Baseline> baseline;
};

// Every algorithm, in the enum's order: the one list of names that requests
// are parsed with, plans are labelled with and errors list. An algorithm
// that is one baseline's order is named as that baseline (BaselineName).
const AlgorithmInfo kAlgorithms[] = {
    {Algorithm::kAuto, "auto", std::nullopt},
    {Algorithm::kRelaxed, "relaxed", std::nullopt},
    {Algorithm::kDp, "dp", std::nullopt},
    {Algorithm::kDpDc, "dp+dc", std::nullopt},
    {Algorithm::kDpDcAsb, "dp+dc+asb", std::nullopt},
    {Algorithm::kExhaustive, "exhaustive", std::nullopt},
    {Algorithm::kBestFirst, "best_first", std::nullopt},
    {Algorithm::kBaseline, "baseline", std::nullopt},
    {Algorithm::kFileOrder, nullptr, Baseline::kFileOrder},
    {Algorithm::kKahn, nullptr, Baseline::kKahn},
    {Algorithm::kGreedy, nullptr, Baseline::kGreedy},
    {Algorithm::kInductor, nullptr, Baseline::kInductor},
    {Algorithm::kXla, nullptr, Baseline::kXla},
};

struct ObjectiveInfo {
  Objective objective;
  const char* name;
};

const ObjectiveInfo kObjectives[] = {
    {Objective::kMinPeak, "min_peak"},
    {Objective::kFit, "fit"},
    {Objective::kTime, "time"},
};

const AlgorithmInfo& Info(Algorithm algorithm) { return kAlgorithms[static_cast<size_t>(algorithm)]; }

}  // namespace

const char* AlgorithmName(Algorithm algorithm) {
  const AlgorithmInfo& info = Info(algorithm);
  return info.baseline.has_value() ? BaselineName(*info.baseline) : info.name;
}

std::optional<Baseline> AlgorithmBaseline(Algorithm algorithm) { return Info(algorithm).baseline; }

const std::vector<std::string>& PlanAlgorithms() {
  static const std::vector<std::string>* const kNames = [] {
    auto* names = new std::vector<std::string>;
    for (const AlgorithmInfo& info : kAlgorithms) names->push_back(AlgorithmName(info.algorithm));
    return names;
  }();
  return *kNames;
}

absl::StatusOr<Algorithm> ParseAlgorithm(absl::string_view name) {
  for (const AlgorithmInfo& info : kAlgorithms) {
    if (name == AlgorithmName(info.algorithm)) return info.algorithm;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown algorithm '", name, "'; choose one of: ", absl::StrJoin(PlanAlgorithms(), ", ")));
}

const char* ObjectiveName(Objective objective) { return kObjectives[static_cast<size_t>(objective)].name; }

absl::StatusOr<Objective> ParseObjective(absl::string_view name) {
  if (name == "peak") return Objective::kMinPeak;  // as issue 19 writes it: --objective peak --max-time-us T
  std::vector<std::string> names;
  for (const ObjectiveInfo& info : kObjectives) {
    if (name == info.name) return info.objective;
    names.push_back(info.name);
  }
  const std::string last = names.back();
  names.pop_back();
  return absl::InvalidArgumentError(
      absl::StrCat("unknown objective '", name, "'; choose ", absl::StrJoin(names, ", "), " or ", last));
}

const char* RewriteFormName(RewriteForm form) { return form == RewriteForm::kAccumulate ? "accumulate" : "standard"; }

absl::StatusOr<RewriteForm> ParseRewriteForm(absl::string_view name) {
  for (RewriteForm form : {RewriteForm::kStandard, RewriteForm::kAccumulate}) {
    if (name == RewriteFormName(form)) return form;
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown rewrite form '", name, "'; choose standard or accumulate"));
}

namespace {

// The memories and pins of ValidatePlanOptions.
absl::Status ValidateMemories(const PlanOptions& options) {
  if (options.memories.empty()) {
    if (!options.pins.empty()) return absl::InvalidArgumentError("pins need memories to pin buffers to");
    return absl::OkStatus();
  }
  if (options.memory_budget_bytes > 0) {
    return absl::InvalidArgumentError(
        "with memories, their capacities are the budgets: give no memory budget (--budget) as well");
  }
  if (options.memory_model.concat_in_place) {
    return absl::InvalidArgumentError("memories cannot be combined with concat_in_place yet");
  }
  RETURN_IF_ERROR(ValidateMemorySpaces(options.memories));
  absl::flat_hash_set<std::string> names;
  for (const MemorySpace& m : options.memories) names.insert(m.name);
  if (options.pins.size() > kMaxPins) {
    return absl::InvalidArgumentError(absl::StrCat(options.pins.size(), " pins: a plan takes at most ", kMaxPins));
  }
  absl::flat_hash_set<std::string> pinned;
  for (const TensorPin& pin : options.pins) {
    if (!names.contains(pin.memory)) {
      return absl::InvalidArgumentError(
          absl::StrCat("tensor '", pin.tensor, "' is pinned to memory '", pin.memory, "', which is not given"));
    }
    if (!pinned.insert(pin.tensor).second) {
      return absl::InvalidArgumentError(absl::StrCat("tensor '", pin.tensor, "' is pinned twice"));
    }
    if (pin.offset < -1) {
      return absl::InvalidArgumentError(
          absl::StrCat("tensor '", pin.tensor, "' is pinned at a negative offset (", pin.offset, ")"));
    }
  }
  return absl::OkStatus();
}

// Several budgets (issue 19; core/budget_levels.h): objective time, in
// place of one budget, and none of what plans one level only.
absl::Status ValidateBudgets(const PlanOptions& options) {
  if (options.budgets.empty()) return absl::OkStatus();
  if (options.objective != Objective::kTime) {
    return absl::InvalidArgumentError(
        absl::StrCat("several budgets (--budgets) need objective time, not '", ObjectiveName(options.objective), "'"));
  }
  if (options.memory_budget_bytes != 0) {
    return absl::InvalidArgumentError("give several budgets (--budgets) or one (--budget), not both");
  }
  if (options.budgets.size() > kMaxBudgets) {
    return absl::InvalidArgumentError(
        absl::StrCat(options.budgets.size(), " budgets: a request takes at most ", kMaxBudgets));
  }
  absl::flat_hash_set<int64_t> seen;
  for (int64_t budget : options.budgets) {
    if (budget <= 0) return absl::InvalidArgumentError(absl::StrCat("budgets must be positive, not ", budget));
    if (!seen.insert(budget).second) {
      return absl::InvalidArgumentError(absl::StrCat("budget ", budget, " is given twice"));
    }
  }
  const char* other = options.pareto                                              ? "pareto"
                      : options.max_time_us > 0                                   ? "max_time_us"
                      : !options.given_order.empty()                              ? "a given order (--order)"
                      : options.rewrite                                           ? "rewrite"
                      : !options.levels.empty() || !options.switch_points.empty() ? "sparsity levels"
                      : !options.memories.empty()                                 ? "memories"
                                                                                  : nullptr;
  if (other != nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("several budgets (--budgets) cannot be combined with ", other));
  }
  return absl::OkStatus();
}

// Objective time, pareto and max_time_us (issue 19): what they need and
// what they do not combine with yet.
absl::Status ValidateTimeObjective(const PlanOptions& options) {
  if (options.max_pareto_points < 1) return absl::InvalidArgumentError("max_pareto_points must be at least 1");
  if (!(options.max_time_us >= 0) || std::isinf(options.max_time_us)) {
    return absl::InvalidArgumentError("max_time_us must be a finite number >= 0");
  }
  if (!AsksForTime(options)) return absl::OkStatus();
  if ((options.pareto || options.max_time_us > 0) && !options.given_order.empty()) {
    return absl::InvalidArgumentError(
        "pareto and max_time_us search orders: they cannot be combined with a given order");
  }
  if (options.max_time_us > 0 && options.objective != Objective::kMinPeak) {
    return absl::InvalidArgumentError(absl::StrCat("max_time_us asks for the least peak within a time: objective '",
                                                   ObjectiveName(options.objective), "' does not apply"));
  }
  if (!options.memories.empty()) {
    return absl::InvalidArgumentError("primitive selection cannot be combined with memories yet");
  }
  if (options.objective == Objective::kTime && options.memory_budget_bytes <= 0 && options.budgets.empty()) {
    return absl::InvalidArgumentError(
        "objective time needs a memory budget (--budget or --budgets): the least time is that of the fastest primitive "
        "everywhere otherwise");
  }
  if (options.rewrite) return absl::InvalidArgumentError("primitive selection cannot be combined with rewrite yet");
  if (!options.levels.empty() || !options.switch_points.empty()) {
    return absl::InvalidArgumentError("primitive selection cannot be combined with sparsity levels yet");
  }
  if (options.algorithm != Algorithm::kAuto) {
    return absl::InvalidArgumentError(absl::StrCat("primitive selection runs its own search: algorithm '",
                                                   AlgorithmName(options.algorithm), "' does not apply"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidatePlanOptions(const PlanOptions& options) {
  if (options.alignment < 1) return absl::InvalidArgumentError("alignment must be at least 1 byte");
  if (options.objective == Objective::kFit && options.memory_budget_bytes <= 0) {
    return absl::InvalidArgumentError("objective fit needs a memory budget");
  }
  RETURN_IF_ERROR(ValidateBudgets(options));
  RETURN_IF_ERROR(ValidateTimeObjective(options));
  if (options.memory_budget_bytes < 0) return absl::InvalidArgumentError("memory budget must not be negative");
  if (options.max_search_states < 1) return absl::InvalidArgumentError("max_search_states must be at least 1");
  for (int64_t onchip : options.onchip_bytes) {
    if (onchip <= 0) return absl::InvalidArgumentError("on-chip sizes must be positive");
  }
  if (!(options.finish_seconds >= 0)) return absl::InvalidArgumentError("finish_seconds must not be negative");
  if (options.step_time_limit_seconds <= 0) {
    return absl::InvalidArgumentError("the per-step time limit must be positive");
  }
  return ValidateMemories(options);
}

bool AsksForTime(const PlanOptions& options) {
  return options.objective == Objective::kTime || options.pareto || options.max_time_us > 0;
}

absl::Status GivenOrderWithRewriteError() {
  return absl::InvalidArgumentError(
      "a given order (--order) cannot be combined with rewrite: it names the ops of the graph before rewriting, "
      "and the plan is for the rewritten graph");
}

double TimeLimitOrDefault(double seconds) { return seconds > 0 ? seconds : kDefaultTimeLimitSeconds; }

void SanitizedOptions::set_time_limit_seconds(double seconds) {
  options_.time_limit_seconds = TimeLimitOrDefault(seconds);
}

void SanitizedOptions::CapMaxSearchStates(int64_t cap) {
  options_.max_search_states = std::min(options_.max_search_states, std::max<int64_t>(1, cap));
}

absl::StatusOr<SanitizedOptions> SanitizePlanOptions(const Graph& graph, PlanOptions options) {
  RETURN_IF_ERROR(ValidatePlanOptions(options));
  if (options.rewrite && !options.given_order.empty()) return GivenOrderWithRewriteError();
  if (!options.rewrite && options.rewrite_form != RewriteForm::kStandard) {
    return absl::InvalidArgumentError("a rewrite form (--rewrite-form) applies only with rewrite (--rewrite)");
  }
  if (options.rewrite && (!options.levels.empty() || !options.switch_points.empty())) {
    // The sparsity report is for the graph as given; the rewritten graph's
    // weights are slices, which the levels do not name.
    return absl::InvalidArgumentError("rewrite and sparsity levels cannot be combined yet: plan them separately");
  }
  if (options.rewrite && !options.pins.empty()) {
    return absl::InvalidArgumentError(
        "pins cannot be combined with rewrite: they name tensors of the graph as given, which rewriting may remove");
  }
  if (!options.given_order.empty()) RETURN_IF_ERROR(CheckOrder(graph, options.given_order));
  RETURN_IF_ERROR(CheckSparsityOptions(graph, options.levels, options.switch_points));
  for (const TensorPin& pin : options.pins) {
    if (!graph.FindTensor(pin.tensor).has_value()) {
      return absl::InvalidArgumentError(absl::StrCat("pinned tensor '", pin.tensor, "' is not a tensor of the graph"));
    }
  }
  if (!options.memories.empty() && options.onchip_bytes.empty()) {
    options.onchip_bytes.push_back(options.memories.front().capacity_bytes);
  }
  options.time_limit_seconds = TimeLimitOrDefault(options.time_limit_seconds);
  return SanitizedOptions(std::move(options));
}

}  // namespace serenity
