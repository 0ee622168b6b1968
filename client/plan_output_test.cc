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
  r->set_choice("peak_rounds");
  const std::string summary = PlanSummary(plan);
  EXPECT_THAT(summary, HasSubstr("rewrite      2 of 3 rewrite sites applied (chosen peak_rounds), 10 -> 16 ops; peak "
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

// The sparsity report (issue 20) is shown only when present: levels, the
// nested saving, the densest level within a budget and each switch point.
TEST(PlanOutputTest, SparsityReportIsSummarizedWhenPresent) {
  v1::Plan plan;
  plan.set_model("m");
  EXPECT_THAT(PlanSummary(plan), Not(HasSubstr("sparsity")));
  v1::SparsityReport* r = plan.mutable_sparsity();
  r->set_one_plan_for_all_levels(true);
  r->set_activation_peak_bytes(5000);
  for (const char* name : {"full", "half"}) {
    v1::SparsityLevelReport* l = r->add_levels();
    l->set_name(name);
    l->set_time_us(100);
    l->set_csr_weight_bytes(std::string(name) == "full" ? 8000 : 4000);
    l->set_peak_bytes(5000 + l->csr_weight_bytes());
    l->set_fits_budget(std::string(name) == "half");
  }
  r->set_separate_weight_bytes(12000);
  r->set_nested_weight_bytes(9000);
  r->set_nested_saving_bytes(3000);
  r->set_densest_fitting_level("half");
  v1::SparsitySwitchPoint* p = r->add_switch_points();
  p->set_op("conv2");
  p->set_step(3);
  for (int i = 0; i < 6; ++i) {
    v1::TensorPlacement* t = p->add_live();
    t->set_tensor("t" + std::to_string(i));
    t->set_offset(1024 * i);
    t->set_size(1024);
  }
  p->set_live_bytes(6144);
  v1::SparsitySwitch* s = p->add_switches();
  s->set_from_level("full");
  s->set_to_level("half");
  s->set_peak_bytes(13000);
  s->set_time_us(75.5);
  plan.set_memory_budget_bytes(10000);
  const std::string summary = PlanSummary(plan);
  EXPECT_THAT(summary, HasSubstr("one order and one arena serve every level"));
  EXPECT_THAT(summary, HasSubstr("nested CSR 9,000 bytes vs separate copies 12,000: 25.0% less"));
  EXPECT_THAT(summary, HasSubstr("densest level within the budget: half"));
  EXPECT_THAT(summary,
              HasSubstr("switch after conv2 (step 3): 6 live tensors, 6,144 bytes, offsets kept: t0@0 t1@1,024"));
  EXPECT_THAT(summary, HasSubstr("+2 more"));
  EXPECT_THAT(summary, HasSubstr("full -> half"));
  EXPECT_THAT(summary, HasSubstr("75.5 us  over"));
}

// The summary shows each chosen primitive's layout, the inputs it converts
// and the time spent converting.
TEST(PlanOutputTest, SummaryShowsLayoutConversions) {
  v1::Plan plan;
  v1::ChosenPrimitive* c = plan.mutable_time()->add_primitives();
  c->set_op("conv2");
  c->set_name("winograd");
  c->set_layout("NHWC");
  v1::ChosenTransform* x = c->add_transforms();
  x->set_tensor("y1");
  x->set_from_layout("NCHW");
  x->set_time_us(2.5);
  x->set_workspace_bytes(4096);
  plan.mutable_time()->set_transform_time_us(2.5);
  const std::string summary = PlanSummary(plan);
  EXPECT_THAT(summary, HasSubstr("conv2: winograd, NHWC ("));
  EXPECT_THAT(summary, HasSubstr("converts y1 from NCHW (2.500 us, 4,096 bytes)"));
  EXPECT_THAT(summary, HasSubstr("of which 2.500 us converting layouts"));
}

// A chosen primitive that keeps its op's weights transformed shows their
// bytes; one that keeps them as given (weight_bytes 0) does not.
TEST(PlanOutputTest, SummaryShowsTransformedWeights) {
  v1::Plan plan;
  v1::ChosenPrimitive* c = plan.mutable_time()->add_primitives();
  c->set_op("conv1");
  c->set_name("winograd23");
  c->set_time_us(1.5);
  c->set_workspace_bytes(2048);
  c->set_weight_bytes(1179840);
  c = plan.mutable_time()->add_primitives();
  c->set_op("conv2");
  c->set_name("direct");
  c->set_time_us(4);
  const std::string summary = PlanSummary(plan);
  EXPECT_THAT(summary,
              HasSubstr("conv1: winograd23 (1.500 us, 2,048 bytes of workspace, 1,179,840 bytes of weights)\n"));
  EXPECT_THAT(summary, HasSubstr("conv2: direct (4.000 us, 0 bytes of workspace)\n"));
}

// The time block says how many ops' alternatives came from the built-in
// catalogue, when any did.
TEST(PlanOutputTest, CatalogueLineWhenTheCatalogueGaveAlternatives) {
  v1::Plan plan;
  plan.set_model("m");
  plan.mutable_time()->set_time_us(10);
  EXPECT_THAT(PlanSummary(plan), Not(HasSubstr("catalogue")));
  plan.mutable_time()->set_catalogue_ops(7);
  EXPECT_THAT(PlanSummary(plan),
              HasSubstr("\n             catalogue 7 ops (alternatives from the built-in cost model"));
}

// --primitive-baselines: one row for the plan and one per baseline.
TEST(PlanOutputTest, SummaryPrintsThePrimitiveBaselines) {
  v1::Plan plan;
  plan.set_model("m");
  plan.set_peak_bytes(220);
  plan.set_feasible(true);
  plan.set_certificate(v1::CERTIFICATE_BASELINE);
  plan.set_memory_budget_bytes(1000);
  v1::TimeReport* t = plan.mutable_time();
  t->set_time_us(20);
  t->set_summed_footprint_bytes(340);
  EXPECT_THAT(PlanSummary(plan), Not(HasSubstr("baselines    other ways")));
  v1::PrimitiveBaseline* b = t->add_baselines();
  b->set_name("file_order");
  b->set_time_us(40);
  b->set_peak_bytes(1210);
  b->set_certificate(v1::CERTIFICATE_BASELINE);
  b->set_fits(false);
  b->set_summed_footprint_bytes(2280);
  const std::string summary = PlanSummary(plan);
  EXPECT_THAT(summary, HasSubstr("baselines    other ways to choose"));
  EXPECT_THAT(summary, HasSubstr("  together (this plan)             20.000            220 baseline   yes   "
                                 "             340 yes\n"));
  EXPECT_THAT(summary, HasSubstr("  file_order                       40.000          1,210 baseline   no    "
                                 "           2,280 no\n"));
}

}  // namespace
}  // namespace serenity
