#include "server/scheduling_backend.h"

#include <algorithm>
#include <mutex>
#include <random>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/thread_pool.h"
#include "core/onnx/onnx_import.h"
#include "core/plan_request.h"
#include "core/rewrite/choose.h"
#include "core/rewrite/concat_conv.h"
#include "core/rewrite/test_model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/plan_verifier.h"
#include "tests/testing/test_graph.h"

namespace serenity {
namespace {

using ::testing::HasSubstr;

// The same graph with every op and tensor renamed and the op list shuffled.
GraphSpec RenamedAndShuffled(GraphSpec spec, std::mt19937& rng) {
  auto rename = [](const std::string& name) { return name.empty() ? name : "renamed/" + name + "/x"; };
  for (TensorSpec& t : spec.tensors) t.name = rename(t.name);
  for (OpSpec& o : spec.ops) {
    o.name = rename(o.name);
    for (std::string& in : o.inputs) in = rename(in);
    for (std::string& out : o.outputs) out = rename(out);
  }
  for (std::string& in : spec.inputs) in = rename(in);
  for (std::string& out : spec.outputs) out = rename(out);
  std::shuffle(spec.ops.begin(), spec.ops.end(), rng);
  std::shuffle(spec.tensors.begin(), spec.tensors.end(), rng);
  return spec;
}

v1::PlanRequest RequestFor(const GraphSpec& spec) {
  v1::PlanRequest request;
  *request.mutable_graph() = GraphSpecToProto(spec);
  return request;
}

Graph BuildFrom(const v1::PlanRequest& request) { return *GraphFromRequest(request); }

v1::PlanRequest OnnxRequest(const std::string& model, bool rewrite) {
  v1::PlanRequest request;
  request.set_onnx_model(model);
  request.mutable_options()->set_rewrite(rewrite);
  request.mutable_options()->set_time_limit_seconds(5);
  return request;
}

CallContext SecondsLeft(double seconds, const std::atomic<bool>* cancelled = nullptr) {
  CallContext call;
  call.seconds_left = seconds;
  call.cancelled = cancelled;
  return call;
}

class SchedulingBackendTest : public ::testing::Test {
 protected:
  SchedulingBackendTest()
      : cache_(64 << 20, nullptr, &metrics_), memo_(8 << 20), backend_(&pool_, &cache_, &metrics_, {}, &memo_) {}

  // serenity_cache_lookups_total{tier, result}.
  double Lookups(const std::string& tier, const std::string& result) {
    for (const prometheus::MetricFamily& family : metrics_.registry()->Collect()) {
      if (family.name != "serenity_cache_lookups_total") continue;
      for (const prometheus::ClientMetric& metric : family.metric) {
        int matched = 0;
        for (const prometheus::ClientMetric::Label& label : metric.label) {
          matched += (label.name == "tier" && label.value == tier) || (label.name == "result" && label.value == result);
        }
        if (matched == 2) return metric.counter.value;
      }
    }
    return 0;
  }

