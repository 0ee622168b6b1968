#include "core/rewrite/choose.h"

#include <fstream>
#include <functional>
#include <iterator>
#include <thread>

#include "core/plan_proto.h"
#include "core/plan_request.h"
#include "core/rewrite/concat_conv.h"
#include "core/rewrite/test_model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/plan_verifier.h"

namespace serenity {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

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
  EXPECT_EQ(report.choice, "peak_rounds");
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

// DenseNet's form: Concat -> BatchNormalization -> Relu -> Conv. Pushing
// the two per-channel ops through the Concat lets the partition apply.
TEST(ChooseTest, PushesPerChannelOpsThroughAndLowersThePeak) {
  TestModel m = Branches(4, 16, 2, /*bn_relu=*/true);
  absl::StatusOr<RewrittenPlan> r = PlanWithRewrites(m.Bytes(), {}, "", Options());
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->report.recipe.sites.size(), 1u);
  EXPECT_THAT(r->report.recipe.sites[0].pushed, ElementsAre("bn", "relu"));
  // 4 branches, 4 x (bn, relu, part), 3 sums.
  EXPECT_EQ(r->graph.num_ops(), 4 + 12 + 3);
  // Without: the Concat and the BatchNormalization's output (64 channels
  // each) live at once; with: at most two 16-channel tensors and the sums.
  const int64_t channel = 64 * 4;
  EXPECT_EQ(r->report.peak_bytes_without, 128 * channel);
  EXPECT_LT(r->report.peak_bytes_with, 64 * channel);
}

// Two sites: the first holds the peak and its rewrite lowers it; the second
// is then where the peak is, but rewriting it would raise the peak (its Conv
// widens: partials and running sum are 64 channels each): kept the first
// only, in two rounds.
TEST(ChooseTest, RoundsKeepOnlyTheSitesThatLowerThePeak) {
  TestModel m;
  m.Input("in", {1, 1, 8, 8}).Output("y");
  AddBranches(m, "in", "mid", 1, 4, 16, 2, false, "a_");
  AddBranches(m, "mid", "y", 2, 2, 1, 64, false, "b_");
  absl::StatusOr<RewrittenPlan> r = PlanWithRewrites(m.Bytes(), {}, "", Options());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->report.sites_found, 2);
  EXPECT_EQ(r->report.choice, "peak_rounds");
  ASSERT_EQ(r->report.recipe.sites.size(), 1u);
  EXPECT_EQ(r->report.recipe.sites[0].conv, "a_reduce");
  EXPECT_LT(r->report.peak_bytes_with, r->report.peak_bytes_without);
  EXPECT_THAT(r->report.notes,
              ElementsAre(HasSubstr("round 1: 1 site live where"), HasSubstr("round 2: 1 site live where")));
  EXPECT_THAT(r->report.notes[1], HasSubstr("'b_reduce'"));
  EXPECT_THAT(r->report.notes[1], HasSubstr("not rewritten"));
}

// Two sites live at the peak whose rewrites together do not lower it (the
// second's partials are 64 channels each), but the first alone does.
TestModel TwoSitesOneHelping() {
  TestModel m;
  m.Input("in", {1, 1, 8, 8}).Output("y").Output("z");
  AddBranches(m, "in", "y", 1, 4, 16, 2, false, "a_");
  // The second site joins two of the first's branches into a wide Conv.
  m.Weight("b_w", {64, 32, 1, 1}, false);
  TestModel::IntAttr(m.Node("Concat", {"a_x0", "a_x1"}, {"b_c"}, "b_cat"), "axis", 1);
  m.Node("Conv", {"b_c", "b_w"}, {"z"}, "b_reduce");
  return m;
}

// The round tries its subsets and keeps the first site only.
TEST(ChooseTest, ARoundOfFewSitesTriesItsSubsets) {
  TestModel m = TwoSitesOneHelping();
  absl::StatusOr<RewrittenPlan> r = PlanWithRewrites(m.Bytes(), {}, "", Options());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->report.sites_found, 2);
  ASSERT_EQ(r->report.recipe.sites.size(), 1u) << ::testing::PrintToString(r->report.notes);
  EXPECT_EQ(r->report.recipe.sites[0].conv, "a_reduce");
  EXPECT_LT(r->report.peak_bytes_with, r->report.peak_bytes_without);
  EXPECT_THAT(r->report.notes, ::testing::Contains(HasSubstr("trying its subsets")));
  EXPECT_THAT(r->report.notes, ::testing::Contains(HasSubstr("kept 1 of its 2 sites")));
}

