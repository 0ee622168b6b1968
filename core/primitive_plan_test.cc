#include "core/primitive_plan.h"

#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "core/plan_proto.h"
#include "core/plan_request.h"
#include "core/schedule/primitive_weights.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/orders.h"
#include "tests/testing/plan_verifier.h"
#include "tests/testing/test_graph.h"

namespace serenity {
namespace {

using ::testing::HasSubstr;

// A request for `spec` with objective time and `budget`.
v1::PlanRequest TimeRequest(const GraphSpec& spec, int64_t budget) {
  v1::PlanRequest request;
  *request.mutable_graph() = GraphSpecToProto(spec);
  request.mutable_options()->set_objective("time");
  request.mutable_options()->set_memory_budget_bytes(budget);
  request.mutable_options()->set_alignment(1);
  return request;
}

// Checks a time plan against `graph` from the reply alone: every op with
// alternatives named once in plan.time.primitives with one of its own
// alternatives, the time their sum, and the plan (order, peak, arena) valid
// for the graph with those workspaces (the independent verifier). Returns
// that graph.
Graph CheckTimePlan(const Graph& graph, const v1::Plan& plan) {
  EXPECT_TRUE(plan.has_time());
  std::vector<int64_t> workspace(graph.num_ops());
  for (OpId u = 0; u < graph.num_ops(); ++u) workspace[u] = graph.op(u).workspace_bytes;
  absl::flat_hash_map<std::string, int> named;
  double time = 0, converting = 0;
  std::vector<int> choice(graph.num_ops(), -1);
  for (const v1::ChosenPrimitive& c : plan.time().primitives()) {
    std::optional<OpId> u = graph.FindOp(c.op());
    EXPECT_TRUE(u.has_value()) << c.op();
    if (!u.has_value()) continue;
    EXPECT_EQ(++named[c.op()], 1) << c.op();
    const std::vector<Primitive>& alternatives = graph.op(*u).alternatives;
    for (int a = 0; a < static_cast<int>(alternatives.size()); ++a) {
      if (alternatives[a].name != c.name()) continue;
      choice[*u] = a;
      EXPECT_EQ(alternatives[a].time_us, c.time_us());
      EXPECT_EQ(alternatives[a].workspace_bytes, c.workspace_bytes());
      EXPECT_EQ(alternatives[a].layout, c.layout());
      EXPECT_EQ(alternatives[a].weight_bytes, c.weight_bytes());
    }
    EXPECT_GE(choice[*u], 0) << c.op() << " has no alternative " << c.name();
    workspace[*u] = c.workspace_bytes();
    time += c.time_us();
    for (const v1::ChosenTransform& t : c.transforms()) {
      workspace[*u] += t.workspace_bytes();
      time += t.time_us();
      converting += t.time_us();
    }
  }
  for (const Op& op : graph.ops()) EXPECT_EQ(named.contains(op.name), !op.alternatives.empty()) << op.name;
  // The conversions reported are those of the choice (computed on their own).
  const testing::ChoiceCost cost = testing::CostOfChoice(graph, choice);
  EXPECT_EQ(workspace, cost.workspace);
  EXPECT_NEAR(time, cost.time, 1e-6);
  EXPECT_NEAR(plan.time().transform_time_us(), converting, 1e-6);
  EXPECT_NEAR(plan.time().time_us(), time, 1e-6);
  EXPECT_LE(plan.time().lower_bound_us(), plan.time().time_us() + 1e-6);
  Graph chosen = graph.WithWorkspaces(workspace);
  if (plan.memory_model().count_weights()) {
    // The weights resident with the choice (computed on their own) at
    // every step, and the verifier on the graph with them.
    EXPECT_EQ(plan.weight_bytes(), cost.weight_bytes);
    std::vector<OpId> order(plan.order().begin(), plan.order().end());
    EXPECT_EQ(plan.peak_bytes(), testing::NaivePeak(chosen, order, false, false) + cost.weight_bytes);
    chosen = ChosenGraph(graph, choice);
    EXPECT_EQ(chosen.weight_bytes(), cost.weight_bytes);
  }
  absl::Status verified = testing::VerifyPlan(chosen, plan);
  EXPECT_TRUE(verified.ok()) << verified;
  return chosen;
}

// The least peak of `order` over every choice of alternatives, by brute
// force (workspaces, conversions and, with `count_weights`, the resident
// weights computed on their own).
int64_t LeastPeakForOrder(const Graph& graph, const std::vector<OpId>& order, bool count_weights) {
  std::vector<int> choice(graph.num_ops(), 0);
  int64_t least = std::numeric_limits<int64_t>::max();
  std::function<void(int)> choose = [&](int u) {
    if (u == graph.num_ops()) {
      const testing::ChoiceCost cost = testing::CostOfChoice(graph, choice);
      least = std::min(least, testing::NaivePeak(graph.WithWorkspaces(cost.workspace), order, false, false) +
                                  (count_weights ? cost.weight_bytes : 0));
      return;
    }
    const int count = std::max<int>(1, static_cast<int>(graph.op(u).alternatives.size()));
    for (choice[u] = 0; choice[u] < count; ++choice[u]) choose(u + 1);
  };
  choose(0);
  return least;
}

// One time request for `spec` within `budget` checked: the plan verified
// (CheckTimePlan); when the brute force finds a choice within the budget,
// feasible, optimal and at its least time; when none, feasible false,
// certificate baseline, with the least peak of any choice for the order
// given back. Returns whether a choice fits; the plan in `*out`.
bool CheckRequest(const GraphSpec& spec, int64_t budget, bool count_weights, const std::string& trial, v1::Plan* out) {
  SCOPED_TRACE(trial);
  const Graph graph = *Graph::Build(spec);
  v1::PlanRequest request = TimeRequest(spec, budget);
  request.mutable_options()->mutable_memory_model()->set_count_weights(count_weights);
  absl::StatusOr<v1::Plan> plan = ExecutePlanRequest(request);
  EXPECT_TRUE(plan.ok()) << plan.status();
  if (!plan.ok()) return false;
  CheckTimePlan(graph, *plan);
  *out = *plan;
  const double least = testing::BruteForceLeastTime(graph, false, false, budget, count_weights);
  if (std::isinf(least)) {
    EXPECT_FALSE(plan->feasible());
    EXPECT_EQ(plan->time().certificate(), v1::CERTIFICATE_BASELINE);
    EXPECT_EQ(plan->peak_bytes(),
              LeastPeakForOrder(graph, std::vector<OpId>(plan->order().begin(), plan->order().end()), count_weights));
    return false;
  }
  EXPECT_TRUE(plan->feasible());
  EXPECT_LE(plan->peak_bytes(), budget);
  EXPECT_EQ(plan->time().certificate(), v1::CERTIFICATE_OPTIMAL);
  EXPECT_NEAR(plan->time().time_us(), least, 1e-6);
  return true;
}

// Random small graphs through the request path (CheckRequest).
TEST(PrimitivePlanTest, RequestsMatchBruteForce) {
  std::mt19937 rng(7);
  int optimal = 0, infeasible = 0;
  for (int trial = 0; trial < 200; ++trial) {
    GraphSpec spec = testing::RandomDag(3 + trial % 4, rng);
    testing::AddRandomAlternatives(&spec, rng);
    // Every third graph has layouts to convert between.
    if (trial % 3 == 2) testing::AddRandomLayouts(&spec, rng);
    // Every other graph has an input nobody reads: it dies after the first
    // step whichever op runs it (a forced-op rule once took it for a saving).
    if (trial % 2 == 1) testing::AddUnusedInput(&spec, "unused", 1 + static_cast<int64_t>(rng() % 150));
    const int64_t budget = 100 + static_cast<int64_t>(rng() % 400);
    v1::Plan plan;
    ++(CheckRequest(spec, budget, false, "trial " + std::to_string(trial), &plan) ? optimal : infeasible);
  }
  EXPECT_GT(optimal, 80);
  EXPECT_GT(infeasible, 30);
}

// With transformed weights counted (primitive_weights.h): CheckTimePlan
// verifies with the chosen weights, the brute force computes them on its
// own.
TEST(PrimitivePlanTest, RequestsWithWeightsMatchBruteForce) {
  std::mt19937 rng(17);
  int optimal = 0, infeasible = 0, transformed = 0;
  for (int trial = 0; trial < 150; ++trial) {
    GraphSpec spec = testing::RandomDag(3 + trial % 4, rng);
    testing::AddRandomAlternatives(&spec, rng);
    testing::AddRandomWeights(&spec, rng);
    if (trial % 3 == 2) testing::AddRandomLayouts(&spec, rng);
    const int64_t given_weights = Graph::Build(spec)->weight_bytes();
    const int64_t budget = given_weights + 60 + static_cast<int64_t>(rng() % 400);
    v1::Plan plan;
    if (!CheckRequest(spec, budget, true, "trial " + std::to_string(trial), &plan)) {
      ++infeasible;
      continue;
    }
    transformed += plan.weight_bytes() != given_weights;
    ++optimal;
  }
  EXPECT_GT(optimal, 60);
  EXPECT_GT(infeasible, 20);
  EXPECT_GT(transformed, 20);
}

// A graph's alternatives as Check* read them: op name -> alternatives.
Graph ChosenFrom(const Graph& graph, const google::protobuf::RepeatedPtrField<v1::ChosenPrimitive>& primitives,
                 double* time) {
  std::vector<int64_t> workspace(graph.num_ops());
  for (OpId u = 0; u < graph.num_ops(); ++u) workspace[u] = graph.op(u).workspace_bytes;
  *time = 0;
  for (const v1::ChosenPrimitive& c : primitives) {
    workspace[*graph.FindOp(c.op())] = c.workspace_bytes();
    *time += c.time_us();
    for (const v1::ChosenTransform& t : c.transforms()) {
      workspace[*graph.FindOp(c.op())] += t.workspace_bytes();
      *time += t.time_us();
    }
  }
  return graph.WithWorkspaces(workspace);
}

// --pareto through the request path: the frontier is the brute-force one,
// each point's order has the stated peak with its primitives (the
// independent NaivePeak) and time; max_time_us gives the least peak within
// the cap.
TEST(PrimitivePlanTest, ParetoAndTimeCapMatchBruteForce) {
  std::mt19937 rng(11);
  int fronts = 0;
  for (int trial = 0; trial < 80; ++trial) {
    GraphSpec spec = testing::RandomDag(3 + trial % 4, rng);
    testing::AddRandomAlternatives(&spec, rng, 2, 2, 2);
    if (trial % 3 == 2) testing::AddRandomLayouts(&spec, rng);
    // Every other graph has an input nobody reads: it dies after the first
    // step whichever op runs it (a forced-op rule once took it for a saving).
    if (trial % 2 == 1) testing::AddUnusedInput(&spec, "unused", 1 + static_cast<int64_t>(rng() % 150));
    const Graph graph = *Graph::Build(spec);
    const std::vector<std::pair<int64_t, double>> expected = testing::BruteForceTimeFrontier(graph, false, false);
    v1::PlanRequest request = TimeRequest(spec, 0);
    request.mutable_options()->set_objective("");
    request.mutable_options()->set_pareto(true);
    request.mutable_options()->set_max_pareto_points(100);
    absl::StatusOr<v1::Plan> plan = ExecutePlanRequest(request);
    ASSERT_TRUE(plan.ok()) << plan.status();
    CheckTimePlan(graph, *plan);
    const v1::TimeReport& time = plan->time();
    EXPECT_TRUE(time.pareto_proven());
    EXPECT_FALSE(time.pareto_thinned());
    ASSERT_EQ(time.pareto_size(), static_cast<int>(expected.size())) << "trial " << trial;
    for (int k = 0; k < time.pareto_size(); ++k) {
      const v1::ParetoPoint& point = time.pareto(k);
      EXPECT_EQ(point.peak_bytes(), expected[k].first) << "trial " << trial;
      EXPECT_NEAR(point.time_us(), expected[k].second, 1e-6) << "trial " << trial;
      double sum = 0;
      const Graph chosen = ChosenFrom(graph, point.primitives(), &sum);
      EXPECT_NEAR(sum, point.time_us(), 1e-6);
      std::vector<OpId> order;
      for (const std::string& name : point.order_names()) order.push_back(*graph.FindOp(name));
      ASSERT_TRUE(IsTopologicalOrder(graph, order));
      EXPECT_EQ(testing::NaivePeak(chosen, order, false, false), point.peak_bytes());
      EXPECT_GE(point.arena().size_bytes(), point.peak_bytes());
      // The point's arena, through the independent verifier: every live
      // buffer covered, none overlapping another live at the same step.
      v1::Plan as_plan;
      as_plan.set_nodes(graph.num_ops());
      for (OpId u : order) as_plan.add_order(u);
      *as_plan.mutable_order_names() = point.order_names();
      as_plan.set_peak_bytes(point.peak_bytes());
      *as_plan.mutable_memory_model() = plan->memory_model();
      *as_plan.mutable_arena() = point.arena();
      const absl::Status verified = testing::VerifyPlan(chosen, as_plan);
      EXPECT_TRUE(verified.ok()) << "trial " << trial << " point " << k << ": " << verified;
    }
    // The plan itself is the frontier's least peak.
    EXPECT_EQ(plan->peak_bytes(), expected.front().first);
    fronts += expected.size() >= 2;
    // A cap at the second fastest time: its least peak.
    if (expected.size() >= 2) {
      v1::PlanRequest capped = TimeRequest(spec, 0);
      capped.mutable_options()->set_objective("peak");
      capped.mutable_options()->set_max_time_us(expected[expected.size() - 2].second);
      absl::StatusOr<v1::Plan> within = ExecutePlanRequest(capped);
      ASSERT_TRUE(within.ok()) << within.status();
      CheckTimePlan(graph, *within);
      EXPECT_EQ(within->peak_bytes(), expected[expected.size() - 2].first) << "trial " << trial;
      EXPECT_LE(within->time().time_us(), expected[expected.size() - 2].second + 1e-6);
    }
  }
  EXPECT_GT(fronts, 20);
}

TEST(PrimitivePlanTest, ReportsTheChoiceAndItsBaselines) {
  const GraphSpec spec = testing::TwoBranchesWithKernels();
  absl::StatusOr<v1::Plan> plan = ExecutePlanRequest(TimeRequest(spec, 230));
  ASSERT_TRUE(plan.ok()) << plan.status();
  CheckTimePlan(*Graph::Build(spec), *plan);
  EXPECT_EQ(plan->stats().algorithm(), "time");
  EXPECT_EQ(plan->time().time_us(), 20);
  EXPECT_EQ(plan->time().certificate(), v1::CERTIFICATE_OPTIMAL);
  EXPECT_EQ(plan->time().fastest_everywhere_us(), 20);
  EXPECT_EQ(plan->time().least_workspace_everywhere_us(), 60);
  EXPECT_THAT(plan->order_names(), ::testing::ElementsAre("a", "c", "b", "d"));
  // A given order gets the fastest primitives that fit it, no search.
  v1::PlanRequest given = TimeRequest(spec, 230);
  for (const char* name : {"a", "b", "c", "d"}) given.mutable_given_order()->add_names(name);
  plan = ExecutePlanRequest(given);
  ASSERT_TRUE(plan.ok()) << plan.status();
  CheckTimePlan(*Graph::Build(spec), *plan);
  EXPECT_EQ(plan->time().time_us(), 40);
  EXPECT_EQ(plan->time().certificate(), v1::CERTIFICATE_BASELINE);
  EXPECT_THAT(plan->order_names(), ::testing::ElementsAre("a", "b", "c", "d"));
  // Below the least peak: feasible false, the least-workspace plan.
  plan = ExecutePlanRequest(TimeRequest(spec, 159));
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_FALSE(plan->feasible());
  EXPECT_EQ(plan->peak_bytes(), 160);
  EXPECT_EQ(plan->time().time_us(), 60);
}

// options.primitives replace the graph's alternatives for the ops named.
TEST(PrimitivePlanTest, RequestPrimitivesReplaceTheGraphs) {
  v1::PlanRequest request = TimeRequest(testing::TwoBranchesWithKernels(), 230);
  v1::OpPrimitives* b = request.mutable_options()->add_primitives();
  b->set_op("b");
  v1::Primitive* only = b->add_alternatives();
  only->set_name("fft");
  only->set_time_us(5);
  only->set_workspace_bytes(0);
  absl::StatusOr<v1::Plan> plan = ExecutePlanRequest(request);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->time().time_us(), 15);  // a winograd, b fft
  bool fft = false;
  for (const v1::ChosenPrimitive& c : plan->time().primitives()) fft = fft || (c.op() == "b" && c.name() == "fft");
  EXPECT_TRUE(fft);
}

// A graph's alternatives are read, and so checked, only by requests that
// ask for time: a missing layout transform or a weight_bytes with nothing
// to replace refuses those, not a plan of least peak.
TEST(PrimitivePlanTest, OnlyRequestsForTimeReadTheGraphsAlternatives) {
  GraphSpec spec = testing::TwoBranchesWithKernels();
  spec.ops[1].alternatives[0].layout = "A";  // b, which d reads
  spec.ops[3].alternatives = {{"only", 1, 0, "B", 0}};
  v1::PlanRequest layouts = TimeRequest(spec, 1000);
  EXPECT_THAT(std::string(ExecutePlanRequest(layouts).status().message()),
              HasSubstr("layout_transforms has no transform from 'A' to 'B'"));
  layouts.mutable_options()->set_objective("min_peak");
  layouts.mutable_options()->set_memory_budget_bytes(0);
  absl::StatusOr<v1::Plan> plan = ExecutePlanRequest(layouts);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_FALSE(plan->has_time());

  spec = testing::TwoBranchesWithKernels();
  spec.ops[0].alternatives[0].weight_bytes = 10;  // a reads no weight
  v1::PlanRequest weights = TimeRequest(spec, 1000);
  EXPECT_THAT(std::string(ExecutePlanRequest(weights).status().message()), HasSubstr("has no weight bytes of its own"));
  weights.mutable_options()->set_objective("min_peak");
  weights.mutable_options()->set_memory_budget_bytes(0);
  EXPECT_TRUE(ExecutePlanRequest(weights).ok());
}

TEST(PrimitivePlanTest, RefusesWhatItCannotDo) {
  const auto refused = [](v1::PlanRequest request) {
    return std::string(ExecutePlanRequest(request).status().message());
  };
  v1::PlanRequest no_budget = TimeRequest(testing::TwoBranchesWithKernels(), 0);
  EXPECT_THAT(refused(no_budget), HasSubstr("objective time needs a memory budget"));
  v1::PlanRequest algorithm = TimeRequest(testing::TwoBranchesWithKernels(), 230);
  algorithm.mutable_options()->set_algorithm("dp");
  EXPECT_THAT(refused(algorithm), HasSubstr("algorithm 'dp' does not apply"));
  v1::PlanRequest unknown = TimeRequest(testing::TwoBranchesWithKernels(), 230);
  unknown.mutable_options()->add_primitives()->set_op("nope");
  EXPECT_THAT(refused(unknown), HasSubstr("primitives name op 'nope', which the graph has not"));
  v1::PlanRequest twice = TimeRequest(testing::TwoBranchesWithKernels(), 230);
  twice.mutable_options()->add_primitives()->set_op("a");
  twice.mutable_options()->add_primitives()->set_op("a");
  EXPECT_THAT(refused(twice), HasSubstr("primitives name op 'a' twice"));
  v1::PlanRequest too_fast = TimeRequest(testing::TwoBranchesWithKernels(), 0);
  too_fast.mutable_options()->set_objective("peak");
  too_fast.mutable_options()->set_max_time_us(19);
  EXPECT_THAT(refused(too_fast), HasSubstr("takes 20 us in all, more than max_time_us (19)"));
  v1::PlanRequest pareto_given = TimeRequest(testing::TwoBranchesWithKernels(), 230);
  pareto_given.mutable_options()->set_pareto(true);
  pareto_given.mutable_given_order()->add_indices(0);
  pareto_given.mutable_given_order()->add_indices(1);
  pareto_given.mutable_given_order()->add_indices(2);
  pareto_given.mutable_given_order()->add_indices(3);
  EXPECT_THAT(refused(pareto_given), HasSubstr("cannot be combined with a given order"));
  v1::PlanRequest capped_time = TimeRequest(testing::TwoBranchesWithKernels(), 230);
  capped_time.mutable_options()->set_max_time_us(50);
  EXPECT_THAT(refused(capped_time), HasSubstr("objective 'time' does not apply"));
  v1::PlanRequest without_objective = TimeRequest(testing::TwoBranchesWithKernels(), 230);
  without_objective.mutable_options()->set_objective("min_peak");
  without_objective.mutable_options()->add_primitives()->set_op("a");
  EXPECT_THAT(refused(without_objective), HasSubstr("read only with objective time"));
  v1::PlanRequest bad = TimeRequest(testing::TwoBranchesWithKernels(), 230);
  v1::OpPrimitives* c = bad.mutable_options()->add_primitives();
  c->set_op("c");
  v1::Primitive* p = c->add_alternatives();
  p->set_name("k");
  p->set_time_us(std::numeric_limits<double>::quiet_NaN());
  EXPECT_THAT(refused(bad), HasSubstr("op 'c' alternative 'k' has time_us nan"));
}

}  // namespace
}  // namespace serenity
