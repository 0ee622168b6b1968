#include "client/plan_output.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace serenity {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// A plan from the cache says where its time went: this call's time and the
// solve time of the call that computed it, never "solve 695 ms, total 2 ms".
TEST(PlanOutputTest, SummaryTimeSaysWhenThePlanCameFromTheCache) {
  v1::Plan plan;
  plan.set_model("m");
  plan.mutable_stats()->set_solve_ms(695.25);
  plan.mutable_stats()->set_total_ms(2.11);
  plan.mutable_stats()->set_cache("local");
  EXPECT_THAT(PlanSummary(plan), HasSubstr("2.11 ms from the server's cache (solved in 695.25 ms when first planned)"));
  plan.mutable_stats()->set_cache("shared");
  EXPECT_THAT(PlanSummary(plan), HasSubstr("from the shared cache"));
  plan.mutable_stats()->set_cache("miss");
  plan.mutable_stats()->set_total_ms(701.5);
  const std::string computed = PlanSummary(plan);
  EXPECT_THAT(computed, HasSubstr("solve 695.25 ms, total 701.50 ms"));
  EXPECT_THAT(computed, Not(HasSubstr("cache")));
}

// A plan with rewriting prints one rewrite line (and why no site was found,
// when none was); a plan without prints none.
TEST(PlanOutputTest, RewriteLine) {
  v1::Plan plan;
  plan.set_model("m");
  EXPECT_THAT(PlanSummary(plan), Not(HasSubstr("rewrite")));
  v1::RewriteReport* r = plan.mutable_rewrite();
  r->set_sites_found(3);
  r->set_sites_applied(2);
  r->set_ops_before(10);
  r->set_ops_after(16);
  r->set_peak_bytes_without(123456);
  r->set_certificate_without(v1::CERTIFICATE_OPTIMAL);
  r->add_notes("Conv 'c' not rewritten: ...");
  const std::string summary = PlanSummary(plan);
  EXPECT_THAT(summary, HasSubstr("rewrite      2 of 3 Concat->Conv sites applied (greedy), 10 -> 16 ops; peak "
                                 "without 123,456 bytes (optimal)\n"));
  EXPECT_THAT(summary, Not(HasSubstr("not rewritten")));
  r->set_sites_found(0);
  r->set_sites_applied(0);
  r->set_notes(0, "no Concat -> Conv site: the graph has no Concat");
  EXPECT_THAT(PlanSummary(plan), HasSubstr("\n             no Concat -> Conv site: the graph has no Concat\n"));
}

// Phases that fell back are shown, in the summary and in the JSON, with
// each phase's time.
TEST(PlanOutputTest, FallbacksAndPhaseTimesAreShown) {
  v1::Plan plan;
  plan.set_model("m");
  v1::PhaseFallback* fallback = plan.add_fallbacks();
  fallback->set_phase("arena");
  fallback->set_reason("time_limit");
  fallback->set_used("greedy placement");
  (*plan.mutable_stats()->mutable_phase_ms())["arena"] = 12.5;
  EXPECT_THAT(PlanSummary(plan), HasSubstr("fell back    arena (time_limit): greedy placement"));
  const nlohmann::ordered_json j = PlanJsonLine("m.onnx", plan);
  ASSERT_EQ(j["fallbacks"].size(), 1u);
  EXPECT_EQ(j["fallbacks"][0]["phase"], "arena");
  EXPECT_EQ(j["fallbacks"][0]["used"], "greedy placement");
  EXPECT_EQ(j["stats"]["phase_ms"]["arena"], 12.5);
  EXPECT_THAT(PlanSummary(v1::Plan()), Not(HasSubstr("fell back")));
}

// The JSON line: schema_version and source first, then the Plan's fields,
// step_bytes and the baselines' step_bytes included.
TEST(PlanOutputTest, JsonLineFramesThePlanMessage) {
  v1::Plan plan;
  plan.set_model("m");
  plan.set_peak_bytes(300);
  plan.add_step_bytes(100);
  plan.add_step_bytes(300);
  plan.set_certificate(v1::CERTIFICATE_OPTIMAL);
  plan.mutable_baselines()->mutable_file_order()->add_step_bytes(400);
  const nlohmann::ordered_json j = PlanJsonLine("-", plan);
  auto it = j.begin();
  EXPECT_EQ(it.key(), "schema_version");
  EXPECT_EQ(it.value(), 1);
  ++it;
  EXPECT_EQ(it.key(), "source");
  EXPECT_EQ(it.value(), "-");
  ++it;
  EXPECT_EQ(it.key(), "model");
  EXPECT_EQ(j["step_bytes"], nlohmann::ordered_json::array({100, 300}));
  EXPECT_EQ(j["certificate"], "optimal");
  EXPECT_EQ(j["baselines"]["file_order"]["step_bytes"], nlohmann::ordered_json::array({400}));
}

// The summary and the table name the certificate as the JSON does.
TEST(PlanOutputTest, CertificateNamesInSummaryAndTable) {
  v1::Plan plan;
  plan.set_model("m");
  plan.set_certificate(v1::CERTIFICATE_BEST_FOUND);
  plan.mutable_stats()->set_algorithm("auto");
  EXPECT_THAT(PlanSummary(plan), HasSubstr("order        auto, certificate best_found\n"));
  v1::Plan other = plan;
  other.set_certificate(v1::CERTIFICATE_OPTIMAL);
  const std::string table = PlanTable({plan, other});
  EXPECT_THAT(table, HasSubstr("best_found"));
  EXPECT_THAT(table, HasSubstr("optimal"));
  EXPECT_THAT(table, Not(HasSubstr("CERTIFICATE")));
}

}  // namespace
}  // namespace serenity