  ServerMetrics metrics_;
  ThreadPool pool_{2};
  PlanCache cache_;
  RequestMemo memo_;
  SchedulingBackend backend_;
};

TEST_F(SchedulingBackendTest, SecondRequestHitsTheLocalCacheWithTheSameAnswer) {
  std::mt19937 rng(5);
  const GraphSpec spec = testing::RandomDag(14, rng);
  absl::StatusOr<v1::Plan> first = backend_.Answer(RequestFor(spec), false);
  absl::StatusOr<v1::Plan> second = backend_.Answer(RequestFor(spec), false);
  ASSERT_TRUE(first.ok() && second.ok()) << first.status() << second.status();
  EXPECT_EQ(first->stats().cache(), "miss");
  EXPECT_EQ(second->stats().cache(), "local");
  EXPECT_EQ(first->plan_id(), second->plan_id());
  EXPECT_EQ(first->plan_id().size(), 32u);
  EXPECT_EQ(first->order().size(), second->order().size());
  EXPECT_TRUE(std::equal(first->order().begin(), first->order().end(), second->order().begin()));
  EXPECT_EQ(first->peak_bytes(), second->peak_bytes());
  EXPECT_TRUE(testing::VerifyPlan(BuildFrom(RequestFor(spec)), *second).ok());
}

// A repeat of the same request bytes is answered from the memo, with the
// same plan; a renamed copy misses the memo but hits the cache.
TEST_F(SchedulingBackendTest, RepeatedRequestBytesAreAnsweredFromTheMemo) {
  std::mt19937 rng(8);
  const GraphSpec spec = testing::RandomDag(12, rng);
  absl::StatusOr<v1::Plan> first = backend_.Answer(RequestFor(spec), false);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(Lookups("request", "miss"), 1);
  EXPECT_EQ(memo_.entries(), 1);
  absl::StatusOr<v1::Plan> again = backend_.Answer(RequestFor(spec), false);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(Lookups("request", "hit"), 1);
  EXPECT_EQ(Lookups("local", "hit"), 0);  // the cache was not consulted
  EXPECT_EQ(again->stats().cache(), "local");
  EXPECT_EQ(again->plan_id(), first->plan_id());
  EXPECT_TRUE(std::equal(first->order().begin(), first->order().end(), again->order().begin(), again->order().end()));
  EXPECT_TRUE(testing::VerifyPlan(BuildFrom(RequestFor(spec)), *again).ok());

  std::mt19937 shuffle(3);
  const GraphSpec renamed = RenamedAndShuffled(spec, shuffle);
  absl::StatusOr<v1::Plan> other = backend_.Answer(RequestFor(renamed), false);
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(Lookups("request", "miss"), 2);
  EXPECT_EQ(Lookups("local", "hit"), 1);
  // The same stored plan, but a plan_id of its own: plan_ids carry names.
  EXPECT_NE(other->plan_id(), first->plan_id());
  EXPECT_TRUE(testing::VerifyPlan(BuildFrom(RequestFor(renamed)), *other).ok());
  // Now memoized in its own names.
  absl::StatusOr<v1::Plan> other_again = backend_.Answer(RequestFor(renamed), false);
  ASSERT_TRUE(other_again.ok());
  EXPECT_EQ(Lookups("request", "hit"), 2);
  EXPECT_TRUE(testing::VerifyPlan(BuildFrom(RequestFor(renamed)), *other_again).ok());
}

// The service checks the memo before queueing a job, then Answer checks it
// again: one call that misses counts one miss.
TEST_F(SchedulingBackendTest, AnswerRepeatCountsOnlyHits) {
  std::mt19937 rng(9);
  const v1::PlanRequest request = RequestFor(testing::RandomDag(8, rng));
  v1::Plan repeat;
  EXPECT_FALSE(backend_.AnswerRepeat(request, false, SecondsLeft(10), &repeat));
  EXPECT_EQ(Lookups("request", "miss"), 0);
  ASSERT_TRUE(backend_.Answer(request, false).ok());
  EXPECT_EQ(Lookups("request", "miss"), 1);
  ASSERT_TRUE(backend_.AnswerRepeat(request, false, SecondsLeft(10), &repeat));
  EXPECT_EQ(repeat.stats().cache(), "local");
  EXPECT_EQ(Lookups("request", "hit"), 1);
  EXPECT_EQ(Lookups("request", "miss"), 1);
  EXPECT_EQ(repeat.peak_bytes(), backend_.Answer(request, false)->peak_bytes());
}

// A memoized reply stands only while the cache holds the plan it came from:
// the score-only entry behind a memoized score is replaced by a full plan,
// and the next score comes from the cache's new entry.
TEST_F(SchedulingBackendTest, MemoDefersToABetterCacheEntry) {
  std::mt19937 rng(22);
  const GraphSpec spec = testing::RandomDag(10, rng);
  ASSERT_TRUE(backend_.Answer(RequestFor(spec), true).ok());
  ASSERT_EQ(backend_.Answer(RequestFor(spec), true)->stats().cache(), "local");
  EXPECT_EQ(Lookups("request", "hit"), 1);
  ASSERT_EQ(backend_.Answer(RequestFor(spec), false)->stats().cache(), "miss");
  const double local_hits = Lookups("local", "hit");
  absl::StatusOr<v1::Plan> score = backend_.Answer(RequestFor(spec), true);
  ASSERT_TRUE(score.ok());
  EXPECT_EQ(score->stats().cache(), "local");
  EXPECT_EQ(Lookups("request", "hit"), 1);  // the memo declined
  EXPECT_EQ(Lookups("local", "hit"), local_hits + 1);
}

// A renamed graph with a shuffled op list hits, and the plan it gets is in
// its own names and indices: the independent verifier accepts it, and the
// baselines describe its own file order.
TEST_F(SchedulingBackendTest, RenamedAndPermutedGraphsHitWithTheirOwnNames) {
  std::mt19937 rng(9);
  for (int trial = 0; trial < 40; ++trial) {
    const GraphSpec spec = testing::RandomDag(4 + trial % 12, rng);
    ASSERT_TRUE(backend_.Answer(RequestFor(spec), false).ok());
    const v1::PlanRequest other = RequestFor(RenamedAndShuffled(spec, rng));
    absl::StatusOr<v1::Plan> hit = backend_.Answer(other, false);
    ASSERT_TRUE(hit.ok()) << hit.status();
    EXPECT_EQ(hit->stats().cache(), "local") << "trial " << trial;
    const Graph graph = BuildFrom(other);
    absl::Status verified = testing::VerifyPlan(graph, *hit);
    EXPECT_TRUE(verified.ok()) << verified << " trial " << trial;
    // Planned from scratch (no cache), the caller's graph has the same
    // optimal peak and the same baselines.
    absl::StatusOr<v1::Plan> fresh = ExecutePlanRequest(other);
    ASSERT_TRUE(fresh.ok());
    EXPECT_EQ(hit->peak_bytes(), fresh->peak_bytes());
    EXPECT_EQ(hit->baselines().file_order().peak_bytes(), fresh->baselines().file_order().peak_bytes());
    EXPECT_EQ(hit->baselines().kahn().peak_bytes(), fresh->baselines().kahn().peak_bytes());
    EXPECT_EQ(hit->baselines().file_order().arena_bytes(), fresh->baselines().file_order().arena_bytes());
    EXPECT_EQ(hit->model(), graph.name());
  }
}

TEST_F(SchedulingBackendTest, ChangesThatAlterTheAnswerMiss) {
  testing::TestGraph base;
  base.Input("in", 100).Op("a", "Relu", {"in"}, {{"x", 200}}).Op("b", "Relu", {"in"}, {{"y", 300}});
  base.Op("c", "Add", {"x", "y"}, {{"out", 50}}).Output("out");
  const GraphSpec spec = base.spec();
  ASSERT_TRUE(backend_.Answer(RequestFor(spec), false).ok());

  GraphSpec bigger = spec;
  for (TensorSpec& t : bigger.tensors) {
    if (t.name == "y") t.bytes = 301;
  }
  GraphSpec rewired = spec;
  for (OpSpec& o : rewired.ops) {
    if (o.name == "b") o.inputs = {"x"};
  }
  for (const GraphSpec& changed : {bigger, rewired}) {
    absl::StatusOr<v1::Plan> plan = backend_.Answer(RequestFor(changed), false);
    ASSERT_TRUE(plan.ok()) << plan.status();
    EXPECT_EQ(plan->stats().cache(), "miss");
  }
  v1::PlanRequest in_place = RequestFor(spec);
  in_place.mutable_options()->mutable_memory_model()->set_in_place(true);
  v1::PlanRequest budget = RequestFor(spec);  // under fit, the budget is in the key
  budget.mutable_options()->set_objective("fit");
  budget.mutable_options()->set_memory_budget_bytes(1000);
  v1::PlanRequest alignment = RequestFor(spec);
  alignment.mutable_options()->set_alignment(16);
  for (const v1::PlanRequest& request : {in_place, budget, alignment}) {
    absl::StatusOr<v1::Plan> plan = backend_.Answer(request, false);
    ASSERT_TRUE(plan.ok());
    EXPECT_EQ(plan->stats().cache(), "miss");
  }
}

// Under min_peak one plan answers every budget, with its budget fields
// recomputed: a Score against a budget reuses a Plan made without one.
TEST_F(SchedulingBackendTest, BudgetsShareOnePlanUnderMinPeak) {
  std::mt19937 rng(31);
  const GraphSpec spec = testing::RandomDag(12, rng);
  absl::StatusOr<v1::Plan> plain = backend_.Answer(RequestFor(spec), false);
  ASSERT_TRUE(plain.ok()) << plain.status();
  const int64_t peak = plain->peak_bytes();
  for (int64_t budget : {peak - 1, peak, peak + 1000}) {
    v1::PlanRequest request = RequestFor(spec);
    request.mutable_options()->set_memory_budget_bytes(budget);
    for (bool score_only : {true, false}) {
      absl::StatusOr<v1::Plan> plan = backend_.Answer(request, score_only);
      ASSERT_TRUE(plan.ok()) << plan.status();
      // A full plan whose arena exceeds a budget its peak fits needs moves,
      // which the plain entry lacks: that one is planned afresh.
      const bool needs_moves = !score_only && peak <= budget && plain->arena().size_bytes() > budget;
      EXPECT_EQ(plan->stats().cache(), needs_moves ? "miss" : "local") << budget << " " << score_only;
      EXPECT_EQ(plan->peak_bytes(), peak);
      EXPECT_EQ(plan->memory_budget_bytes(), budget);
      EXPECT_EQ(plan->feasible(), peak <= budget);
      EXPECT_EQ(plan->headroom_bytes(), budget - peak);
      if (!score_only) {
        EXPECT_EQ(plan->arena_fits_budget(), plan->arena().size_bytes() <= budget || plan->moves_size() > 0);
        EXPECT_TRUE(testing::VerifyPlan(BuildFrom(request), *plan).ok());
      }
    }
  }
  // And back: the plain request still gets the plain answer.
  absl::StatusOr<v1::Plan> again = backend_.Answer(RequestFor(spec), false);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->memory_budget_bytes(), 0);
  EXPECT_TRUE(again->feasible());
  EXPECT_EQ(again->headroom_bytes(), 0);
}

TEST_F(SchedulingBackendTest, ScoreOnlyEntriesServeScoresButNotFullPlans) {
  std::mt19937 rng(21);
  const GraphSpec spec = testing::RandomDag(10, rng);
  absl::StatusOr<v1::Plan> score = backend_.Answer(RequestFor(spec), true);
  ASSERT_TRUE(score.ok());
  EXPECT_EQ(score->stats().cache(), "miss");
  EXPECT_EQ(score->steps_size(), 0);
  EXPECT_EQ(backend_.Answer(RequestFor(spec), true)->stats().cache(), "local");
  absl::StatusOr<v1::Plan> full = backend_.Answer(RequestFor(spec), false);
  ASSERT_TRUE(full.ok());
  EXPECT_EQ(full->stats().cache(), "miss");
  EXPECT_EQ(full->steps_size(), full->nodes());
  EXPECT_EQ(full->peak_bytes(), score->peak_bytes());
  // The full plan replaced the score-only entry and now serves both; a score
  // from it carries only the score's part, like a fresh one.
  EXPECT_EQ(backend_.Answer(RequestFor(spec), false)->stats().cache(), "local");
  absl::StatusOr<v1::Plan> rescore = backend_.Answer(RequestFor(spec), true);
  ASSERT_TRUE(rescore.ok());
  EXPECT_EQ(rescore->stats().cache(), "local");
  EXPECT_EQ(rescore->steps_size(), 0);
  EXPECT_FALSE(rescore->has_arena());
  EXPECT_EQ(rescore->peak_bytes(), full->peak_bytes());
}

// A rewrite request is planned afresh each time: it never gets the plain
// request's cache entry (a plan of the graph as given), nor leaves one that
// a plain request of the same model would get.
TEST_F(SchedulingBackendTest, RewriteAndPlainRequestsOfOneModelShareNoCacheEntry) {
  const std::string model = Branches(4, 16, 2).Bytes();
  absl::StatusOr<v1::Plan> plain = backend_.Answer(OnnxRequest(model, false), false);
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(plain->stats().cache(), "miss");
  EXPECT_FALSE(plain->has_rewrite());
  EXPECT_EQ(plain->nodes(), 6);

  absl::StatusOr<v1::Plan> rewritten = backend_.Answer(OnnxRequest(model, true), false);
  ASSERT_TRUE(rewritten.ok()) << rewritten.status();
  EXPECT_EQ(rewritten->stats().cache(), "miss");
  EXPECT_TRUE(rewritten->plan_id().empty());  // not stored, so not fetchable
  ASSERT_TRUE(rewritten->has_rewrite());
  EXPECT_EQ(rewritten->rewrite().sites_applied(), 1);
  EXPECT_EQ(rewritten->nodes(), 11);
  EXPECT_EQ(rewritten->rewrite().peak_bytes_without(), plain->peak_bytes());
  EXPECT_LT(rewritten->peak_bytes(), plain->peak_bytes());
  EXPECT_TRUE(rewritten->stats().phase_ms().contains("import"));
  // The plan is a valid plan of the rewritten model.
  absl::StatusOr<std::string> applied = ApplyRecipe(model, RewriteRecipeFromProto(rewritten->rewrite().recipe()));
  ASSERT_TRUE(applied.ok()) << applied.status();
  absl::StatusOr<Graph> rewritten_graph = ImportOnnxModel(*applied, {});
  ASSERT_TRUE(rewritten_graph.ok()) << rewritten_graph.status();
  EXPECT_TRUE(testing::VerifyPlan(*rewritten_graph, *rewritten).ok())
      << testing::VerifyPlan(*rewritten_graph, *rewritten);

  // The plain entry still answers plain requests, with the plain plan.
  absl::StatusOr<v1::Plan> plain_again = backend_.Answer(OnnxRequest(model, false), false);
  ASSERT_TRUE(plain_again.ok());
  EXPECT_EQ(plain_again->stats().cache(), "local");
  EXPECT_FALSE(plain_again->has_rewrite());
  EXPECT_EQ(plain_again->peak_bytes(), plain->peak_bytes());
  // A repeat of the rewrite is planned again (the memo does not hold it
  // either), and a score of it is the rewritten graph's peak.
  v1::Plan reply;
  EXPECT_FALSE(backend_.AnswerRepeat(OnnxRequest(model, true), false, {}, &reply));
  absl::StatusOr<v1::Plan> again = backend_.Answer(OnnxRequest(model, true), false);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->stats().cache(), "miss");
  EXPECT_EQ(again->peak_bytes(), rewritten->peak_bytes());
  absl::StatusOr<v1::Plan> score = backend_.Answer(OnnxRequest(model, true), true);
  ASSERT_TRUE(score.ok());
  EXPECT_EQ(score->peak_bytes(), rewritten->peak_bytes());
  EXPECT_EQ(score->steps_size(), 0);
  EXPECT_TRUE(score->has_rewrite());
  // Only the plain requests looked in the memo: plain_again found its reply.
  EXPECT_EQ(Lookups("request", "hit"), 1);
  EXPECT_EQ(Lookups("request", "miss"), 1);
}

