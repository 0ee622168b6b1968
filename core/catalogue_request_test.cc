// Requests and the built-in primitive catalogue (issue 19;
// core/onnx/primitive_catalogue.h): an ONNX request that asks for time gets
// it, unless no_catalogue; a primitives file overrides it for the ops it
// names; a plan that does not ask for time is unchanged.
#include <string>
#include <vector>

#include "core/onnx/onnx_import.h"
#include "core/onnx/primitive_catalogue.h"
#include "core/plan_request.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/orders.h"
#include "tests/testing/plan_verifier.h"

namespace serenity {
namespace {

const std::string kModel = SERENITY_SOURCE_DIR "/models/inception_cell.onnx";
constexpr int64_t kBudget = 4 << 20;

v1::PlanRequest TimeRequest() {
  v1::PlanRequest request;
  request.set_onnx_model(testing::ReadFile(kModel));
  request.mutable_options()->set_objective("time");
  request.mutable_options()->set_memory_budget_bytes(kBudget);
  return request;
}

// The catalogue of the model, computed directly.
std::vector<std::vector<Primitive>> ModelCatalogue(const std::string& bytes, GraphSpec* spec) {
  absl::StatusOr<GraphSpec> imported = OnnxToGraphSpec(bytes, {});
  EXPECT_TRUE(imported.ok()) << imported.status();
  *spec = *imported;
  absl::StatusOr<std::vector<std::vector<Primitive>>> catalogue = CatalogueAlternatives(bytes, *spec);
  EXPECT_TRUE(catalogue.ok()) << catalogue.status();
  return *catalogue;
}

int NonEmpty(const std::vector<std::vector<Primitive>>& catalogue) {
  int n = 0;
  for (const std::vector<Primitive>& alternatives : catalogue) n += alternatives.empty() ? 0 : 1;
  return n;
}

// The plan without what differs between two runs (times).
v1::Plan WithoutTimes(v1::Plan plan) {
  plan.mutable_stats()->clear_solve_ms();
  plan.mutable_stats()->clear_total_ms();
  plan.mutable_stats()->clear_phase_ms();
  return plan;
}

TEST(CatalogueRequestTest, ObjectiveTimeGetsTheCatalogue) {
  const v1::PlanRequest request = TimeRequest();
  GraphSpec spec;
  const std::vector<std::vector<Primitive>> catalogue = ModelCatalogue(request.onnx_model(), &spec);
  const int expected_ops = NonEmpty(catalogue);
  ASSERT_GT(expected_ops, 0);

  RequestGraphInfo info;
  absl::StatusOr<Graph> graph = GraphFromRequest(request, &info);
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(info.catalogue_ops, expected_ops);
  bool winograd = false;
  for (OpId u = 0; u < graph->num_ops(); ++u) {
    const std::vector<Primitive>& got = graph->op(u).alternatives;
    ASSERT_EQ(got.size(), catalogue[u].size()) << graph->op(u).name;
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].name, catalogue[u][i].name);
      EXPECT_EQ(got[i].time_us, catalogue[u][i].time_us);
      EXPECT_EQ(got[i].workspace_bytes, catalogue[u][i].workspace_bytes);
      winograd |= got[i].name == "winograd43";
    }
  }
  EXPECT_TRUE(winograd);  // the cell has 3x3 stride-1 convolutions

  absl::StatusOr<v1::Plan> plan = ExecutePlanRequest(request);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(plan->feasible());
  EXPECT_EQ(plan->time().catalogue_ops(), expected_ops);
  ASSERT_EQ(plan->time().primitives_size(), expected_ops);
  EXPECT_GT(plan->time().time_us(), 0);
  // Each chosen primitive is one of its op's catalogue alternatives; the
  // plan re-simulates with their workspaces.
  std::vector<int64_t> workspace(graph->num_ops(), 0);
  for (const v1::ChosenPrimitive& chosen : plan->time().primitives()) {
    const std::optional<OpId> u = graph->FindOp(chosen.op());
    ASSERT_TRUE(u.has_value());
    bool found = false;
    for (const Primitive& p : catalogue[*u]) {
      found |=
          p.name == chosen.name() && p.time_us == chosen.time_us() && p.workspace_bytes == chosen.workspace_bytes();
    }
    EXPECT_TRUE(found) << chosen.op() << " " << chosen.name();
    workspace[*u] = chosen.workspace_bytes();
  }
  const absl::Status verified = testing::VerifyPlan(graph->WithWorkspaces(workspace), *plan);
  EXPECT_TRUE(verified.ok()) << verified;
  // The budget lets some ops run faster than direct: the plan's peak is
  // above the least one (every op direct, no workspace).
  v1::PlanRequest least = request;
  least.mutable_options()->clear_objective();
  absl::StatusOr<v1::Plan> least_plan = ExecutePlanRequest(least);
  ASSERT_TRUE(least_plan.ok()) << least_plan.status();
  EXPECT_GT(plan->peak_bytes(), least_plan->peak_bytes());
  EXPECT_LT(plan->time().time_us(), plan->time().least_workspace_everywhere_us());

  // pareto asks for time too.
  v1::PlanRequest pareto;
  pareto.set_onnx_model(request.onnx_model());
  pareto.mutable_options()->set_pareto(true);
  ASSERT_TRUE(GraphFromRequest(pareto, &info).ok());
  EXPECT_EQ(info.catalogue_ops, expected_ops);
}

