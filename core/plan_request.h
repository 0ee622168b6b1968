// The one entry point that answers a PlanRequest (read, sanitize, plan,
// convert), used by the server and by the CLI's --local mode, so both give
// the same answer; plan_proto.h does the conversions.
#ifndef SERENITY_CORE_PLAN_REQUEST_H_
#define SERENITY_CORE_PLAN_REQUEST_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/graph/graph.h"
#include "core/onnx/onnx_import.h"
#include "core/plan_options.h"
#include "core/plan_proto.h"
#include "core/planner.h"
#include "core/util/executor.h"
#include "serenity/v1/scheduler.pb.h"

namespace serenity {

// A request read and validated: its graph and its options, sanitized for
// that graph (given_order resolved to op ids and checked).
struct PreparedRequest {
  Graph graph;  // with options->rewrite: the model as given, before rewriting
  SanitizedOptions options;
  // Only with options->rewrite: what PlanWithRewrites reads again (the
  // request's ONNX bytes, a copy, and how to import them).
  std::string onnx_model;
  OnnxImportOptions import;
  std::string model_name;
  // Ops whose alternatives came from the built-in catalogue
  // (RequestGraphInfo), reported in Plan.time.
  int catalogue_ops = 0;
};

// Reads and validates a request without planning it: InvalidArgument naming
// the problem for a bad graph, bad options or a bad given order, and, with
// options.rewrite, for a Graph request (ONNX only) and a given order
// (GivenOrderWithRewriteError). The one place a request's options are
// checked (SanitizePlanOptions).
absl::StatusOr<PreparedRequest> PrepareRequest(const v1::PlanRequest& request);

// Plans a prepared request (PlanGraph + PlanToProto, and the SparsityReport
// when the options give sparsity levels: sparsity_report.h). A request that
// asks for time is planned by PlanForTime (primitive_plan.h), and its
// Plan.time.catalogue_ops is prepared.catalogue_ops. With
// options->rewrite, plans with rewriting instead (PlanWithRewrites,
// core/rewrite/choose.h, with the prepared options: their deadline, memory
// account, cancellation and score_only hold for every plan it makes): the
// plan is the rewritten graph's, Plan.rewrite says what was done, and
// stats.phase_ms["rewrite"] is its time. stats.total_ms covers the planning
// only.
absl::StatusOr<v1::Plan> ExecutePreparedRequest(const PreparedRequest& prepared, Executor* executor = nullptr);

// Imports, validates and plans a request (PrepareRequest, then
// ExecutePreparedRequest): the whole job behind the Plan RPC.
// stats.total_ms covers import through arena planning.
// Independent parts of the search run on `executor` (null: this thread).
absl::StatusOr<v1::Plan> ExecutePlanRequest(const v1::PlanRequest& request, Executor* executor = nullptr);

// Recomputes the baselines (and their traffic) of `plan` for `graph`: for a
// plan made for an isomorphic graph whose op list was in another order, so
// that file order and the other baselines describe the caller's graph.
// Within options' time, cancellation and memory (SummarizeBaselines); the
// plan's baselines/baseline_arenas fallbacks become this computation's.
absl::Status RefreshBaselines(const Graph& graph, const SanitizedOptions& options, v1::Plan* plan);

}  // namespace serenity

#endif  // SERENITY_CORE_PLAN_REQUEST_H_