// A rewrite job holds more than a plain one (copies of the model, the
// rewritten graph): it is charged up front, and refused when the job's
// memory cannot hold it: for good above the job limit, for now when the
// server cannot grant it.
TEST(SchedulingBackendLimitsTest, ARewriteIsChargedItsCopiesOfTheModel) {
  BackendOptions limits;
  limits.max_job_bytes = 1 << 20;
  SchedulingBackend small(nullptr, nullptr, nullptr, limits);
  const std::string model = Branches(4, 16, 2).Bytes();
  absl::StatusOr<v1::Plan> plain = small.Answer(OnnxRequest(model, false), false);
  ASSERT_TRUE(plain.ok()) << plain.status();
  // More than the job limit: never, so not to be retried.
  absl::StatusOr<v1::Plan> rewritten = small.Answer(OnnxRequest(model, true), false);
  EXPECT_EQ(rewritten.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(rewritten.status().message()), HasSubstr("--max-job-mb"));
  // Within the job limit but not granted now (the server's pool is full):
  // ResourceExhausted, to be retried.
  limits.max_job_bytes = 64 << 20;
  SchedulingBackend busy(nullptr, nullptr, nullptr, limits);
  CallContext call;
  call.granted_bytes = 1 << 20;
  call.grow_memory = [](int64_t) { return false; };
  rewritten = busy.Answer(OnnxRequest(model, true), false, call);
  EXPECT_EQ(rewritten.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(rewritten.status().message()), HasSubstr("the rewrite's copies of the model"));
  ASSERT_TRUE(busy.Answer(OnnxRequest(model, false), false, call).ok());
  limits.max_job_bytes = 64 << 20;
  SchedulingBackend roomy(nullptr, nullptr, nullptr, limits);
  rewritten = roomy.Answer(OnnxRequest(model, true), false);
  ASSERT_TRUE(rewritten.ok()) << rewritten.status();
  EXPECT_EQ(rewritten->rewrite().sites_applied(), 1);
}