// A site away from the peak is not tried: the note says where the peak is.
TEST(ChooseTest, SaysWhenNoSiteIsLiveAtThePeak) {
  TestModel m;
  m.Input("in", {1, 1, 8, 8}).Output("y");
  AddBranches(m, "in", "mid", 1, 2, 1, 1, false, "a_");  // small site
  m.Weight("wide", {64, 1, 1, 1}, false).Weight("narrow", {1, 64, 1, 1}, false);
  m.Node("Conv", {"mid", "wide"}, {"big"}, "widen");  // the peak: 1 + 64 channels
  m.Node("Conv", {"big", "narrow"}, {"y"}, "narrow_conv");
  absl::StatusOr<RewrittenPlan> r = PlanWithRewrites(m.Bytes(), {}, "", Options());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->report.sites_found, 1);
  EXPECT_TRUE(r->report.recipe.sites.empty());
  EXPECT_THAT(r->report.notes, ElementsAre(HasSubstr("none of the 1 sites is live where the peak is")));
  EXPECT_THAT(r->report.notes[0], HasSubstr("'widen'"));
}

TEST(ChooseTest, LeavesASiteThatDoesNotLowerThePeak) {
  TestModel m = Branches(2, 1, 64);
  absl::StatusOr<RewrittenPlan> r = PlanWithRewrites(m.Bytes(), {}, "", Options());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->report.sites_found, 1);
  EXPECT_TRUE(r->report.recipe.sites.empty());
  EXPECT_EQ(r->report.peak_bytes_with, r->report.peak_bytes_without);
  EXPECT_EQ(r->graph.num_ops(), 4);
  EXPECT_EQ(r->report.choice, "none");
  ASSERT_EQ(r->report.notes.size(), 1u);
  EXPECT_THAT(r->report.notes[0], HasSubstr("no order below"));
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
  EXPECT_TRUE(PrepareRequest(request).ok());  // the server's path plans rewrites too
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

// The bound a server charges for covers what the rewrite adds, on the
// DenseNet form and on a Concat read by two Convs through a Relu.
TEST(ChooseTest, GrowthBoundCoversTheRewrittenGraph) {
  TestModel dense = Branches(4, 16, 2, /*bn_relu=*/true);
  TestModel two = Branches(3, 16, 2);
  onnx::GraphProto* g = two.model().mutable_graph();
  g->mutable_node()->RemoveLast();  // the Conv
  two.Weight("w2", {2, 48, 1, 1}, false).Output("y2");
  two.Node("Relu", {"c"}, {"r"}, "relu");
  two.Node("Conv", {"r", "w"}, {"y"}, "reduce");
  two.Node("Conv", {"r", "w2"}, {"y2"}, "reduce2");
  for (TestModel* m : {&dense, &two}) {
    absl::StatusOr<Graph> graph = ImportOnnxModel(m->Bytes(), {});
    ASSERT_TRUE(graph.ok()) << graph.status();
    for (RewriteForm form : {RewriteForm::kStandard, RewriteForm::kAccumulate}) {
      PlanOptions options = Options();
      options.rewrite_form = form;
      absl::StatusOr<RewrittenPlan> r = PlanWithRewrites(m->Bytes(), {}, "", options);
      ASSERT_TRUE(r.ok()) << r.status();
      ASSERT_EQ(r->report.recipe.sites.size(), 1u);
      EXPECT_LE(r->graph.num_ops() - graph->num_ops(), BoundRewriteGrowth(*graph).ops());
      EXPECT_LE(BoundRewriteGrowth(*graph).ops(), 3 * (r->graph.num_ops() - graph->num_ops()));  // not vacuous
    }
  }
}

