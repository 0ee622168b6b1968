// Other ways to choose primitives, beside choosing them and the order
// together (issue 19; docs/primitives.md, "Baselines"): the poster's
// baselines (one primitive everywhere, fastest everywhere, least workspace
// everywhere), choosing separately (order first, then primitives; or
// primitives first, then order), the file order with its best primitives,
// and the summed-footprint model's optimum (core/schedule/summed_footprint.h).
// Each is reported as a v1::PrimitiveBaseline: its total time, its least peak
// in Serenity's model (the peak of its own order where it has one), whether
// that fits the budget, and its summed footprint; peaks and footprints are
// of the graph as its choice runs it (ChosenGraph: with count_weights, the
// weights its alternatives keep). The choosing itself (SelectForOrder,
// DowngradeUntilFits) still sees the weights as given.
#ifndef SERENITY_CORE_PRIMITIVE_BASELINES_H_
#define SERENITY_CORE_PRIMITIVE_BASELINES_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/graph/graph.h"
#include "core/plan_options.h"
#include "core/util/executor.h"
#include "serenity/v1/scheduler.pb.h"

namespace serenity {

// With options.primitive_baselines, the time the baselines take after the
// plan, as a share of the request's time limit (the plan itself keeps all of
// it, so that it is the plan the request makes without baselines; the
// options' deadline still bounds both).
inline constexpr double kPrimitiveBaselinesShare = 0.5;

// Per op the alternative named `name` where it has one, else its
// least-workspace alternative (LeastWorkspaceChoices); -1 without.
std::vector<int> OneChoices(const Graph& graph, absl::string_view name);

// The names of the ops' alternatives, each once, sorted.
std::vector<std::string> PrimitiveNames(const Graph& graph);

// Sets time->summed_footprint_bytes, the summed footprint of `choice` (the
// plan's), and with options->primitive_baselines appends to time->baselines,
// in this order: "fastest", "least_workspace", "one:<name>" per
// PrimitiveNames, "order_first", "primitives_first", "file_order",
// "summed_footprint" (docs/primitives.md says what each is). Their least-peak
// searches (PlanGraph, objective min_peak) and primitives first's
// downgrading share `seconds` (each gets what is left over the searches
// still to run), within options->deadline. Errors of PlanGraph.
absl::Status AddPrimitiveBaselines(const Graph& graph, const SanitizedOptions& options, const std::vector<int>& choice,
                                   double seconds, Executor* executor, v1::TimeReport* time);

}  // namespace serenity

#endif  // SERENITY_CORE_PRIMITIVE_BASELINES_H_