TEST_F(SchedulingBackendTest, GetPlanReturnsTheStoredPlan) {
  std::mt19937 rng(23);
  absl::StatusOr<v1::Plan> plan = backend_.Answer(RequestFor(testing::RandomDag(8, rng)), false);
  ASSERT_TRUE(plan.ok());
  absl::StatusOr<v1::Plan> again = backend_.GetPlan(plan->plan_id());
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->peak_bytes(), plan->peak_bytes());
  EXPECT_EQ(again->plan_id(), plan->plan_id());
  EXPECT_EQ(again->arena().size_bytes(), plan->arena().size_bytes());
  EXPECT_EQ(backend_.GetPlan(std::string(32, '0')).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(backend_.GetPlan("not-a-plan-id").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(SchedulingBackendTest, EnforcesTheServerLimits) {
  ServerMetrics metrics;
  BackendOptions limits;
  limits.max_ops = 5;
  SchedulingBackend small(nullptr, nullptr, &metrics, limits);
  std::mt19937 rng(29);
  absl::StatusOr<v1::Plan> plan = small.Answer(RequestFor(testing::RandomDag(6, rng)), false);
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(plan.status().message()), HasSubstr("at most 5"));
  EXPECT_EQ(small.Answer(RequestFor(testing::RandomDag(3, rng)), false, SecondsLeft(0)).status().code(),
            absl::StatusCode::kDeadlineExceeded);
  std::atomic<bool> cancelled{true};
  EXPECT_EQ(small.Answer(RequestFor(testing::RandomDag(3, rng)), false, SecondsLeft(10, &cancelled)).status().code(),
            absl::StatusCode::kCancelled);
  // Without a cache nothing is stored, so GetPlan finds nothing.
  EXPECT_EQ(small.GetPlan(std::string(32, 'a')).status().code(), absl::StatusCode::kNotFound);
}

// Many callers at once, on a few graphs: every answer verifies and equals
// the others for its graph (run under ThreadSanitizer by scripts/test.sh).
TEST_F(SchedulingBackendTest, ConcurrentCallersShareTheCacheSafely) {
  std::mt19937 rng(37);
  std::vector<GraphSpec> specs;
  for (int i = 0; i < 6; ++i) specs.push_back(testing::RandomDag(6 + i, rng));
  std::vector<std::vector<int64_t>> peaks(specs.size());
  std::mutex mu;
  std::vector<std::string> failures;
  std::vector<std::thread> callers;
  for (int t = 0; t < 8; ++t) {
    callers.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i) {
        const size_t k = static_cast<size_t>(t * 7 + i) % specs.size();
        const v1::PlanRequest request = RequestFor(specs[k]);
        absl::StatusOr<v1::Plan> plan = backend_.Answer(request, /*score_only=*/i % 3 == 0);
        std::lock_guard<std::mutex> lock(mu);
        if (!plan.ok()) {
          failures.push_back(plan.status().ToString());
          continue;
        }
        if (i % 3 != 0) {
          absl::Status verified = testing::VerifyPlan(BuildFrom(request), *plan);
          if (!verified.ok()) failures.push_back(verified.ToString());
        }
        peaks[k].push_back(plan->peak_bytes());
      }
    });
  }
  for (std::thread& caller : callers) caller.join();
  EXPECT_TRUE(failures.empty()) << failures.front();
  for (const std::vector<int64_t>& p : peaks) {
    ASSERT_FALSE(p.empty());
    EXPECT_EQ(*std::min_element(p.begin(), p.end()), *std::max_element(p.begin(), p.end()));
  }
}

