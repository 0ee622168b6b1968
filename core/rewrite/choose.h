// Choosing rewrites (issue 17): which Concat -> Conv sites of an ONNX model
// to rewrite (concat_conv.h) and which sums to reorder (add_chain.h) so that
// the best peak drops, and the plan of
// the model so rewritten. The one entry point the request path calls
// (ExecutePlanRequest, for options.rewrite).
//
// The model as given is planned first (PlanGraph, score only: every plan
// here is, and the one kept is completed by CompletePlan at the end). Each site's
// heat is the most bytes live in that plan from the first of its Concat's
// inputs made to its last Conv. Then, in rounds, the sites not yet tried
// whose heat reaches the best peak so far are applied together and the
// result planned (within the same time limit); when that peak is lower the
// round is kept, plan and all, and the next round takes the sites
// reaching the new peak. A round of two or three sites that does not lower
// the peak together tries each proper subset of them and keeps the lowest
// below the best; otherwise the search stops. No round starts once
// options.deadline has passed. Last, every sum (add_chain.h) live where the
// peak so far is (its heat, from its first operand made to the sum) whose
// operands the plan makes in another order than written is reordered to add
// them as they are made, all together, and kept when the peak drops. So
// planning takes up to (rounds + 2) plans, and sites far below the peak are
// never applied. Each trial's search starts from the best plan so far,
// carried over (follow_order.h), and asks only for a peak below the best
// (PlanHints::only_below): a trial that cannot go below it stops at the
// proof. With an executor, the best plan so far is completed beside the
// trials that are likely the last (a round's subsets, the sums), on the
// executor's threads: the same plan as without, sooner.
#ifndef SERENITY_CORE_REWRITE_CHOOSE_H_
#define SERENITY_CORE_REWRITE_CHOOSE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/graph/graph.h"
#include "core/onnx/onnx_import.h"
#include "core/plan_options.h"
#include "core/planner.h"
#include "core/rewrite/recipe.h"
#include "core/util/executor.h"
#include "serenity/v1/scheduler.pb.h"

namespace serenity {

// What rewriting did; mirrors serenity.v1.RewriteReport.
struct RewriteReport {
  // The best plan of the model as given.
  int64_t peak_bytes_without = 0;
  int64_t lower_bound_bytes_without = 0;
  Certificate certificate_without = Certificate::kBaseline;
  int64_t peak_bytes_with = 0;
  int ops_before = 0;
  int ops_after = 0;
  int sites_found = 0;
  // How the sites applied were chosen: "peak_rounds" (see above) or "none".
  std::string choice;
  std::string form;  // RewriteFormName of options.rewrite_form
  RewriteRecipe recipe;
  // Why each site found was not applied; with none found, what reads the
  // graph's Concats.
  std::vector<std::string> notes;
  double without_ms = 0;  // the plan without rewriting
  double rewrite_ms = 0;  // everything after it
};

struct RewrittenPlan {
  std::string model_bytes;  // the planned model: nodes named (NameNodesAsImporter), sites rewritten
  Graph graph;              // its import
  Plan plan;                // of `graph`
  RewriteReport report;
};

// Plans the serialized ONNX model `onnx_bytes` with rewriting, as described
// above. `options` are checked with SanitizePlanOptions (InvalidArgument for
// a given order); `import` and `model_name` (empty: the model's own) as for
// a request. Errors of the import and of PlanGraph are returned as they are.
// `as_given`, when not null, is the import of these bytes with these
// options and name (a caller that has imported them already, e.g.
// PrepareRequest): it is used instead of importing them again.
absl::StatusOr<RewrittenPlan> PlanWithRewrites(absl::string_view onnx_bytes, const OnnxImportOptions& import,
                                               const std::string& model_name, const PlanOptions& options,
                                               Executor* executor = nullptr, const Graph* as_given = nullptr);

// A bound on what PlanWithRewrites may add to `graph` (the model as
// imported), for a server to charge before it plans: a site copies each
// per-channel op between a Concat and its Convs once per Concat input and
// replaces each Conv by at most two ops per input; sums only change order.
// Counted on the graph, where a per-channel op is taken to be any op with
// one output whose other inputs are weights or Constant outputs (a
// superset, so a bound). `pushed` and `convs` are sums over the Concats of
// (inputs x such ops).
struct RewriteGrowth {
  int64_t pushed = 0;
  int64_t convs = 0;
  // Bytes of the weights and constants those ops read, counted once per
  // op: the most their slices can add (a weight several sites share is
  // sliced once per site).
  int64_t slice_bytes = 0;
  int64_t ops() const { return pushed + 2 * convs; }
};
RewriteGrowth BoundRewriteGrowth(const Graph& graph);

// The report as a message, and the recipe back from one (for ApplyRecipe).
void RewriteReportToProto(const RewriteReport& report, v1::RewriteReport* out);
RewriteRecipe RewriteRecipeFromProto(const v1::RewriteRecipe& recipe);

}  // namespace serenity

#endif  // SERENITY_CORE_REWRITE_CHOOSE_H_