// Every rewritten plan, in both forms, passes the independent verifier
// (its own re-simulation of the order, the peak and the arena, with
// ConvAccumulate's aliasing) on the rewritten graph.
TEST(ChooseTest, RewrittenPlansPassTheIndependentVerifier) {
  std::vector<TestModel> models = {Branches(4, 16, 2), Branches(4, 16, 2, /*bn_relu=*/true), Branches(3, 8, 2)};
  TestModel chained;
  chained.Input("in", {1, 1, 8, 8}).Output("y");
  AddBranches(chained, "in", "mid", 1, 4, 16, 2, false, "a_");
  AddBranches(chained, "mid", "y", 2, 3, 16, 2, true, "b_");
  models.push_back(std::move(chained));
  for (TestModel& m : models) {
    for (RewriteForm form : {RewriteForm::kStandard, RewriteForm::kAccumulate}) {
      PlanOptions options = Options();
      options.rewrite_form = form;
      absl::StatusOr<RewrittenPlan> r = PlanWithRewrites(m.Bytes(), {}, "", options);
      ASSERT_TRUE(r.ok()) << r.status();
      ASSERT_FALSE(r->report.recipe.sites.empty());
      const v1::Plan proto = PlanToProto(r->graph, r->plan, options);
      const absl::Status verified = testing::VerifyPlan(r->graph, proto);
      EXPECT_TRUE(verified.ok()) << verified << " form " << RewriteFormName(form);
      EXPECT_EQ(proto.peak_bytes(), r->report.peak_bytes_with);
    }
  }
}

// Runs every task on a thread of its own: the concurrent path of
// PlanWithRewrites (the best plan completed beside its last trials).
class ThreadsExecutor : public Executor {
 public:
  void RunAll(std::vector<std::function<void()>>& tasks) override {
    std::vector<std::thread> threads;
    for (std::function<void()>& task : tasks) threads.emplace_back(std::ref(task));
    for (std::thread& thread : threads) thread.join();
  }
};

// With an executor the best plan so far is completed while the trials that
// are likely the last run (a round's subsets, the sums); when such a trial
// is kept that completion is of the wrong graph and must not be returned.
// The same plan, arena and notes as without, on: a kept subset, a kept
// reordering of sums, a round that keeps nothing, and the shared models
// where the last trials are not kept (nasnet_a_cifar10: the sums;
// amoebanet_a_cifar10: a round's subsets; skipped when absent).
TEST(ChooseTest, PlansTheSameWithAnExecutor) {
  std::vector<std::pair<std::string, std::string>> models;  // name, bytes
  models.push_back({"subsets", TwoSitesOneHelping().Bytes()});
  models.push_back({"sums", ReluTailSummedBackwards().Bytes()});
  models.push_back({"no site kept", Branches(2, 1, 64).Bytes()});
  for (const char* name : {"nasnet_a_cifar10", "amoebanet_a_cifar10"}) {
    std::ifstream in(std::string(SERENITY_SHARED_DIR) + "/bench/models/" + name + ".onnx", std::ios::binary);
    if (in) models.push_back({name, std::string(std::istreambuf_iterator<char>(in), {})});
  }
  ThreadsExecutor threads;
  for (const auto& [name, bytes] : models) {
    for (RewriteForm form : {RewriteForm::kStandard, RewriteForm::kAccumulate}) {
      PlanOptions options = Options();
      options.time_limit_seconds = 10;
      options.rewrite_form = form;
      absl::StatusOr<RewrittenPlan> alone = PlanWithRewrites(bytes, {}, "", options);
      absl::StatusOr<RewrittenPlan> beside = PlanWithRewrites(bytes, {}, "", options, &threads);
      ASSERT_TRUE(alone.ok()) << alone.status();
      ASSERT_TRUE(beside.ok()) << beside.status();
      const std::string what = name + " " + RewriteFormName(form);
      EXPECT_EQ(beside->model_bytes, alone->model_bytes) << what;
      EXPECT_EQ(beside->report.notes, alone->report.notes) << what;
      EXPECT_EQ(beside->plan.order, alone->plan.order) << what;
      EXPECT_EQ(beside->plan.profile.peak_bytes, alone->plan.profile.peak_bytes) << what;
      EXPECT_EQ(beside->plan.arena.offsets, alone->plan.arena.offsets) << what;
      EXPECT_EQ(beside->plan.arena.size_bytes, alone->plan.arena.size_bytes) << what;
      const v1::Plan proto = PlanToProto(beside->graph, beside->plan, options);
      const absl::Status verified = testing::VerifyPlan(beside->graph, proto);
      EXPECT_TRUE(verified.ok()) << verified << " " << what;
    }
  }
}

}  // namespace
}  // namespace serenity
