#include "core/plan_request.h"

#include <atomic>
#include <chrono>
#include <random>
#include <string>
#include <vector>

#include "core/rewrite/choose.h"
#include "core/rewrite/test_model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/plan_verifier.h"
#include "tests/testing/test_graph.h"

namespace serenity {
namespace {

using ::testing::HasSubstr;

TEST(PlanRequestTest, GraphMessageRoundTrip) {
  v1::PlanRequest request;
  v1::Graph* graph = request.mutable_graph();
  graph->set_name("tiny");
  for (const char* name : {"in", "mid", "out"}) {
    v1::Tensor* t = graph->add_tensors();
    t->set_name(name);
    t->add_shape(2);
    t->add_shape(4);  // float32 by default: 32 bytes
  }
  v1::Op* a = graph->add_ops();
  a->set_name("a");
  a->set_type("Relu");
  a->add_inputs("in");
  a->add_outputs("mid");
  a->set_workspace_bytes(5);
  v1::Op* b = graph->add_ops();
  b->set_name("b");
  b->set_type("Relu");
  b->add_inputs("mid");
  b->add_outputs("out");
  graph->add_inputs("in");
  graph->add_outputs("out");
  absl::StatusOr<v1::Plan> plan = ExecutePlanRequest(request);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->model(), "tiny");
  EXPECT_EQ(plan->peak_bytes(), 69);  // in + mid + workspace during a
  EXPECT_EQ(plan->certificate(), v1::CERTIFICATE_OPTIMAL);
  EXPECT_EQ(plan->arena().alignment(), 64);
  absl::StatusOr<Graph> g = GraphFromRequest(request);
  ASSERT_TRUE(g.ok());
  EXPECT_TRUE(testing::VerifyPlan(*g, *plan).ok()) << testing::VerifyPlan(*g, *plan);
}

TEST(PlanRequestTest, RejectsEmptyAndBadRequests) {
  v1::PlanRequest request;
  EXPECT_THAT(ExecutePlanRequest(request).status().message(), HasSubstr("no model"));
  request.set_onnx_model("definitely not onnx");
  EXPECT_EQ(ExecutePlanRequest(request).status().code(), absl::StatusCode::kInvalidArgument);
  request.mutable_options()->set_alignment(-4);
  EXPECT_THAT(ExecutePlanRequest(request).status().message(), HasSubstr("alignment"));
  // Names are parsed where the request is read.
  v1::PlanRequest named;
  *named.mutable_graph() =
      GraphSpecToProto(testing::TestGraph().Input("in", 1).Op("a", "Relu", {"in"}, {{"out", 1}}).Output("out").spec());
  named.mutable_options()->set_algorithm("magic");
  EXPECT_THAT(ExecutePlanRequest(named).status().message(),
              HasSubstr("unknown algorithm 'magic'; choose one of: auto,"));
  named.mutable_options()->set_algorithm("kahn");
  named.mutable_options()->set_objective("fastest");
  EXPECT_THAT(ExecutePlanRequest(named).status().message(), HasSubstr("unknown objective 'fastest'"));
  named.mutable_options()->set_objective("min_peak");
  absl::StatusOr<v1::Plan> kahn = ExecutePlanRequest(named);
  ASSERT_TRUE(kahn.ok()) << kahn.status();
  EXPECT_EQ(kahn->stats().algorithm(), "kahn");
}

// PrepareRequest resolves a given order by names or indices (not both) and
// sanitizes the options for the graph: the default time limit applied, a
// bad order refused.
TEST(PlanRequestTest, PrepareRequestResolvesAndSanitizes) {
  v1::PlanRequest request;
  *request.mutable_graph() = GraphSpecToProto(testing::TestGraph()
                                                  .Input("in", 1)
                                                  .Op("a", "Relu", {"in"}, {{"mid", 1}})
                                                  .Op("b", "Relu", {"mid"}, {{"out", 1}})
                                                  .Output("out")
                                                  .spec());
  absl::StatusOr<PreparedRequest> prepared = PrepareRequest(request);
  ASSERT_TRUE(prepared.ok()) << prepared.status();
  EXPECT_EQ(prepared->options->time_limit_seconds, kDefaultTimeLimitSeconds);
  EXPECT_TRUE(prepared->options->given_order.empty());
  request.mutable_options()->set_time_limit_seconds(3);
  request.mutable_given_order()->add_names("a");
  request.mutable_given_order()->add_names("b");
  prepared = PrepareRequest(request);
  ASSERT_TRUE(prepared.ok()) << prepared.status();
  EXPECT_EQ(prepared->options->time_limit_seconds, 3);
  EXPECT_EQ(prepared->options->given_order, (std::vector<OpId>{0, 1}));
  absl::StatusOr<v1::Plan> plan = ExecutePreparedRequest(*prepared);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->stats().algorithm(), "given");
  request.mutable_given_order()->add_indices(0);
  EXPECT_THAT(PrepareRequest(request).status().message(), HasSubstr("not both"));
  request.mutable_given_order()->Clear();
  request.mutable_given_order()->add_names("b");
  request.mutable_given_order()->add_names("a");
  EXPECT_EQ(PrepareRequest(request).status().code(), absl::StatusCode::kInvalidArgument);
  request.mutable_given_order()->Clear();
  request.mutable_given_order()->add_names("nope");
  EXPECT_THAT(PrepareRequest(request).status().message(), HasSubstr("unknown op 'nope'"));
}

