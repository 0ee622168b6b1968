#include "core/plan_request.h"

#include <chrono>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/budget_levels.h"
#include "core/primitive_plan.h"
#include "core/rewrite/choose.h"
#include "core/sparsity/sparsity_report.h"
#include "core/util/status_macros.h"

namespace serenity {
namespace {

// --- identity graph rewriting (issue 17) ---
// The request's problems with options.rewrite, before anything is planned.
absl::Status CheckRewriteRequest(const v1::PlanRequest& request) {
  if (request.model_case() != v1::PlanRequest::kOnnxModel) {
    return absl::InvalidArgumentError(
        "rewrite applies to ONNX models only (it needs the Conv attributes and weights a Graph does not carry)");
  }
  if (request.given_order().indices_size() > 0 || request.given_order().names_size() > 0) {
    return GivenOrderWithRewriteError();
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<PreparedRequest> PrepareRequest(const v1::PlanRequest& request) {
  if (request.options().rewrite()) RETURN_IF_ERROR(CheckRewriteRequest(request));
  ASSIGN_OR_RETURN(PlanOptions options, PlanOptionsFromProto(request.options()));
  RequestGraphInfo info;
  ASSIGN_OR_RETURN(Graph graph, GraphFromRequest(request, &info));
  const v1::GivenOrder& given = request.given_order();
  if (given.indices_size() > 0 && given.names_size() > 0) {
    return absl::InvalidArgumentError("give the order as indices or as names, not both");
  }
  options.given_order.assign(given.indices().begin(), given.indices().end());
  for (const std::string& name : given.names()) {
    std::optional<OpId> u = graph.FindOp(name);
    if (!u.has_value()) return absl::InvalidArgumentError(absl::StrCat("the order names unknown op '", name, "'"));
    options.given_order.push_back(*u);
  }
  ASSIGN_OR_RETURN(SanitizedOptions sanitized, SanitizePlanOptions(graph, std::move(options)));
  PreparedRequest prepared{std::move(graph), std::move(sanitized), {}, {}, {}, info.catalogue_ops};
  if (prepared.options->rewrite) {
    prepared.onnx_model = request.onnx_model();
    prepared.import = OnnxImportOptionsFromProto(request.options());
    prepared.model_name = request.model_name();
  }
  return prepared;
}

absl::StatusOr<v1::Plan> ExecutePreparedRequest(const PreparedRequest& prepared, Executor* executor) {
  if (prepared.options->rewrite) {
    ASSIGN_OR_RETURN(RewrittenPlan rewritten,
                     PlanWithRewrites(prepared.onnx_model, prepared.import, prepared.model_name, *prepared.options,
                                      executor, &prepared.graph));
    v1::Plan out = PlanToProto(rewritten.graph, rewritten.plan, *prepared.options);
    RewriteReportToProto(rewritten.report, out.mutable_rewrite());
    (*out.mutable_stats()->mutable_phase_ms())["rewrite"] = rewritten.report.rewrite_ms;
    return out;
  }
  if (!prepared.options->budgets.empty() || AsksForTime(*prepared.options)) {
    ASSIGN_OR_RETURN(v1::Plan out, !prepared.options->budgets.empty()
                                       ? PlanBudgetLevels(prepared.graph, prepared.options, executor)
                                       : PlanForTime(prepared.graph, prepared.options, executor));
    out.mutable_time()->set_catalogue_ops(prepared.catalogue_ops);
    return out;
  }
  ASSIGN_OR_RETURN(Plan plan, PlanGraph(prepared.graph, prepared.options, executor));
  v1::Plan out = PlanToProto(prepared.graph, plan, prepared.options);
  AddSparsityReport(prepared.graph, prepared.options, &out);
  return out;
}

absl::StatusOr<v1::Plan> ExecutePlanRequest(const v1::PlanRequest& request, Executor* executor) {
  const auto start = std::chrono::steady_clock::now();
  ASSIGN_OR_RETURN(PreparedRequest prepared, PrepareRequest(request));
  const double import_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  ASSIGN_OR_RETURN(v1::Plan out, ExecutePreparedRequest(prepared, executor));
  (*out.mutable_stats()->mutable_phase_ms())["import"] = import_ms;
  out.mutable_stats()->set_total_ms(
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  return out;
}

absl::Status RefreshBaselines(const Graph& graph, const SanitizedOptions& options, v1::Plan* plan) {
  ASSIGN_OR_RETURN(BaselineReport report, SummarizeBaselines(graph, options));
  ReplaceBaselines(graph, report, plan);
  return absl::OkStatus();
}

}  // namespace serenity