TEST(CatalogueRequestTest, NoCatalogueGivesNone) {
  v1::PlanRequest request = TimeRequest();
  request.mutable_options()->set_no_catalogue(true);
  RequestGraphInfo info;
  info.catalogue_ops = -1;
  absl::StatusOr<Graph> graph = GraphFromRequest(request, &info);
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(info.catalogue_ops, 0);
  for (const Op& op : graph->ops()) EXPECT_TRUE(op.alternatives.empty()) << op.name;
  absl::StatusOr<v1::Plan> plan = ExecutePlanRequest(request);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->time().catalogue_ops(), 0);
  EXPECT_EQ(plan->time().primitives_size(), 0);
  EXPECT_EQ(plan->time().time_us(), 0);
}

TEST(CatalogueRequestTest, PrimitivesFileOverridesTheCatalogueForItsOps) {
  v1::PlanRequest request = TimeRequest();
  GraphSpec spec;
  const std::vector<std::vector<Primitive>> catalogue = ModelCatalogue(request.onnx_model(), &spec);
  // The first op the catalogue covers gets the file's one alternative.
  size_t named = 0;
  while (named < catalogue.size() && catalogue[named].empty()) ++named;
  ASSERT_LT(named, catalogue.size());
  v1::OpPrimitives* entry = request.mutable_options()->add_primitives();
  entry->set_op(spec.ops[named].name);
  v1::Primitive* p = entry->add_alternatives();
  p->set_name("measured");
  p->set_time_us(12.5);
  p->set_workspace_bytes(64);

  RequestGraphInfo info;
  absl::StatusOr<Graph> graph = GraphFromRequest(request, &info);
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(info.catalogue_ops, NonEmpty(catalogue) - 1);
  const Op& op = graph->op(static_cast<OpId>(named));
  ASSERT_EQ(op.alternatives.size(), 1u);
  EXPECT_EQ(op.alternatives[0].name, "measured");
  for (size_t u = named + 1; u < catalogue.size(); ++u) {
    EXPECT_EQ(graph->op(static_cast<OpId>(u)).alternatives.size(), catalogue[u].size());
  }
  absl::StatusOr<v1::Plan> plan = ExecutePlanRequest(request);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->time().catalogue_ops(), NonEmpty(catalogue) - 1);
  bool measured = false;
  for (const v1::ChosenPrimitive& chosen : plan->time().primitives()) {
    if (chosen.op() == op.name) measured = chosen.name() == "measured" && chosen.time_us() == 12.5;
  }
  EXPECT_TRUE(measured);

  // A file that names an op with no alternatives leaves it without.
  entry->clear_alternatives();
  ASSERT_TRUE((graph = GraphFromRequest(request, &info)).ok()) << graph.status();
  EXPECT_TRUE(graph->op(static_cast<OpId>(named)).alternatives.empty());
  EXPECT_EQ(info.catalogue_ops, NonEmpty(catalogue) - 1);
}

TEST(CatalogueRequestTest, PlansThatDoNotAskForTimeAreUnchanged) {
  v1::PlanRequest request;
  request.set_onnx_model(testing::ReadFile(kModel));
  request.mutable_options()->set_memory_budget_bytes(kBudget);
  RequestGraphInfo info;
  info.catalogue_ops = -1;
  absl::StatusOr<Graph> graph = GraphFromRequest(request, &info);
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(info.catalogue_ops, 0);
  for (const Op& op : graph->ops()) EXPECT_TRUE(op.alternatives.empty()) << op.name;
  absl::StatusOr<v1::Plan> with = ExecutePlanRequest(request);
  request.mutable_options()->set_no_catalogue(true);
  absl::StatusOr<v1::Plan> without = ExecutePlanRequest(request);
  ASSERT_TRUE(with.ok()) << with.status();
  ASSERT_TRUE(without.ok()) << without.status();
  EXPECT_FALSE(with->has_time());
  EXPECT_EQ(WithoutTimes(*with).SerializeAsString(), WithoutTimes(*without).SerializeAsString());
}

TEST(CatalogueRequestTest, GraphRequestsGetNone) {
  // The same model as a Graph message: no attributes, so no catalogue.
  v1::PlanRequest request = TimeRequest();
  absl::StatusOr<GraphSpec> spec = OnnxToGraphSpec(request.onnx_model(), {});
  ASSERT_TRUE(spec.ok()) << spec.status();
  *request.mutable_graph() = GraphSpecToProto(*spec);
  RequestGraphInfo info;
  absl::StatusOr<Graph> graph = GraphFromRequest(request, &info);
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(info.catalogue_ops, 0);
  for (const Op& op : graph->ops()) EXPECT_TRUE(op.alternatives.empty()) << op.name;
}

}  // namespace
}  // namespace serenity