// RefreshBaselines puts the graph's own baselines (and their traffic) into
// a plan whose baselines were blanked, keeping the plan's own traffic.
TEST(PlanRequestTest, RefreshBaselinesRecomputesThem) {
  std::mt19937 rng(5);
  v1::PlanRequest request;
  *request.mutable_graph() = GraphSpecToProto(testing::RandomDag(15, rng));
  request.mutable_options()->add_onchip_bytes(64);
  absl::StatusOr<PreparedRequest> prepared = PrepareRequest(request);
  ASSERT_TRUE(prepared.ok()) << prepared.status();
  absl::StatusOr<v1::Plan> fresh = ExecutePreparedRequest(*prepared);
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  v1::Plan blanked = *fresh;
  blanked.clear_baselines();
  blanked.mutable_traffic()->DeleteSubrange(1, blanked.traffic_size() - 1);
  ASSERT_TRUE(RefreshBaselines(prepared->graph, prepared->options, &blanked).ok());
  EXPECT_EQ(blanked.baselines().SerializeAsString(), fresh->baselines().SerializeAsString());
  ASSERT_EQ(blanked.traffic_size(), fresh->traffic_size());
  for (int i = 0; i < fresh->traffic_size(); ++i) {
    EXPECT_EQ(blanked.traffic(i).SerializeAsString(), fresh->traffic(i).SerializeAsString()) << i;
  }
}

v1::PlanRequest RewriteRequest() {
  v1::PlanRequest request;
  request.set_onnx_model(Branches(4, 16, 2).Bytes());
  request.set_model_name("branches");
  request.mutable_options()->set_rewrite(true);
  request.mutable_options()->set_time_limit_seconds(5);
  return request;
}

std::vector<std::string> OrderNames(const v1::Plan& plan) {
  return std::vector<std::string>(plan.order_names().begin(), plan.order_names().end());
}

// The server's path (PrepareRequest, then ExecutePreparedRequest) plans a
// rewrite request as PlanWithRewrites does, and as ExecutePlanRequest does.
TEST(PlanRequestTest, RewriteGoesThroughPrepareAndExecute) {
  const v1::PlanRequest request = RewriteRequest();
  absl::StatusOr<PreparedRequest> prepared = PrepareRequest(request);
  ASSERT_TRUE(prepared.ok()) << prepared.status();
  EXPECT_TRUE(prepared->options->rewrite);
  EXPECT_EQ(prepared->graph.num_ops(), 6);  // the model as given
  EXPECT_EQ(prepared->graph.name(), "branches");
  EXPECT_EQ(prepared->onnx_model, request.onnx_model());
  absl::StatusOr<v1::Plan> plan = ExecutePreparedRequest(*prepared);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_TRUE(plan->has_rewrite());
  EXPECT_EQ(plan->model(), "branches");
  EXPECT_EQ(plan->nodes(), 11);  // 4 branches, 4 partial Convs, 3 Adds
  EXPECT_EQ(plan->rewrite().sites_applied(), 1);
  EXPECT_EQ(plan->rewrite().peak_bytes_with(), plan->peak_bytes());
  EXPECT_LT(plan->peak_bytes(), plan->rewrite().peak_bytes_without());
  EXPECT_TRUE(plan->stats().phase_ms().contains("rewrite"));
  EXPECT_FALSE(plan->steps().empty());

  PlanOptions options;
  options.time_limit_seconds = 5;
  options.rewrite = true;
  absl::StatusOr<RewrittenPlan> direct = PlanWithRewrites(request.onnx_model(), {}, "branches", options);
  ASSERT_TRUE(direct.ok()) << direct.status();
  EXPECT_EQ(plan->peak_bytes(), direct->plan.profile.peak_bytes);
  EXPECT_EQ(plan->rewrite().peak_bytes_without(), direct->report.peak_bytes_without);
  std::vector<std::string> direct_order;
  for (OpId u : direct->plan.order) direct_order.push_back(direct->graph.op(u).name);
  EXPECT_EQ(OrderNames(*plan), direct_order);

  absl::StatusOr<v1::Plan> whole = ExecutePlanRequest(request);
  ASSERT_TRUE(whole.ok()) << whole.status();
  EXPECT_EQ(OrderNames(*whole), OrderNames(*plan));
  EXPECT_EQ(whole->peak_bytes(), plan->peak_bytes());
  EXPECT_EQ(whole->rewrite().recipe().SerializeAsString(), plan->rewrite().recipe().SerializeAsString());
  EXPECT_TRUE(whole->stats().phase_ms().contains("import"));
}

