#include "core/primitive_baselines.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/memory/buffer_model.h"
#include "core/memory/simulator.h"
#include "core/plan_proto.h"
#include "core/planner.h"
#include "core/schedule/baselines.h"
#include "core/schedule/layout_conversions.h"
#include "core/schedule/primitive_weights.h"
#include "core/schedule/summed_footprint.h"
#include "core/schedule/time_search.h"
#include "core/util/deadline.h"
#include "core/util/status_macros.h"

namespace serenity {
namespace {

using Clock = std::chrono::steady_clock;

// The least peak found for one choice's workspaces, with its order.
struct LeastPeak {
  std::vector<OpId> order;
  int64_t peak_bytes = 0;
  v1::Certificate certificate = v1::CERTIFICATE_BASELINE;
};

// What a choice's least peak depends on: its step workspaces and (when
// weights are counted) the resident bytes each op's weights add.
using ChoiceKey = std::pair<std::vector<int64_t>, std::vector<int64_t>>;

ChoiceKey KeyOf(const Graph& graph, const PrimitiveWeights& weights, const std::vector<int>& choice) {
  std::vector<int64_t> extras(weights.active() ? graph.num_ops() : 0);
  for (size_t u = 0; u < extras.size(); ++u) extras[u] = weights.Extra(static_cast<OpId>(u), choice[u]);
  return {StepWorkspaces(graph, choice), std::move(extras)};
}

// Computes the baselines of one request: the least-peak searches share the
// time (each gets the time left over the searches still to run) and are
// remembered by workspaces and weights, so that choices with the same are
// searched once. Every peak is of the graph as the choice runs it
// (ChosenGraph: its workspaces and, counted, its weights).
class BaselineRunner {
 public:
  BaselineRunner(const Graph& graph, const SanitizedOptions& options, double seconds, Executor* executor)
      : graph_(graph),
        options_(options),
        executor_(executor),
        weights_(graph, options->memory_model.count_weights),
        buffers_(graph, options->memory_model),
        budget_(options->memory_budget_bytes > 0 ? options->memory_budget_bytes : std::numeric_limits<int64_t>::max()),
        deadline_(std::min(options->deadline, TimeAfter(Clock::now(), seconds))),
        searches_left_(1) {}

  // The searches still to run (the least-peak ones of workspaces not
  // searched yet, and Limits' callers).
  void set_searches(int searches) { searches_left_ = searches; }

  const BufferModel& buffers() const { return buffers_; }
  ChoiceKey Key(const std::vector<int>& choice) const { return KeyOf(graph_, weights_, choice); }
  int64_t budget() const { return budget_; }

  // The time of the next of the searches still to run.
  double NextShare() {
    const double left = std::chrono::duration<double>(deadline_ - Clock::now()).count();
    const double share = std::max(left, 0.0) / std::max(searches_left_, 1);
    searches_left_ = std::max(searches_left_ - 1, 0);
    return std::max(share, 1e-3);
  }

  // The least peak PlanGraph finds (objective min_peak) for `choice`'s
  // workspaces and weights, in its share of the time.
  absl::StatusOr<LeastPeak> Search(const std::vector<int>& choice) {
    ChoiceKey key = Key(choice);
    auto found = searched_.find(key);
    if (found != searched_.end()) return found->second;
    const Graph chosen = ChosenGraph(graph_, choice);
    PlanOptions search = *options_;
    search.objective = Objective::kMinPeak;
    search.score_only = true;
    search.given_order.clear();
    search.pareto = false;
    search.max_time_us = 0;
    search.primitive_baselines = false;
    search.budgets.clear();
    search.time_limit_seconds = NextShare();
    ASSIGN_OR_RETURN(SanitizedOptions sanitized, SanitizePlanOptions(chosen, std::move(search)));
    ASSIGN_OR_RETURN(Plan plan, PlanGraph(chosen, sanitized, executor_));
    LeastPeak out{std::move(plan.order), plan.profile.peak_bytes, CertificateToProto(plan.certificate)};
    searched_.emplace(std::move(key), out);
    return out;
  }

  // The peak of `order` with `choice`'s workspaces and weights.
  int64_t PeakOfOrder(const std::vector<int>& choice, const std::vector<OpId>& order) const {
    return PeakOf(BufferModel(ChosenGraph(graph_, choice), options_->memory_model), order);
  }

  SearchOptions Limits() {
    SearchOptions limits;
    limits.time_limit_seconds = NextShare();
    limits.max_states = options_->max_search_states;
    limits.cancelled = options_->cancelled;
    limits.memory = options_->memory;
    return limits;
  }

  Clock::time_point deadline() const { return deadline_; }

