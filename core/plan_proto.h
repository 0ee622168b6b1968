// Conversions between the wire messages (serenity.v1) and the core types;
// nothing here plans (plan_request.h answers a PlanRequest).
#ifndef SERENITY_CORE_PLAN_PROTO_H_
#define SERENITY_CORE_PLAN_PROTO_H_

#include "absl/status/statusor.h"
#include "core/graph/graph.h"
#include "core/onnx/onnx_import.h"
#include "core/planner.h"
#include "serenity/v1/scheduler.pb.h"

namespace serenity {

// A Primitive message as the graph's Primitive.
Primitive PrimitiveFromProto(const v1::Primitive& p);
LayoutTransform LayoutTransformFromProto(const v1::LayoutTransform& t);

// Copies a Graph message into a GraphSpec (validated later by Graph::Build).
GraphSpec GraphSpecFromProto(const v1::Graph& graph);

// The inverse: a Graph message holding `spec` (bytes given explicitly when
// the spec gives them).
v1::Graph GraphSpecToProto(const GraphSpec& spec);

// Reads request options; empty fields take their defaults (alignment 64,
// algorithm "auto"). InvalidArgument for negative numbers and unknown
// algorithm or objective names (ParseAlgorithm, ParseObjective). The options
// are not sanitized yet (SanitizePlanOptions).
absl::StatusOr<PlanOptions> PlanOptionsFromProto(const v1::PlanOptions& options);

// The ONNX import options a request's options give (dim values, workspace
// bytes per op).
OnnxImportOptions OnnxImportOptionsFromProto(const v1::PlanOptions& options);

// What GraphFromRequest made of a request besides its graph.
struct RequestGraphInfo {
  // Ops whose alternatives came from the built-in catalogue
  // (core/onnx/primitive_catalogue.h), reported as TimeReport.catalogue_ops.
  int catalogue_ops = 0;
};

// Builds the Graph a request carries (Graph message or ONNX bytes, with the
// request's dim values and workspace bytes, and its options.primitives
// replacing the alternatives of the ops they name). An ONNX request that
// asks for time (objective "time", pareto or max_time_us) without
// no_catalogue first gives its Conv, Gemm and MatMul ops the built-in
// catalogue's alternatives (options.primitives replaces them for the ops it
// names); a Graph request, or one that does not ask for time, gets none, and
// the catalogue is not computed. `info` (may be null) receives what was
// done. InvalidArgument naming the problem for every bad input: also
// primitives without objective "time", naming an op the graph has not, or
// naming one twice.
absl::StatusOr<Graph> GraphFromRequest(const v1::PlanRequest& request, RequestGraphInfo* info = nullptr);

// Sets `plan`'s budget fields (memory_budget_bytes, feasible,
// headroom_bytes, arena_fits_budget) for `budget_bytes` (0: none) from its
// peak and arena size (ApplyBudget in planner.h): for a fresh plan, and for
// a cached plan answered under another budget.
void ApplyBudget(int64_t budget_bytes, v1::Plan* plan);

// The field of the proto's Baselines message that holds `baseline`.
v1::OrderSummary* MutableBaselineProto(Baseline baseline, v1::Baselines* baselines);
const v1::OrderSummary& BaselineProto(Baseline baseline, const v1::Baselines& baselines);

// Fills a Plan message for `plan` of `graph`.
v1::Plan PlanToProto(const Graph& graph, const Plan& plan, const PlanOptions& options);

// The wire's certificate for the core's, and back (CERTIFICATE_UNSPECIFIED
// and unknown values read as kBaseline, a plan that proves nothing); with
// CertificateName (planner.h), the name a user sees.
v1::Certificate CertificateToProto(Certificate certificate);
Certificate CertificateFromProto(v1::Certificate certificate);

// The wire's buffer kind for the core's.
v1::BufferKind BufferKindToProto(BufferKind kind);

// Replaces `plan`'s baselines with `report`'s (computed for `graph`), and
// its traffic after the first entry (the plan's own order) and its
// baselines/baseline_arenas fallbacks with the report's.
void ReplaceBaselines(const Graph& graph, const BaselineReport& report, v1::Plan* plan);

// Drops what a score-only plan leaves out (arena, steps, moves), e.g. from a
// full plan that answers a score-only request.
void DropArenaAndSteps(v1::Plan* plan);

}  // namespace serenity

#endif  // SERENITY_CORE_PLAN_PROTO_H_
