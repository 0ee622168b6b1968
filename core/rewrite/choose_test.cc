#include "core/rewrite/choose.h"

#include "core/plan_request.h"
#include "core/rewrite/concat_conv.h"
#include "core/rewrite/test_model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace serenity {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// A small input widened by k branch Convs to `wide` channels each, joined
// and reduced by a Conv to `out` channels. With wide >> out the partition
// lowers the peak (the x_i need not be live together); with out >> wide it
// cannot (each partial and the running sum are full-size).
TestModel Branches(int k, int64_t wide, int64_t out) {
  TestModel m;
  m.Input("in", {1, 1, 8, 8}).Weight("w", {out, k * wide, 1, 1}, false).Output("y");
  std::vector<std::string> xs;
  for (int i = 0; i < k; ++i) {
    const std::string b = "b" + std::to_string(i), x = "x" + std::to_string(i);
    m.Weight(b, {wide, 1, 1, 1}, false);
    m.Node("Conv", {"in", b}, {x}, "branch" + std::to_string(i));
    xs.push_back(x);
  }
  TestModel::IntAttr(m.Node("Concat", xs, {"c"}, "cat"), "axis", 1);
  m.Node("Conv", {"c", "w"}, {"y"}, "reduce");
  return m;
}

PlanOptions Options() {
  PlanOptions options;
  options.time_limit_seconds = 5;
  options.rewrite = true;
  return options;
}

TEST(ChooseTest, KeepsASiteThatLowersThePeak) {
  TestModel m = Branches(4, 16, 2);
  absl::StatusOr<RewrittenPlan> r = PlanWithRewrites(m.Bytes(), {}, "", Options());
  ASSERT_TRUE(r.ok()) << r.status();
  const RewriteReport& report = r->report;
  EXPECT_EQ(report.sites_found, 1);
  ASSERT_EQ(report.recipe.sites.size(), 1u);
  EXPECT_EQ(report.recipe.sites[0].conv, "reduce");
  EXPECT_TRUE(report.greedy);
  EXPECT_EQ(report.ops_before, 6);
  EXPECT_EQ(report.ops_after, 4 + 4 + 3);
  EXPECT_EQ(r->graph.num_ops(), 11);
  EXPECT_LT(report.peak_bytes_with, report.peak_bytes_without);
  EXPECT_EQ(report.peak_bytes_with, r->plan.profile.peak_bytes);
  EXPECT_EQ(report.certificate_without, Certificate::kOptimal);
  // Without: all four 16-channel x_i and their concat live at once.
  const int64_t x = 16 * 64 * 4;
  EXPECT_EQ(report.peak_bytes_without, 8 * x);
  // The planned bytes are the rewritten model, which imports to the graph.
  absl::StatusOr<Graph> again = ImportOnnxModel(r->model_bytes, {});
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->num_ops(), 11);
}

TEST(ChooseTest, LeavesASiteThatDoesNotLowerThePeak) {
  TestModel m = Branches(2, 1, 64);
  absl::StatusOr<RewrittenPlan> r = PlanWithRewrites(m.Bytes(), {}, "", Options());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->report.sites_found, 1);
  EXPECT_TRUE(r->report.recipe.sites.empty());
  EXPECT_EQ(r->report.peak_bytes_with, r->report.peak_bytes_without);
  EXPECT_EQ(r->graph.num_ops(), 4);
  ASSERT_EQ(r->report.notes.size(), 1u);
  EXPECT_THAT(r->report.notes[0], HasSubstr("not below"));
}

TEST(ChooseTest, SaysWhyThereIsNoSite) {
  TestModel m = Branches(2, 4, 2);
  m.Node("Relu", {"c"}, {"r"}, "second_reader");
  m.Output("r");
  absl::StatusOr<RewrittenPlan> r = PlanWithRewrites(m.Bytes(), {}, "", Options());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->report.sites_found, 0);
  EXPECT_THAT(r->report.notes, ElementsAre("no Concat -> Conv site: of 1 Concats, 1 read by Conv+Relu"));
}

TEST(ChooseTest, RequestPathFillsTheReportAndRefusesWhatItCannotDo) {
  TestModel m = Branches(3, 16, 2);
  v1::PlanRequest request;
  request.set_onnx_model(m.Bytes());
  request.mutable_options()->set_rewrite(true);
  request.mutable_options()->set_time_limit_seconds(5);
  absl::StatusOr<v1::Plan> plan = ExecutePlanRequest(request);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_TRUE(plan->has_rewrite());
  EXPECT_EQ(plan->rewrite().sites_applied(), 1);
  EXPECT_EQ(plan->rewrite().peak_bytes_with(), plan->peak_bytes());
  EXPECT_EQ(plan->nodes(), 3 + 3 + 2);
  EXPECT_THAT(plan->rewrite().recipe().sites(0).new_ops(),
              ElementsAre("reduce/part0", "reduce/part1", "reduce/sum1", "reduce/part2", "reduce/sum2"));
  // The recipe round-trips and applies to the model it came from.
  EXPECT_TRUE(ApplyRecipe(m.Bytes(), RewriteRecipeFromProto(plan->rewrite().recipe())).ok());

  v1::PlanRequest ordered = request;
  ordered.mutable_given_order()->add_indices(0);
  EXPECT_THAT(ExecutePlanRequest(ordered).status().message(), HasSubstr("cannot be combined with rewrite"));
  v1::PlanRequest graph;
  graph.mutable_graph()->set_name("g");
  graph.mutable_options()->set_rewrite(true);
  EXPECT_EQ(ExecutePlanRequest(graph).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(ExecutePlanRequest(graph).status().message(), HasSubstr("ONNX models only"));
  EXPECT_THAT(PrepareRequest(request).status().message(), HasSubstr("in-process only"));
  // Sparsity levels describe the graph as given, not the rewritten one.
  v1::PlanRequest with_levels = request;
  with_levels.mutable_options()->add_levels()->set_name("dense");
  EXPECT_THAT(ExecutePlanRequest(with_levels).status().message(), HasSubstr("cannot be combined yet"));
  // Without rewrite the same model plans as given, with no report.
  request.mutable_options()->set_rewrite(false);
  plan = ExecutePlanRequest(request);
  ASSERT_TRUE(plan.ok());
  EXPECT_FALSE(plan->has_rewrite());
  EXPECT_EQ(plan->nodes(), 5);
}

TEST(ChooseTest, SanitizeRefusesAGivenOrderWithRewrite) {
  TestModel m = Branches(2, 4, 2);
  absl::StatusOr<Graph> g = ImportOnnxModel(m.Bytes(), {});
  ASSERT_TRUE(g.ok());
  PlanOptions options = Options();
  options.given_order = {0, 1, 2, 3};
  EXPECT_THAT(SanitizePlanOptions(*g, options).status().message(), HasSubstr("--order"));
}

}  // namespace
}  // namespace serenity
