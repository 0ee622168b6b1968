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

}  // namespace
}  // namespace serenity
