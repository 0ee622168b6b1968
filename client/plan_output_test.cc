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
  const nlohmann::ordered_json j = PlanToJson(plan);
  ASSERT_EQ(j["fallbacks"].size(), 1u);
  EXPECT_EQ(j["fallbacks"][0]["phase"], "arena");
  EXPECT_EQ(j["fallbacks"][0]["used"], "greedy placement");
  EXPECT_EQ(j["stats"]["phase_ms"]["arena"], 12.5);
  EXPECT_THAT(PlanSummary(v1::Plan()), Not(HasSubstr("fell back")));
}

}  // namespace
}  // namespace serenity
