#include "core/primitive_plan.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <utility>
#include <vector>

#include "core/memory/buffer_model.h"
#include "core/plan_proto.h"
#include "core/planner.h"
#include "core/schedule/time_search.h"
#include "core/util/status_macros.h"

namespace serenity {
namespace {

using Clock = std::chrono::steady_clock;

// Per op with alternatives: the index of its least-workspace one (ties: the
// faster, then the first); -1 for the others.
std::vector<int> LeastWorkspaceChoice(const Graph& graph) {
  std::vector<int> out(graph.num_ops(), -1);
  for (OpId u = 0; u < graph.num_ops(); ++u) {
    const std::vector<Primitive>& alternatives = graph.op(u).alternatives;
    for (int a = 0; a < static_cast<int>(alternatives.size()); ++a) {
      const int b = out[u];
      if (b < 0 || alternatives[a].workspace_bytes < alternatives[b].workspace_bytes ||
          (alternatives[a].workspace_bytes == alternatives[b].workspace_bytes &&
           alternatives[a].time_us < alternatives[b].time_us)) {
        out[u] = a;
      }
    }
  }
  return out;
}

// Plans `order` of `chosen` (the graph with the chosen workspaces) as a
// given order, with the caller's options otherwise.
absl::StatusOr<Plan> PlanChosenOrder(const Graph& chosen, const SanitizedOptions& options, std::vector<OpId> order,
                                     double seconds, Executor* executor) {
  PlanOptions given = *options;
  given.given_order = std::move(order);
  given.time_limit_seconds = std::max(seconds, 1e-3);
  ASSIGN_OR_RETURN(SanitizedOptions sanitized, SanitizePlanOptions(chosen, std::move(given)));
  return PlanGraph(chosen, sanitized, executor);
}

void FillTimeReport(const Graph& graph, const std::vector<OpId>& order, const std::vector<int>& choice,
                    v1::TimeReport* out) {
  double fastest = 0, least = 0, time = 0;
  const std::vector<int> least_choice = LeastWorkspaceChoice(graph);
  for (OpId u = 0; u < graph.num_ops(); ++u) {
    const std::vector<Primitive>& alternatives = graph.op(u).alternatives;
    if (alternatives.empty()) continue;
    double best = alternatives.front().time_us;
    for (const Primitive& p : alternatives) best = std::min(best, p.time_us);
    fastest += best;
    least += alternatives[least_choice[u]].time_us;
  }
  for (OpId u : order) {
    if (choice[u] < 0) continue;
    const Primitive& p = graph.op(u).alternatives[choice[u]];
    v1::ChosenPrimitive* chosen = out->add_primitives();
    chosen->set_op(graph.op(u).name);
    chosen->set_name(p.name);
    chosen->set_time_us(p.time_us);
    chosen->set_workspace_bytes(p.workspace_bytes);
    time += p.time_us;
  }
  out->set_time_us(time);
  out->set_fastest_everywhere_us(fastest);
  out->set_least_workspace_everywhere_us(least);
}

}  // namespace

absl::StatusOr<v1::Plan> PlanForTime(const Graph& graph, const SanitizedOptions& options, Executor* executor) {
  const Clock::time_point start = Clock::now();
  const int64_t budget = options->memory_budget_bytes;
  // What every budget must allow: each op's least-workspace alternative,
  // in the order of least peak (or the given order).
  const std::vector<int> least_choice = LeastWorkspaceChoice(graph);
  std::vector<int64_t> least_workspaces(graph.num_ops());
  for (OpId u = 0; u < graph.num_ops(); ++u) {
    least_workspaces[u] =
        least_choice[u] < 0 ? graph.op(u).workspace_bytes : graph.op(u).alternatives[least_choice[u]].workspace_bytes;
  }
  const Graph least = graph.WithWorkspaces(least_workspaces);
  // The time limit: up to 30% for that order, 80% of the rest for the
  // primitives, the rest for planning the chosen order (its steps, arena
  // and the least peak with those primitives, for comparison).
  const double limit = options->time_limit_seconds;
  const auto seconds_left = [&] {
    double left = limit - std::chrono::duration<double>(Clock::now() - start).count();
    if (options->deadline != Clock::time_point::max()) {
      left = std::min(left, std::chrono::duration<double>(options->deadline - Clock::now()).count());
    }
    return left;
  };
  std::vector<OpId> start_order = options->given_order;
  if (start_order.empty()) {
    SanitizedOptions score = options;
    score.set_score_only(true);
    score.set_time_limit_seconds(std::max(0.3 * limit, 1e-3));
    ASSIGN_OR_RETURN(Plan least_plan, PlanGraph(least, score, executor));
    start_order = std::move(least_plan.order);
  }
  const BufferModel buffers(graph, options->memory_model);
  std::optional<PrimitiveSelection> start_choice = SelectForOrder(buffers, start_order, budget);
  if (!start_choice.has_value()) {
    // Nothing fits (proven when the order is of least peak; with a given
    // order, that order does not fit): the least-workspace plan.
    ASSIGN_OR_RETURN(Plan plan, PlanChosenOrder(least, options, start_order, seconds_left(), executor));
    plan.algorithm = "time";
    v1::Plan out = PlanToProto(least, plan, options);
    v1::TimeReport* time = out.mutable_time();
    FillTimeReport(graph, plan.order, least_choice, time);
    time->set_lower_bound_us(time->time_us());
    time->set_certificate(v1::CERTIFICATE_BASELINE);
    return out;
  }

  TimeSearchResult result;
  if (options->given_order.empty()) {
    SearchOptions limits;
    limits.time_limit_seconds = std::max(0.8 * seconds_left(), 1e-6);
    limits.max_states = options->max_search_states;
    limits.cancelled = options->cancelled;
    limits.memory = options->memory;
    result = MinimizeTime(buffers, start_order, budget, limits);
  } else {
    // The given order's primitives: the fastest that fit at each step.
    result.feasible = true;
    result.selection = *start_choice;
    result.lower_bound_us = start_choice->time_us;
  }
  if (!result.feasible) {  // stopped before the start order's plan: cannot happen, it fits
    result.feasible = true;
    result.selection = *start_choice;
  }
  const Graph chosen = graph.WithWorkspaces(result.selection.workspace_bytes);
  ASSIGN_OR_RETURN(Plan plan, PlanChosenOrder(chosen, options, result.selection.order, seconds_left(), executor));
  plan.algorithm = options->given_order.empty() ? "time" : "given";
  v1::Plan out = PlanToProto(chosen, plan, options);
  v1::TimeReport* time = out.mutable_time();
  FillTimeReport(graph, plan.order, result.selection.choice, time);
  time->set_lower_bound_us(std::min(result.lower_bound_us, time->time_us()));
  // A given order's primitives are the best for it, not a search's.
  time->set_certificate(!options->given_order.empty() ? v1::CERTIFICATE_BASELINE
                        : result.proven               ? v1::CERTIFICATE_OPTIMAL
                                                      : v1::CERTIFICATE_BEST_FOUND);
  time->set_states(result.states);
  return out;
}

}  // namespace serenity
