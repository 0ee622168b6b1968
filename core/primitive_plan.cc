#include "core/primitive_plan.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/memory/buffer_model.h"
#include "core/memory/simulator.h"
#include "core/plan_proto.h"
#include "core/planner.h"
#include "core/primitive_baselines.h"
#include "core/schedule/layout_conversions.h"
#include "core/schedule/primitive_weights.h"
#include "core/schedule/time_frontier.h"
#include "core/schedule/time_search.h"
#include "core/util/deadline.h"
#include "core/util/memory_account.h"
#include "core/util/status_macros.h"

namespace serenity {
namespace {

using Clock = std::chrono::steady_clock;

// Plans `order` of `chosen` (the graph with the chosen workspaces) as a
// given order, with the caller's options otherwise.
absl::StatusOr<Plan> PlanChosenOrder(const Graph& chosen, const SanitizedOptions& options, std::vector<OpId> order,
                                     double seconds, Executor* executor) {
  PlanOptions given = *options;
  given.given_order = std::move(order);
  given.pareto = false;  // (they search orders; this plan is of one)
  given.max_time_us = 0;
  given.time_limit_seconds = std::max(seconds, 1e-3);
  ASSIGN_OR_RETURN(SanitizedOptions sanitized, SanitizePlanOptions(chosen, std::move(given)));
  return PlanGraph(chosen, sanitized, executor);
}

// The chosen alternative of every op with alternatives, in `order`, with
// the conversions of its inputs, onto `out`; returns the conversions' total
// time.
double AppendChosen(const Graph& graph, const LayoutConversions& conversions, const std::vector<OpId>& order,
                    const std::vector<int>& choice, google::protobuf::RepeatedPtrField<v1::ChosenPrimitive>* out) {
  double converting = 0;
  for (OpId u : order) {
    if (choice[u] < 0) continue;
    const Primitive& p = graph.op(u).alternatives[choice[u]];
    v1::ChosenPrimitive* chosen = out->Add();
    chosen->set_op(graph.op(u).name);
    chosen->set_name(p.name);
    chosen->set_time_us(p.time_us);
    chosen->set_workspace_bytes(p.workspace_bytes);
    chosen->set_layout(p.layout);
    chosen->set_weight_bytes(p.weight_bytes);
    const int to = conversions.LayoutOf(u, choice[u]);
    for (const LayoutConversions::Input& input : conversions.inputs(u)) {
      const int from = conversions.LayoutOf(input.producer, choice[input.producer]);
      if (to == 0 || from == 0 || from == to) continue;
      const ConversionCost cost = CostOf(conversions.transform(from, to), graph.tensor(input.tensor).bytes);
      v1::ChosenTransform* transform = chosen->add_transforms();
      transform->set_tensor(graph.tensor(input.tensor).name);
      transform->set_from_layout(conversions.LayoutName(from));
      transform->set_to_layout(conversions.LayoutName(to));
      transform->set_time_us(cost.time_us);
      transform->set_workspace_bytes(cost.workspace_bytes);
      converting += cost.time_us;
    }
  }
  return converting;
}

void FillTimeReport(const Graph& graph, const std::vector<OpId>& order, const std::vector<int>& choice,
                    v1::TimeReport* out) {
  const LayoutConversions conversions(graph);
  out->set_transform_time_us(AppendChosen(graph, conversions, order, choice, out->mutable_primitives()));
  out->set_time_us(ChoiceTime(graph, choice));
  out->set_fastest_everywhere_us(ChoiceTime(graph, FastestChoices(graph)));
  out->set_least_workspace_everywhere_us(ChoiceTime(graph, LeastWorkspaceChoices(graph)));
}

// Plan.time.pareto: the frontier's points (thinned to
// options.max_pareto_points), each planned with a share of the time left
// for its arena.
absl::Status AddFrontier(const Graph& graph, const SanitizedOptions& options, const TimeFrontier& frontier,
                         const std::function<double()>& seconds_left, Executor* executor, v1::TimeReport* time) {
  const LayoutConversions conversions(graph);
  std::vector<FrontierPoint> points = ThinFrontier(frontier.points, options->max_pareto_points);
  time->set_pareto_thinned(points.size() < frontier.points.size());
  time->set_pareto_proven(frontier.proven);
  for (size_t k = 0; k < points.size(); ++k) {
    const FrontierPoint& point = points[k];
    v1::ParetoPoint* out = time->add_pareto();
    out->set_peak_bytes(point.peak_bytes);
    out->set_time_us(point.selection.time_us);
    for (OpId u : point.selection.order) out->add_order_names(graph.op(u).name);
    AppendChosen(graph, conversions, point.selection.order, point.selection.choice, out->mutable_primitives());
    // Each point's arena while time is left (and the call is wanted): the
    // points after that have none.
    const double left = seconds_left();
    if (left <= 0 || (options->cancelled != nullptr && options->cancelled->load(std::memory_order_relaxed))) {
      continue;
    }
    const Graph chosen = ChosenGraph(graph, point.selection.choice);
    ASSIGN_OR_RETURN(Plan plan, PlanChosenOrder(chosen, options, point.selection.order,
                                                left / static_cast<double>(2 * (points.size() - k)), executor));
    *out->mutable_arena() = PlanToProto(chosen, plan, options).arena();
  }
  return absl::OkStatus();
}

// The choice of least peak for `order`, whose choices all exceed `budget`:
// the least budget above it at which SelectForOrder finds one (a binary
// search, until `deadline`), from `fallback`'s peak down (`fallback` itself
// when nothing lower is found: with layouts or transformed weights, the
// least workspaces need not give the least peak).
PrimitiveSelection LeastPeakChoiceForOrder(const BufferModel& buffers, const std::vector<OpId>& order,
                                           const std::vector<int>& fallback, int64_t budget,
                                           Clock::time_point deadline) {
  const Graph& graph = buffers.graph();
  PrimitiveSelection best;
  best.order = order;
  best.choice = fallback;
  best.workspace_bytes = StepWorkspaces(graph, fallback);
  best.time_us = ChoiceTime(graph, fallback);
  int64_t high = PeakOf(BufferModel(ChosenGraph(graph, fallback), buffers.model()), order);
  int64_t low = budget;  // nothing fits here
  while (low + 1 < high && Clock::now() < deadline) {
    const int64_t middle = low + (high - low) / 2;
    std::optional<PrimitiveSelection> fits = SelectForOrder(buffers, order, middle, deadline);
    if (!fits.has_value()) {
      low = middle;
      continue;
    }
    high = PeakOf(BufferModel(ChosenGraph(graph, fits->choice), buffers.model()), order);
    best = *std::move(fits);
  }
  return best;
}

// About the bytes of one copy of `graph` (Graph::WithWorkspaces): its ops
// with their alternatives and names, and its tensors.
int64_t GraphCopyBytes(const Graph& graph) {
  int64_t bytes = 0;
  for (const Op& op : graph.ops()) {
    bytes += static_cast<int64_t>(
        sizeof(Op) + op.name.size() + op.type.size() +
        4 * (op.inputs.size() + op.outputs.size() + op.predecessors.size() + op.successors.size()));
    for (const Primitive& p : op.alternatives) {
      bytes += static_cast<int64_t>(sizeof(Primitive) + p.name.size() + p.layout.size());
    }
  }
  for (const Tensor& t : graph.tensors()) {
    bytes += static_cast<int64_t>(sizeof(Tensor) + t.name.size() + 8 * t.shape.size() + 4 * t.consumers.size());
  }
  return bytes;
}

}  // namespace

absl::StatusOr<v1::Plan> PlanForTime(const Graph& graph, const SanitizedOptions& options, Executor* executor) {
  const Clock::time_point start = Clock::now();
  const int64_t budget = options->memory_budget_bytes;
  // The copies of the graph with chosen workspaces alive at once (the
  // least-workspace one, the chosen one, and the searches' own: about six).
  MemoryCharge copies(options->memory);
  const int64_t copy_bytes = 6 * GraphCopyBytes(graph);
  if (!copies.TryAdd(copy_bytes)) {
    return MemoryLimitError(options->memory, copy_bytes, "the copies of the graph primitive selection holds");
  }
  // What every budget must allow: each op's least-workspace alternative,
  // in the order of least peak (or the given order).
  const std::vector<int> least_choice = LeastWorkspaceChoices(graph);
  const Graph least = graph.WithWorkspaces(WorkspacesOf(graph, least_choice));
  // The time limit: up to 30% for that order (60% with a budget to fit),
  // 80% of the rest for the primitives, the rest for planning the chosen
  // order (its steps, arena and the least peak with those primitives, for
  // comparison).
  const double limit = options->time_limit_seconds;
  const auto seconds_left = [&] {
    double left = limit - std::chrono::duration<double>(Clock::now() - start).count();
    if (options->deadline != Clock::time_point::max()) {
      left = std::min(left, std::chrono::duration<double>(options->deadline - Clock::now()).count());
    }
    return left;
  };
  std::vector<OpId> start_order = options->given_order;
  // Proven: no order fits the budget even with the least workspaces.
  bool none_fits = false;
  if (start_order.empty()) {
    // With a budget, the search stops at the first order that fits it
    // (objective fit): any such order lets every op run. With transformed
    // weights, the least peak: the room it leaves is what larger weights
    // need at every step.
    const bool weights_active = PrimitiveWeights(graph, options->memory_model.count_weights).active();
    PlanOptions least_options = *options;
    least_options.objective =
        options->objective == Objective::kTime && !weights_active ? Objective::kFit : Objective::kMinPeak;
    least_options.score_only = true;
    // (Up to 60% of the time: the fit search ends at the first order that
    // fits, so a hard graph gets the time and an easy one gives it back.)
    least_options.time_limit_seconds = std::max((options->objective == Objective::kTime ? 0.6 : 0.3) * limit, 1e-3);
    least_options.pareto = false;
    least_options.max_time_us = 0;
    ASSIGN_OR_RETURN(SanitizedOptions score, SanitizePlanOptions(least, std::move(least_options)));
    ASSIGN_OR_RETURN(Plan least_plan, PlanGraph(least, score, executor));
    // (Every choice's weights are at least the least ones: with
    // transformed weights counted, the bound rises by their least extra.)
    const int64_t least_weights = PrimitiveWeights(graph, options->memory_model.count_weights).least_total();
    none_fits = options->objective == Objective::kTime && least_plan.lower_bound_bytes + least_weights > budget;
    start_order = std::move(least_plan.order);
  }
  const BufferModel buffers(graph, options->memory_model);
  const auto limits_for = [&](double share) {
    SearchOptions limits;
    limits.time_limit_seconds = std::max(share * seconds_left(), 1e-6);
    limits.max_states = options->max_search_states;
    limits.cancelled = options->cancelled;
    limits.memory = options->memory;
    return limits;
  };
  // The frontier (pareto), or its part within the time cap (max_time_us).
  std::optional<TimeFrontier> frontier;
  if (options->pareto || options->max_time_us > 0) {
    const double cap = options->pareto ? std::numeric_limits<double>::infinity() : options->max_time_us;
    frontier =
        SweepTimeFrontier(buffers, start_order, limits_for(options->objective == Objective::kTime ? 0.4 : 0.8), cap);
  }

  PrimitiveSelection selection;
  v1::Certificate certificate = v1::CERTIFICATE_BASELINE;
  double lower_bound = 0;
  int64_t states = frontier.has_value() ? frontier->states : 0;
  if (options->objective == Objective::kTime) {
    TimeSearchResult result;
    if (!options->given_order.empty()) {
      // The given order's primitives: the fastest that fit at each step
      // (with layouts or weights, the least time of those that fit, within
      // half the time left).
      std::optional<PrimitiveSelection> start_choice =
          SelectForOrder(buffers, start_order, budget, DeadlineIn(std::max(0.5 * seconds_left(), 1e-3)));
      result.feasible = start_choice.has_value();
      result.proven = true;  // (for this order)
      if (start_choice.has_value()) {
        result.selection = *start_choice;
        result.lower_bound_us = start_choice->time_us;
      }
    } else if (none_fits) {
      result.proven = true;
    } else {
      // The start order may not fit when its search stopped short of the
      // least peak: the search may still find one that does.
      result = MinimizeTime(buffers, start_order, budget, limits_for(0.8));
    }
    states += result.states;
    if (result.feasible) {
      selection = std::move(result.selection);
      lower_bound = result.lower_bound_us;
      // A given order's primitives are the best for it, not a search's.
      certificate = !options->given_order.empty() ? v1::CERTIFICATE_BASELINE
                    : result.proven               ? v1::CERTIFICATE_OPTIMAL
                                                  : v1::CERTIFICATE_BEST_FOUND;
    } else {
      // Nothing fits (proven by the least-peak search or the time search;
      // with a given order, that order does not fit), or the search found
      // nothing before its limit: the start order with the choice of least
      // peak for it (feasible false), certificate baseline when proven,
      // best_found when not.
      selection = LeastPeakChoiceForOrder(buffers, start_order, least_choice, budget,
                                          DeadlineIn(std::max(0.5 * seconds_left(), 1e-3)));
      lower_bound = std::numeric_limits<double>::infinity();  // (its own time, below)
      certificate = result.proven ? v1::CERTIFICATE_BASELINE : v1::CERTIFICATE_BEST_FOUND;
    }
  } else {
    // The least peak within the time cap, or the frontier's least peak.
    const double cap = options->max_time_us > 0 ? options->max_time_us : std::numeric_limits<double>::infinity();
    const FrontierPoint* least_peak = nullptr;
    for (const FrontierPoint& point : frontier->points) {
      if (point.selection.time_us <= cap) {
        least_peak = &point;
        break;
      }
    }
    if (least_peak == nullptr) {
      double fastest = 0;
      for (const Op& op : graph.ops()) fastest += FastestTime(op);
      if (fastest > cap) {
        return absl::FailedPreconditionError(absl::StrCat("even the fastest alternative of every op takes ", fastest,
                                                          " us in all, more than max_time_us (", cap, ")"));
      }
      return absl::DeadlineExceededError(
          std::isinf(cap) ? std::string("no plan was found before the time limit")
                          : absl::StrCat("no plan within max_time_us (", cap, ") was found before the time limit"));
    }
    selection = least_peak->selection;
    lower_bound = selection.time_us;
    certificate = frontier->proven ? v1::CERTIFICATE_OPTIMAL : v1::CERTIFICATE_BEST_FOUND;
  }
  const Graph chosen = ChosenGraph(graph, selection.choice);
  // (With the frontier, half of what is left: its points get the rest.)
  ASSIGN_OR_RETURN(Plan plan, PlanChosenOrder(chosen, options, selection.order,
                                              options->pareto ? 0.5 * seconds_left() : seconds_left(), executor));
  plan.algorithm = options->given_order.empty() ? "time" : "given";
  v1::Plan out = PlanToProto(chosen, plan, options);
  v1::TimeReport* time = out.mutable_time();
  FillTimeReport(graph, plan.order, selection.choice, time);
  time->set_lower_bound_us(std::min(lower_bound, time->time_us()));
  time->set_certificate(certificate);
  time->set_states(states);
  time->set_max_time_us(options->max_time_us);
  if (frontier.has_value() && options->pareto) {
    RETURN_IF_ERROR(AddFrontier(graph, options, *frontier, seconds_left, executor, time));
  }
  // The summed footprint, and the baselines when asked (in time of their
  // own, after the plan's).
  RETURN_IF_ERROR(AddPrimitiveBaselines(graph, options, selection.choice,
                                        kPrimitiveBaselinesShare * options->time_limit_seconds, executor, time));
  return out;
}

}  // namespace serenity
