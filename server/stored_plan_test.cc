#include "server/stored_plan.h"

#include <random>

#include "core/plan_proto.h"
#include "gtest/gtest.h"
#include "tests/testing/test_graph.h"

namespace serenity {
namespace {

v1::StoredPlan Entry(int64_t peak, v1::Certificate certificate, bool complete, double seconds) {
  v1::StoredPlan s;
  s.set_format(kStoredPlanFormat);
  s.mutable_plan()->set_peak_bytes(peak);
  s.mutable_plan()->set_certificate(certificate);
  s.set_complete(complete);
  s.set_time_limit_seconds(seconds);
  return s;
}

TEST(StoredPlanTest, KeysSeparateOptionsThatChangeTheAnswer) {
  std::mt19937 rng(3);
  Graph g = *Graph::Build(testing::RandomDag(10, rng));
  CanonicalGraph canonical = Canonicalize(g);
  PlanOptions base;
  const PlanKey key = MakePlanKey(canonical, base);
  EXPECT_EQ(key.id.size(), 32u);
  EXPECT_EQ(MakePlanKey(canonical, base).id, key.id);  // stable
  PlanOptions longer = base;
  longer.time_limit_seconds = 99;  // not part of the key
  longer.score_only = true;        // nor this: entries say whether they are complete
  EXPECT_EQ(MakePlanKey(canonical, longer).id, key.id);
  std::vector<PlanOptions> changed(9, base);
  changed[0].memory_model.alias_views = true;
  changed[1].memory_model.count_weights = true;
  changed[2].memory_model.in_place = true;
  changed[3].objective = Objective::kFit;  // and under fit, the budget is part of the key too
  changed[3].memory_budget_bytes = 100;
  changed[4].alignment = 16;
  changed[5].algorithm = Algorithm::kGreedy;
  changed[6].onchip_bytes = {1024};
  changed[7].given_order = {};
  for (OpId u = 0; u < g.num_ops(); ++u) changed[7].given_order.push_back(u);
  changed[8].rewrite = true;  // its plan is the rewritten graph's
  for (size_t i = 0; i < changed.size(); ++i) {
    EXPECT_NE(MakePlanKey(canonical, changed[i]).id, key.id) << i;
  }
  PlanOptions fit_other_budget = changed[3];
  fit_other_budget.memory_budget_bytes = 200;
  EXPECT_NE(MakePlanKey(canonical, fit_other_budget).id, MakePlanKey(canonical, changed[3]).id);
  // Under min_peak the order does not depend on the budget: one key.
  PlanOptions budget = base;
  budget.memory_budget_bytes = 100;
  EXPECT_EQ(MakePlanKey(canonical, budget).id, key.id);
  EXPECT_EQ(MakePlanKey(canonical, budget).memory_budget_bytes, 100);
}

// A plan_id is a MAC of the tenant, the key and the names under the secret:
// stable, 32 hex digits, and different when any of them changes.
TEST(StoredPlanTest, PlanIdsDependOnTheSecretTheTenantAndTheNames) {
  std::mt19937 rng(7);
  GraphSpec spec = testing::RandomDag(8, rng);
  const Graph g = *Graph::Build(spec);
  const CanonicalGraph canonical = Canonicalize(g);
  const PlanKey key = MakePlanKey(canonical, PlanOptions());
  const std::string id = MakePlanId("secret-0123456789", "alpha", key, canonical, g);
  EXPECT_EQ(id.size(), 32u);
  EXPECT_EQ(id.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_EQ(MakePlanId("secret-0123456789", "alpha", key, canonical, g), id);
  EXPECT_NE(MakePlanId("secret-0123456780", "alpha", key, canonical, g), id);
  EXPECT_NE(MakePlanId("secret-0123456789", "beta", key, canonical, g), id);
  EXPECT_NE(id, key.id);
  spec.ops[0].name += "-renamed";
  const Graph renamed = *Graph::Build(spec);
  const CanonicalGraph renamed_canonical = Canonicalize(renamed);
  ASSERT_EQ(MakePlanKey(renamed_canonical, PlanOptions()).id, key.id);  // same structure
  EXPECT_NE(MakePlanId("secret-0123456789", "alpha", key, renamed_canonical, renamed), id);
}

TEST(StoredPlanTest, AnswersOnlyMatchingCompleteAndSufficientlySearchedEntries) {
  PlanKey key{"id", "graph", "options"};
  v1::StoredPlan optimal = Entry(10, v1::CERTIFICATE_OPTIMAL, true, 1);
  optimal.set_graph("graph");
  optimal.set_options("options");
  EXPECT_TRUE(StoredPlanAnswers(optimal, key, true, 100));  // a proof serves any time limit
  v1::StoredPlan other_graph = optimal;
  other_graph.set_graph("graph2");
  EXPECT_FALSE(StoredPlanAnswers(other_graph, key, false, 1));
  v1::StoredPlan other_format = optimal;
  other_format.set_format(kStoredPlanFormat + 1);
  EXPECT_FALSE(StoredPlanAnswers(other_format, key, false, 1));
  v1::StoredPlan score_only = optimal;
  score_only.set_complete(false);
  EXPECT_TRUE(StoredPlanAnswers(score_only, key, false, 1));
  EXPECT_FALSE(StoredPlanAnswers(score_only, key, true, 1));
  v1::StoredPlan best_found = optimal;
  best_found.mutable_plan()->set_certificate(v1::CERTIFICATE_BEST_FOUND);
  best_found.set_time_limit_seconds(5);
  EXPECT_TRUE(StoredPlanAnswers(best_found, key, true, 5));
  EXPECT_FALSE(StoredPlanAnswers(best_found, key, true, 6));  // a longer search may do better
}

TEST(StoredPlanTest, BetterMeansLowerPeakThenProofThenCompleteness) {
  const v1::StoredPlan low = Entry(10, v1::CERTIFICATE_BEST_FOUND, false, 1);
  const v1::StoredPlan high = Entry(11, v1::CERTIFICATE_OPTIMAL, true, 1);
  EXPECT_TRUE(StoredPlanIsBetter(low, high));
  EXPECT_FALSE(StoredPlanIsBetter(high, low));
  const v1::StoredPlan proven = Entry(10, v1::CERTIFICATE_OPTIMAL, false, 1);
  EXPECT_TRUE(StoredPlanIsBetter(proven, low));
  const v1::StoredPlan complete = Entry(10, v1::CERTIFICATE_OPTIMAL, true, 1);
  EXPECT_TRUE(StoredPlanIsBetter(complete, proven));
  EXPECT_FALSE(StoredPlanIsBetter(proven, complete));
  EXPECT_FALSE(StoredPlanIsBetter(complete, complete));
}

TEST(StoredPlanTest, RemapRefusesAnEntryForAnotherGraph) {
  std::mt19937 rng(7);
  Graph a = *Graph::Build(testing::RandomDag(8, rng));
  Graph b = *Graph::Build(testing::RandomDag(9, rng));
  PlanOptions options;
  absl::StatusOr<Plan> plan = PlanGraph(a, options);
  ASSERT_TRUE(plan.ok());
  const CanonicalGraph ca = Canonicalize(a);
  const v1::StoredPlan stored =
      MakeStoredPlan(MakePlanKey(ca, options), ca, a, PlanToProto(a, *plan, options), options);
  const SanitizedOptions sanitized = *SanitizePlanOptions(a, options);
  EXPECT_TRUE(RemapStoredPlan(stored, ca, a, sanitized).ok());
  EXPECT_EQ(RemapStoredPlan(stored, Canonicalize(b), b, sanitized).status().code(), absl::StatusCode::kInternal);
}

}  // namespace
}  // namespace serenity
