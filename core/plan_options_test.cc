#include "core/plan_options.h"

#include <functional>
#include <random>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/test_graph.h"

namespace serenity {
namespace {

using ::testing::HasSubstr;

// Every algorithm's name parses back to it; the list of names is the
// table's, and an unknown name is refused with that list.
TEST(PlanOptionsTest, AlgorithmNamesRoundTrip) {
  ASSERT_EQ(PlanAlgorithms().size(), 13u);
  for (size_t i = 0; i < PlanAlgorithms().size(); ++i) {
    const Algorithm algorithm = static_cast<Algorithm>(i);
    EXPECT_EQ(PlanAlgorithms()[i], AlgorithmName(algorithm));
    absl::StatusOr<Algorithm> parsed = ParseAlgorithm(AlgorithmName(algorithm));
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(*parsed, algorithm);
  }
  EXPECT_STREQ(AlgorithmName(Algorithm::kAuto), "auto");
  EXPECT_STREQ(AlgorithmName(Algorithm::kDpDcAsb), "dp+dc+asb");
  absl::StatusOr<Algorithm> magic = ParseAlgorithm("magic");
  EXPECT_EQ(magic.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(magic.status().message(), HasSubstr("unknown algorithm 'magic'; choose one of: auto, relaxed, dp,"));
  EXPECT_THAT(magic.status().message(), HasSubstr("inductor, xla"));
  EXPECT_FALSE(ParseAlgorithm("").ok());
  EXPECT_FALSE(ParseAlgorithm("Auto").ok());
}

// The baseline algorithms name their baseline, by the baseline table's
// name; the others name none.
TEST(PlanOptionsTest, BaselineAlgorithmsNameTheirBaseline) {
  int baselines = 0;
  for (size_t i = 0; i < PlanAlgorithms().size(); ++i) {
    const Algorithm algorithm = static_cast<Algorithm>(i);
    std::optional<Baseline> baseline = AlgorithmBaseline(algorithm);
    if (!baseline.has_value()) continue;
    ++baselines;
    EXPECT_STREQ(AlgorithmName(algorithm), BaselineName(*baseline));
  }
  EXPECT_EQ(baselines, static_cast<int>(kNumBaselines));
  EXPECT_FALSE(AlgorithmBaseline(Algorithm::kBaseline).has_value());
  EXPECT_EQ(AlgorithmBaseline(Algorithm::kKahn), Baseline::kKahn);
}

TEST(PlanOptionsTest, ObjectiveNamesRoundTrip) {
  EXPECT_EQ(*ParseObjective("min_peak"), Objective::kMinPeak);
  EXPECT_EQ(*ParseObjective("fit"), Objective::kFit);
  EXPECT_EQ(*ParseObjective("time"), Objective::kTime);
  EXPECT_STREQ(ObjectiveName(Objective::kMinPeak), "min_peak");
  EXPECT_STREQ(ObjectiveName(Objective::kFit), "fit");
  EXPECT_STREQ(ObjectiveName(Objective::kTime), "time");
  absl::StatusOr<Objective> fastest = ParseObjective("fastest");
  EXPECT_EQ(fastest.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(fastest.status().message(), "unknown objective 'fastest'; choose min_peak, fit or time");
}

// Sanitizing checks what ValidatePlanOptions checks and the given order
// against the graph, and applies the default time limit.
TEST(PlanOptionsTest, SanitizeChecksAndDefaults) {
  const Graph g = testing::TestGraph()
                      .Input("in", 1)
                      .Op("a", "Relu", {"in"}, {{"mid", 1}})
                      .Op("b", "Relu", {"mid"}, {{"out", 1}})
                      .Output("out")
                      .Build();
  absl::StatusOr<SanitizedOptions> plain = SanitizePlanOptions(g, PlanOptions());
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ((*plain)->time_limit_seconds, kDefaultTimeLimitSeconds);
  PlanOptions options;
  options.time_limit_seconds = 2.5;
  EXPECT_EQ(SanitizePlanOptions(g, options).value()->time_limit_seconds, 2.5);
  options.time_limit_seconds = -1;
  EXPECT_EQ(SanitizePlanOptions(g, options).value()->time_limit_seconds, kDefaultTimeLimitSeconds);

  auto refused = [&](const PlanOptions& bad) { return std::string(SanitizePlanOptions(g, bad).status().message()); };
  PlanOptions bad;
  bad.alignment = 0;
  EXPECT_THAT(refused(bad), HasSubstr("alignment"));
  bad = PlanOptions();
  bad.objective = Objective::kFit;
  EXPECT_THAT(refused(bad), HasSubstr("needs a memory budget"));
  bad.memory_budget_bytes = 10;
  EXPECT_TRUE(SanitizePlanOptions(g, bad).ok());
  bad = PlanOptions();
  bad.memory_budget_bytes = -1;
  EXPECT_THAT(refused(bad), HasSubstr("must not be negative"));
  bad = PlanOptions();
  bad.max_search_states = 0;
  EXPECT_THAT(refused(bad), HasSubstr("max_search_states"));
  bad = PlanOptions();
  bad.onchip_bytes = {0};
  EXPECT_THAT(refused(bad), HasSubstr("on-chip"));
  bad = PlanOptions();
  bad.finish_seconds = -1;
  EXPECT_THAT(refused(bad), HasSubstr("finish_seconds"));
  bad = PlanOptions();
  bad.step_time_limit_seconds = 0;
  EXPECT_THAT(refused(bad), HasSubstr("per-step"));
  bad = PlanOptions();
  bad.given_order = {1, 0};  // b before a
  EXPECT_EQ(SanitizePlanOptions(g, bad).status().code(), absl::StatusCode::kInvalidArgument);
  bad.given_order = {0, 1};
  EXPECT_TRUE(SanitizePlanOptions(g, bad).ok());
}

// The setters keep sanitized options valid: a non-positive time limit
// becomes the default, the state cap stays at least 1 and only lowers.
TEST(PlanOptionsTest, SettersKeepOptionsValid) {
  const Graph g = testing::TestGraph().Input("in", 1).Op("a", "Relu", {"in"}, {{"out", 1}}).Output("out").Build();
  SanitizedOptions options = *SanitizePlanOptions(g, PlanOptions());
  options.set_time_limit_seconds(0);
  EXPECT_EQ(options->time_limit_seconds, kDefaultTimeLimitSeconds);
  options.set_time_limit_seconds(3);
  EXPECT_EQ(options->time_limit_seconds, 3);
  const int64_t states = options->max_search_states;
  options.CapMaxSearchStates(states + 1);
  EXPECT_EQ(options->max_search_states, states);
  options.CapMaxSearchStates(50);
  EXPECT_EQ(options->max_search_states, 50);
  options.CapMaxSearchStates(0);
  EXPECT_EQ(options->max_search_states, 1);
  options.set_score_only(true);
  EXPECT_TRUE(options->score_only);
  EXPECT_TRUE(ValidatePlanOptions(options).ok());
}

TEST(PlanOptionsTest, TimeLimitOrDefault) {
  EXPECT_EQ(TimeLimitOrDefault(0), kDefaultTimeLimitSeconds);
  EXPECT_EQ(TimeLimitOrDefault(-3), kDefaultTimeLimitSeconds);
  EXPECT_EQ(TimeLimitOrDefault(0.5), 0.5);
}

}  // namespace
}  // namespace serenity

namespace serenity {
namespace {

// Memories and pins (issue 18) are checked once, here, with errors that
// name the problem; the first memory's capacity becomes the on-chip size.
TEST(PlanOptionsTest, MemoriesAndPinsAreChecked) {
  Graph g = *Graph::Build(testing::ReluChain(3));
  PlanOptions ok;
  ok.memories = {{"sram", 4096, 16}, {"dram", 1 << 20, 64}};
  ok.pins = {{"t0", "dram", -1}, {"t1", "sram", 0}};
  absl::StatusOr<SanitizedOptions> sanitized = SanitizePlanOptions(g, ok);
  ASSERT_TRUE(sanitized.ok()) << sanitized.status();
  EXPECT_EQ((*sanitized)->onchip_bytes, std::vector<int64_t>{4096});
  ok.onchip_bytes = {1000, 2000};
  EXPECT_EQ((*SanitizePlanOptions(g, ok))->onchip_bytes, (std::vector<int64_t>{1000, 2000}));

  const auto refused = [&](const std::function<void(PlanOptions&)>& change, const std::string& words) {
    PlanOptions options = ok;
    change(options);
    absl::StatusOr<SanitizedOptions> s = SanitizePlanOptions(g, options);
    ASSERT_FALSE(s.ok()) << words;
    EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(s.status().message()), HasSubstr(words));
  };
  refused([](PlanOptions& o) { o.memory_budget_bytes = 100; }, "their capacities are the budgets");
  refused([](PlanOptions& o) { o.memory_model.concat_in_place = true; }, "concat_in_place");
  refused([](PlanOptions& o) { o.memories[1].name = "sram"; }, "memory 'sram' twice");
  refused([](PlanOptions& o) { o.memories[0].name = ""; }, "every memory needs a name");
  refused([](PlanOptions& o) { o.memories[0].capacity_bytes = 0; }, "'sram' needs a capacity from 1 byte");
  refused([](PlanOptions& o) { o.memories[0].capacity_bytes = (int64_t{1} << 62) + 1; }, "to 2^62 bytes");
  refused([](PlanOptions& o) { o.memories[1].alignment = 0; }, "'dram' needs an alignment from 1 byte");
  refused([](PlanOptions& o) { o.memories[0].alignment = 8192; }, "'sram' needs an alignment from 1 byte to its");
  refused([](PlanOptions& o) { o.memories.resize(65, {"m", 1, 1}); }, "65 memories: a plan takes at most 64");
  refused([](PlanOptions& o) { o.memories.clear(); }, "pins need memories");
  refused([](PlanOptions& o) { o.pins[0].memory = "flash"; }, "pinned to memory 'flash', which is not given");
  refused([](PlanOptions& o) { o.pins[1].tensor = "t0"; }, "tensor 't0' is pinned twice");
  refused([](PlanOptions& o) { o.pins[1].offset = -5; }, "negative offset");
  refused([](PlanOptions& o) { o.rewrite = true; }, "pins cannot be combined with rewrite");
  refused([](PlanOptions& o) { o.pins.resize(4097, {"t0", "sram", -1}); }, "4097 pins: a plan takes at most 4096");
  refused([](PlanOptions& o) { o.pins[0].tensor = "nope"; }, "pinned tensor 'nope' is not a tensor of the graph");
}

}  // namespace
}  // namespace serenity