// What the caller sets on the prepared options after reading the request
// (score_only, cancellation, the deadline) holds for the rewrite's plans.
TEST(PlanRequestTest, RewriteHonoursTheJobsContext) {
  absl::StatusOr<PreparedRequest> prepared = PrepareRequest(RewriteRequest());
  ASSERT_TRUE(prepared.ok()) << prepared.status();
  prepared->options.set_score_only(true);
  absl::StatusOr<v1::Plan> score = ExecutePreparedRequest(*prepared);
  ASSERT_TRUE(score.ok()) << score.status();
  EXPECT_TRUE(score->steps().empty());
  EXPECT_FALSE(score->has_arena());
  EXPECT_EQ(score->rewrite().sites_applied(), 1);

  std::atomic<bool> cancelled{true};
  prepared->options.set_cancelled(&cancelled);
  EXPECT_EQ(ExecutePreparedRequest(*prepared).status().code(), absl::StatusCode::kCancelled);

  // A deadline already past: no search time for any plan, which says so.
  prepared->options.set_cancelled(nullptr);
  prepared->options.set_deadline(std::chrono::steady_clock::now() - std::chrono::seconds(1));
  absl::StatusOr<v1::Plan> late = ExecutePreparedRequest(*prepared);
  ASSERT_TRUE(late.ok()) << late.status();
  EXPECT_FALSE(late->fallbacks().empty());
}

// PrepareRequest keeps the rewrite's checks: ONNX only, no given order, no
// sparsity levels.
TEST(PlanRequestTest, PrepareRefusesWhatARewriteCannotDo) {
  v1::PlanRequest ordered = RewriteRequest();
  ordered.mutable_given_order()->add_indices(0);
  EXPECT_EQ(PrepareRequest(ordered).status(), GivenOrderWithRewriteError());
  v1::PlanRequest graph;
  *graph.mutable_graph() =
      GraphSpecToProto(testing::TestGraph().Input("in", 1).Op("a", "Relu", {"in"}, {{"out", 1}}).Output("out").spec());
  graph.mutable_options()->set_rewrite(true);
  EXPECT_THAT(PrepareRequest(graph).status().message(), HasSubstr("ONNX models only"));
  v1::PlanRequest with_levels = RewriteRequest();
  with_levels.mutable_options()->add_levels()->set_name("dense");
  EXPECT_THAT(PrepareRequest(with_levels).status().message(), HasSubstr("cannot be combined yet"));
  // Without rewrite nothing of the model is kept beside its graph.
  v1::PlanRequest plain = RewriteRequest();
  plain.mutable_options()->set_rewrite(false);
  absl::StatusOr<PreparedRequest> prepared = PrepareRequest(plain);
  ASSERT_TRUE(prepared.ok()) << prepared.status();
  EXPECT_TRUE(prepared->onnx_model.empty());
  absl::StatusOr<v1::Plan> plan = ExecutePreparedRequest(*prepared);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_FALSE(plan->has_rewrite());
  EXPECT_EQ(plan->nodes(), 6);
}

}  // namespace
}  // namespace serenity