TEST_F(SchedulingBackendTest, LruStaysWithinItsBytes) {
  ServerMetrics metrics;
  PlanCache tiny(20000, nullptr, &metrics);
  SchedulingBackend backend(nullptr, &tiny, &metrics, {});
  std::mt19937 rng(31);
  for (int i = 0; i < 60; ++i) ASSERT_TRUE(backend.Answer(RequestFor(testing::RandomDag(12, rng)), false).ok());
  EXPECT_LE(tiny.local_bytes(), 20000);
  EXPECT_GT(tiny.local_entries(), 0);
  EXPECT_LT(tiny.local_entries(), 60);
}

}  // namespace
}  // namespace serenity

namespace serenity {
namespace {

// --max-search-states caps what a request may ask: a request for 10^12
// states is planned as one for the cap (same cache entry), and one asking
// for nothing gets the cap too.
TEST(SchedulingBackendLimitsTest, TheServerCapsTheSearchStatesARequestAsks) {
  PlanCache cache(16 << 20, nullptr, nullptr);
  BackendOptions options;
  options.max_search_states = 50;
  SchedulingBackend backend(nullptr, &cache, nullptr, options);
  std::mt19937 rng(17);
  v1::PlanRequest request = RequestFor(testing::RandomDag(10, rng));
  request.mutable_options()->set_max_search_states(1'000'000'000'000);
  absl::StatusOr<v1::Plan> greedy = backend.Answer(request, false);
  ASSERT_TRUE(greedy.ok()) << greedy.status();
  EXPECT_EQ(greedy->stats().cache(), "miss");
  request.mutable_options()->set_max_search_states(50);
  EXPECT_EQ(backend.Answer(request, false)->stats().cache(), "local");
  request.mutable_options()->clear_max_search_states();
  EXPECT_EQ(backend.Answer(request, false)->stats().cache(), "local");
  request.mutable_options()->set_max_search_states(10);  // below the cap: its own plan
  EXPECT_EQ(backend.Answer(request, false)->stats().cache(), "miss");
  // The receipt keeps the cap the plan was made with: GetPlan finds it.
  absl::StatusOr<v1::Plan> again = backend.GetPlan(greedy->plan_id());
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->peak_bytes(), greedy->peak_bytes());
}

}  // namespace
}  // namespace serenity

namespace serenity {
namespace {

// A Graph message's explicit negative size is refused, not read as "from
// the shape".
TEST(SchedulingBackendLimitsTest, ANegativeTensorSizeIsRefused) {
  SchedulingBackend backend(nullptr, nullptr, nullptr, {});
  std::mt19937 rng(19);
  v1::PlanRequest request = RequestFor(testing::RandomDag(5, rng));
  request.mutable_graph()->mutable_tensors(0)->set_bytes(-1);
  absl::StatusOr<v1::Plan> plan = backend.Answer(request, false);
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(plan.status().message()), HasSubstr("negative bytes -1"));
}

}  // namespace
}  // namespace serenity