 private:
  const Graph& graph_;
  const SanitizedOptions& options_;
  Executor* executor_;
  const PrimitiveWeights weights_;
  const BufferModel buffers_;
  const int64_t budget_;
  const Clock::time_point deadline_;
  int searches_left_;
  std::map<ChoiceKey, LeastPeak> searched_;
};

}  // namespace

std::vector<int> OneChoices(const Graph& graph, absl::string_view name) {
  std::vector<int> out = LeastWorkspaceChoices(graph);
  for (OpId u = 0; u < graph.num_ops(); ++u) {
    const std::vector<Primitive>& alternatives = graph.op(u).alternatives;
    for (int a = 0; a < static_cast<int>(alternatives.size()); ++a) {
      if (alternatives[a].name == name) out[u] = a;
    }
  }
  return out;
}

std::vector<std::string> PrimitiveNames(const Graph& graph) {
  std::vector<std::string> names;
  for (const Op& op : graph.ops()) {
    for (const Primitive& p : op.alternatives) names.push_back(p.name);
  }
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

absl::Status AddPrimitiveBaselines(const Graph& graph, const SanitizedOptions& options, const std::vector<int>& choice,
                                   double seconds, Executor* executor, v1::TimeReport* time) {
  const bool count_weights = options->memory_model.count_weights;
  time->set_summed_footprint_bytes(SummedFootprintBytes(graph, choice, count_weights));
  if (!options->primitive_baselines) return absl::OkStatus();
  const std::vector<std::string> names = PrimitiveNames(graph);
  BaselineRunner runner(graph, options, seconds, executor);
  const int64_t budget = runner.budget();
  // The choices without an order of their own, the summed-footprint
  // model's optimum among them (its knapsack in up to a tenth of the time).
  const std::vector<int> least_choice = LeastWorkspaceChoices(graph);
  std::vector<std::pair<std::string, std::vector<int>>> searched = {{"fastest", FastestChoices(graph)},
                                                                    {"least_workspace", least_choice}};
  for (const std::string& name : names) searched.emplace_back(absl::StrCat("one:", name), OneChoices(graph, name));
  SummedFootprintLimits limits;
  limits.deadline = std::min(runner.deadline(), TimeAfter(Clock::now(), 0.1 * seconds));
  limits.memory = options->memory;
  const SummedFootprintChoice summed = LeastTimeWithinFootprint(graph, budget, count_weights, limits);
  // The time is shared by the least-peak searches of distinct workspaces
  // and primitives first's downgrading.
  std::set<ChoiceKey> distinct = {runner.Key(summed.choice)};
  for (const auto& [name, chosen] : searched) distinct.insert(runner.Key(chosen));
  runner.set_searches(static_cast<int>(distinct.size()) + 1);
  const auto add = [&](const std::string& name, const std::vector<int>& chosen, int64_t peak,
                       v1::Certificate certificate) {
    v1::PrimitiveBaseline* out = time->add_baselines();
    out->set_name(name);
    out->set_time_us(ChoiceTime(graph, chosen));
    out->set_peak_bytes(peak);
    out->set_certificate(certificate);
    out->set_fits(peak <= budget);
    out->set_summed_footprint_bytes(SummedFootprintBytes(graph, chosen, count_weights));
  };
  // A choice with no order of its own: its least peak.
  const auto add_searched = [&](const std::string& name, const std::vector<int>& chosen) -> absl::Status {
    ASSIGN_OR_RETURN(LeastPeak least, runner.Search(chosen));
    add(name, chosen, least.peak_bytes, least.certificate);
    return absl::OkStatus();
  };
  // An order with the fastest alternative that fits each of its steps; when
  // one step fits none, the least-workspace alternatives (above the budget),
  // whose peak then has the certificate of the search that found the order
  // (`not_fitting`; baseline for an order given).
  const auto add_for_order = [&](const std::string& name, const std::vector<OpId>& order, v1::Certificate not_fitting) {
    std::optional<PrimitiveSelection> selection = SelectForOrder(runner.buffers(), order, budget);
    const std::vector<int>& chosen = selection.has_value() ? selection->choice : least_choice;
    add(name, chosen, runner.PeakOfOrder(chosen, order),
        selection.has_value() ? v1::CERTIFICATE_BASELINE : not_fitting);
  };

  for (const auto& [name, chosen] : searched) RETURN_IF_ERROR(add_searched(name, chosen));
  // Order first: the least-peak order of the least workspaces (searched
  // above), then its best primitives.
  ASSIGN_OR_RETURN(LeastPeak least, runner.Search(least_choice));
  add_for_order("order_first", least.order, least.certificate);
  // Primitives first: the fastest alternatives, downgraded until their least
  // peak fits; when that finds nothing, it ends at the least workspaces.
  if (std::optional<PrimitiveSelection> s = DowngradeUntilFits(runner.buffers(), budget, runner.Limits())) {
    add("primitives_first", s->choice, runner.PeakOfOrder(s->choice, s->order), v1::CERTIFICATE_BASELINE);
  } else {
    add("primitives_first", least_choice, least.peak_bytes, least.certificate);
  }
  // The file order, with its best choice (SelectForOrder: exact for that
  // order up to its layout states' cap).
  add_for_order("file_order", FileOrder(graph), v1::CERTIFICATE_BASELINE);
  // The summed-footprint model's optimum, then its least peak in ours.
  RETURN_IF_ERROR(add_searched("summed_footprint", summed.choice));
  // (Its knapsack stopped short of a proof: its time may not be least.)
  if (!summed.proven) time->mutable_baselines()->rbegin()->set_certificate(v1::CERTIFICATE_BEST_FOUND);
  return absl::OkStatus();
}

}  // namespace serenity
