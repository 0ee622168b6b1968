#include "core/primitive_baselines.h"

#include <cmath>
#include <functional>
#include <iostream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "core/plan_proto.h"
#include "core/plan_request.h"
#include "core/schedule/layout_conversions.h"
#include "core/schedule/primitive_weights.h"
#include "core/schedule/time_search.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/orders.h"
#include "tests/testing/plan_verifier.h"
#include "tests/testing/test_graph.h"

namespace serenity {
namespace {

using ::testing::ElementsAreArray;

constexpr double kNone = std::numeric_limits<double>::infinity();

v1::PlanRequest TimeRequest(const GraphSpec& spec, int64_t budget, bool count_weights = false) {
  v1::PlanRequest request;
  *request.mutable_graph() = GraphSpecToProto(spec);
  request.mutable_options()->set_objective("time");
  request.mutable_options()->set_memory_budget_bytes(budget);
  request.mutable_options()->set_alignment(1);
  request.mutable_options()->set_primitive_baselines(true);
  request.mutable_options()->mutable_memory_model()->set_count_weights(count_weights);
  return request;
}

// --- The independent computations: every choice, every order, NaivePeak.

// Calls `visit` with every choice of one alternative per op (-1 for an op
// without).
void ForEachChoice(const Graph& graph, const std::function<void(const std::vector<int>&)>& visit) {
  std::vector<int> choice(graph.num_ops(), -1);
  std::function<void(OpId)> next = [&](OpId u) {
    if (u == graph.num_ops()) {
      visit(choice);
      return;
    }
    const int count = static_cast<int>(graph.op(u).alternatives.size());
    if (count == 0) return next(u + 1);
    for (int a = 0; a < count; ++a) {
      choice[u] = a;
      next(u + 1);
    }
    choice[u] = -1;
  };
  next(0);
}

std::vector<int64_t> Workspaces(const Graph& graph, const std::vector<int>& choice) {
  std::vector<int64_t> out(graph.num_ops());
  for (OpId u = 0; u < graph.num_ops(); ++u) {
    out[u] = choice[u] < 0 ? graph.op(u).workspace_bytes : graph.op(u).alternatives[choice[u]].workspace_bytes;
  }
  return out;
}

double Time(const Graph& graph, const std::vector<int>& choice) {
  double time = 0;
  for (OpId u = 0; u < graph.num_ops(); ++u) time += choice[u] < 0 ? 0 : graph.op(u).alternatives[choice[u]].time_us;
  return time;
}

// The weights resident with `choice` when counted (CostOfChoice's: an
// alternative's weight_bytes replaces its op's own weights), else 0.
int64_t Weights(const Graph& graph, const std::vector<int>& choice, bool count_weights) {
  return count_weights ? testing::CostOfChoice(graph, choice).weight_bytes : 0;
}

int64_t Footprint(const Graph& graph, const std::vector<int>& choice, bool count_weights) {
  int64_t bytes = Weights(graph, choice, count_weights);
  for (const Tensor& t : graph.tensors()) {
    if (!t.is_weight) bytes += t.bytes;
  }
  for (int64_t w : Workspaces(graph, choice)) bytes += w;
  return bytes;
}

// NaivePeak with the chosen workspaces, and the chosen weights resident at
// every step.
int64_t Peak(const Graph& graph, const std::vector<int>& choice, const std::vector<OpId>& order, bool count_weights) {
  return testing::NaivePeak(graph.WithWorkspaces(Workspaces(graph, choice)), order, false, false) +
         Weights(graph, choice, count_weights);
}

int64_t LeastPeak(const Graph& graph, const std::vector<int>& choice, bool count_weights) {
  int64_t least = std::numeric_limits<int64_t>::max();
  testing::ForEachTopologicalOrder(graph, [&](const std::vector<OpId>& order) {
    least = std::min(least, Peak(graph, choice, order, count_weights));
  });
  return least;
}

// The least time of a choice whose peak in `order` is within `budget`.
double BestForOrder(const Graph& graph, const std::vector<OpId>& order, int64_t budget, bool count_weights) {
  double best = kNone;
  ForEachChoice(graph, [&](const std::vector<int>& choice) {
    if (Peak(graph, choice, order, count_weights) <= budget) best = std::min(best, Time(graph, choice));
  });
  return best;
}

// Per op the alternative `better` prefers to all others.
std::vector<int> Preferred(const Graph& graph, const std::function<bool(const Primitive&, const Primitive&)>& better) {
  std::vector<int> out(graph.num_ops(), -1);
  for (OpId u = 0; u < graph.num_ops(); ++u) {
    const std::vector<Primitive>& alternatives = graph.op(u).alternatives;
    for (int a = 0; a < static_cast<int>(alternatives.size()); ++a) {
      if (out[u] < 0 || better(alternatives[a], alternatives[out[u]])) out[u] = a;
    }
  }
  return out;
}

bool Faster(const Primitive& a, const Primitive& b) {
  return a.time_us < b.time_us || (a.time_us == b.time_us && a.workspace_bytes < b.workspace_bytes);
}
bool Smaller(const Primitive& a, const Primitive& b) {
  return a.workspace_bytes < b.workspace_bytes || (a.workspace_bytes == b.workspace_bytes && a.time_us < b.time_us);
}

const v1::PrimitiveBaseline* Find(const v1::Plan& plan, const std::string& name) {
  for (const v1::PrimitiveBaseline& b : plan.time().baselines()) {
    if (b.name() == name) return &b;
  }
  return nullptr;
}

// A baseline without an order of its own: its time, its least peak (proven
// on graphs this small) and its footprint are those of `choice`.
void CheckSearched(const Graph& graph, const v1::Plan& plan, const std::string& name, const std::vector<int>& choice,
                   int64_t budget, bool count_weights, int trial) {
  const v1::PrimitiveBaseline* b = Find(plan, name);
  ASSERT_NE(b, nullptr) << name;
  EXPECT_NEAR(b->time_us(), Time(graph, choice), 1e-9) << name << ", trial " << trial;
  EXPECT_EQ(b->peak_bytes(), LeastPeak(graph, choice, count_weights)) << name << ", trial " << trial;
  EXPECT_EQ(b->certificate(), v1::CERTIFICATE_OPTIMAL) << name << ", trial " << trial;
  EXPECT_EQ(b->fits(), b->peak_bytes() <= budget) << name;
  EXPECT_EQ(b->summed_footprint_bytes(), Footprint(graph, choice, count_weights)) << name << ", trial " << trial;
}

// Per op the index of the alternative `time` reports for it (-1: none).
std::vector<int> ChoiceOf(const Graph& graph, const v1::TimeReport& time) {
  std::vector<int> chosen(graph.num_ops(), -1);
  for (const v1::ChosenPrimitive& c : time.primitives()) {
    const OpId u = *graph.FindOp(c.op());
    for (int a = 0; a < static_cast<int>(graph.op(u).alternatives.size()); ++a) {
      if (graph.op(u).alternatives[a].name == c.name()) chosen[u] = a;
    }
  }
  return chosen;
}

// Small random graphs through the request path: every baseline against its
// independent computation, and choosing together never slower than any
// baseline that fits.
TEST(PrimitiveBaselinesTest, MatchIndependentComputations) {
  std::mt19937 rng(1966);
  int together_faster = 0, summed_feasible = 0, file_order_fits = 0;
  for (int trial = 0; trial < 150; ++trial) {
    GraphSpec spec = testing::RandomDag(3 + trial % 3, rng);
    testing::AddRandomAlternatives(&spec, rng, 3, 1, 3, 40, 100);
    if (trial % 3 == 1) testing::AddUnusedInput(&spec, "unused", 1 + static_cast<int64_t>(rng() % 150));
    const bool count_weights = trial % 4 == 3;
    const Graph graph = *Graph::Build(spec);
    const int64_t budget = 100 + static_cast<int64_t>(rng() % 500);
    absl::StatusOr<v1::Plan> plan = ExecutePlanRequest(TimeRequest(spec, budget, count_weights));
    ASSERT_TRUE(plan.ok()) << plan.status();
    const v1::TimeReport& time = plan->time();

    // The names, in their order.
    std::vector<std::string> names;
    for (const Op& op : graph.ops()) {
      for (const Primitive& p : op.alternatives) names.push_back(p.name);
    }
    std::sort(names.begin(), names.end());
    names.erase(std::unique(names.begin(), names.end()), names.end());
    std::vector<std::string> expected_names = {"fastest", "least_workspace"};
    for (const std::string& name : names) expected_names.push_back("one:" + name);
    for (const char* name : {"order_first", "primitives_first", "file_order", "summed_footprint"}) {
      expected_names.push_back(name);
    }
    std::vector<std::string> got;
    for (const v1::PrimitiveBaseline& b : time.baselines()) got.push_back(b.name());
    ASSERT_THAT(got, ElementsAreArray(expected_names)) << "trial " << trial;

    const std::vector<int> least = Preferred(graph, Smaller);
    CheckSearched(graph, *plan, "fastest", Preferred(graph, Faster), budget, count_weights, trial);
    CheckSearched(graph, *plan, "least_workspace", least, budget, count_weights, trial);
    for (const std::string& name : names) {
      std::vector<int> one = least;
      for (OpId u = 0; u < graph.num_ops(); ++u) {
        for (int a = 0; a < static_cast<int>(graph.op(u).alternatives.size()); ++a) {
          if (graph.op(u).alternatives[a].name == name) one[u] = a;
        }
      }
      CheckSearched(graph, *plan, "one:" + name, one, budget, count_weights, trial);
    }
    const double least_time = Time(graph, least);
    const int64_t least_peak = LeastPeak(graph, least, count_weights);

    // File order: the best choice for that order, by enumeration.
    std::vector<OpId> file_order(graph.num_ops());
    for (OpId u = 0; u < graph.num_ops(); ++u) file_order[u] = u;
    const v1::PrimitiveBaseline* file = Find(*plan, "file_order");
    const double file_best = BestForOrder(graph, file_order, budget, count_weights);
    EXPECT_EQ(file->fits(), !std::isinf(file_best)) << "trial " << trial;
    EXPECT_NEAR(file->time_us(), std::isinf(file_best) ? least_time : file_best, 1e-9) << "trial " << trial;
    if (std::isinf(file_best)) {
      EXPECT_EQ(file->peak_bytes(), Peak(graph, least, file_order, count_weights));
    } else {
      EXPECT_LE(file->peak_bytes(), budget);
    }
    file_order_fits += file->fits();

    // Order first: the best choice of some order of least peak with every op
    // at its least workspace.
    const v1::PrimitiveBaseline* order_first = Find(*plan, "order_first");
    EXPECT_EQ(order_first->fits(), least_peak <= budget) << "trial " << trial;
    // (Its certificate: of the search for its order when that order does not
    // fit, proven on graphs this small; baseline when it fits.)
    EXPECT_EQ(order_first->certificate(), order_first->fits() ? v1::CERTIFICATE_BASELINE : v1::CERTIFICATE_OPTIMAL);
    if (least_peak > budget) {
      EXPECT_NEAR(order_first->time_us(), least_time, 1e-9);
      EXPECT_EQ(order_first->peak_bytes(), least_peak);
    } else {
      bool matched = false;
      testing::ForEachTopologicalOrder(graph, [&](const std::vector<OpId>& order) {
        if (Peak(graph, least, order, count_weights) != least_peak) return;
        matched =
            matched || std::abs(BestForOrder(graph, order, budget, count_weights) - order_first->time_us()) < 1e-9;
      });
      EXPECT_TRUE(matched) << "trial " << trial << ": no least-peak order has its best time at "
                           << order_first->time_us();
      EXPECT_LE(order_first->peak_bytes(), budget);
    }

    // Primitives first: a plan within the budget (no faster than the
    // optimum), or the least-workspace one.
    const double optimum = testing::BruteForceLeastTime(graph, false, false, budget, count_weights);
    const v1::PrimitiveBaseline* primitives_first = Find(*plan, "primitives_first");
    if (primitives_first->fits()) {
      EXPECT_LE(primitives_first->peak_bytes(), budget);
      if (!std::isinf(optimum)) {
        EXPECT_GE(primitives_first->time_us(), optimum - 1e-9) << "trial " << trial;
      }
    } else {
      EXPECT_NEAR(primitives_first->time_us(), least_time, 1e-9) << "trial " << trial;
      EXPECT_EQ(primitives_first->peak_bytes(), least_peak);
    }

    // Summed footprint: the knapsack by enumeration, and what fits there
    // fits in Serenity's model too.
    double summed_best = kNone;
    ForEachChoice(graph, [&](const std::vector<int>& choice) {
      if (Footprint(graph, choice, count_weights) <= budget) summed_best = std::min(summed_best, Time(graph, choice));
    });
    const v1::PrimitiveBaseline* summed = Find(*plan, "summed_footprint");
    EXPECT_EQ(summed->certificate(), v1::CERTIFICATE_OPTIMAL);
    if (std::isinf(summed_best)) {
      EXPECT_GT(summed->summed_footprint_bytes(), budget) << "trial " << trial;
      EXPECT_EQ(summed->summed_footprint_bytes(), Footprint(graph, least, count_weights));
      EXPECT_NEAR(summed->time_us(), least_time, 1e-9);
    } else {
      ++summed_feasible;
      EXPECT_LE(summed->summed_footprint_bytes(), budget) << "trial " << trial;
      EXPECT_NEAR(summed->time_us(), summed_best, 1e-9) << "trial " << trial;
      EXPECT_TRUE(summed->fits()) << "trial " << trial;
      EXPECT_LE(summed->peak_bytes(), summed->summed_footprint_bytes());
    }

    // The plan's own summed footprint, from its reported primitives.
    EXPECT_EQ(time.summed_footprint_bytes(), Footprint(graph, ChoiceOf(graph, time), count_weights))
        << "trial " << trial;

    // Together is never slower than a baseline that fits.
    if (!plan->feasible()) {
      for (const v1::PrimitiveBaseline& b : time.baselines()) EXPECT_FALSE(b.fits()) << b.name() << ", trial " << trial;
      continue;
    }
    ASSERT_EQ(time.certificate(), v1::CERTIFICATE_OPTIMAL) << "trial " << trial;
    double best_separate = kNone;
    for (const v1::PrimitiveBaseline& b : time.baselines()) {
      if (!b.fits()) continue;
      EXPECT_LE(time.time_us(), b.time_us() + 1e-9) << b.name() << ", trial " << trial;
      if (b.name() == "order_first" || b.name() == "primitives_first") {
        best_separate = std::min(best_separate, b.time_us());
      }
    }
    together_faster += time.time_us() < best_separate - 1e-9;
  }
  EXPECT_GT(summed_feasible, 10);
  EXPECT_GT(file_order_fits, 30);
  std::cout << "together strictly faster than both separate choices in " << together_faster << " trials\n";
}

// A baseline with an order of its own: some choice of its time has its
// peak in one of `orders` (the baseline does not report its choice).
bool SomeChoiceHas(const Graph& graph, const v1::PrimitiveBaseline& b, const std::vector<std::vector<OpId>>& orders,
                   bool count_weights) {
  bool found = false;
  ForEachChoice(graph, [&](const std::vector<int>& choice) {
    if (found || std::abs(Time(graph, choice) - b.time_us()) > 1e-9) return;
    for (const std::vector<OpId>& order : orders)
      found = found || Peak(graph, choice, order, count_weights) == b.peak_bytes();
  });
  return found;
}

// With transformed weights (testing::AddRandomWeights: alternatives whose
// weight_bytes replace their op's own weights, larger or smaller), counted
// and not: every baseline's peak, fits and footprint against the
// independent computation (NaivePeak with CostOfChoice's weights), and
// what fits no faster than the brute-force optimum. (Whether choosing
// together is the fastest is the time search's, not checked here.)
TEST(PrimitiveBaselinesTest, TransformedWeightsMatchIndependentComputations) {
  std::mt19937 rng(2019);
  int weighed = 0, summed_feasible = 0, fits = 0, not_fits = 0;
  for (int trial = 0; trial < 300; ++trial) {
    GraphSpec spec = testing::RandomDag(3 + trial % 3, rng);
    testing::AddRandomAlternatives(&spec, rng, 3, 1, 3, 40, 100);
    testing::AddRandomWeights(&spec, rng, 80);
    const bool count_weights = trial % 4 != 3;
    const Graph graph = *Graph::Build(spec);
    int64_t given_weights = 0;
    for (const Tensor& t : graph.tensors()) given_weights += t.is_weight ? t.bytes : 0;
    const int64_t budget = 100 + (count_weights ? given_weights : 0) + static_cast<int64_t>(rng() % 500);
    absl::StatusOr<v1::Plan> plan = ExecutePlanRequest(TimeRequest(spec, budget, count_weights));
    ASSERT_TRUE(plan.ok()) << plan.status();
    const v1::TimeReport& time = plan->time();

    const std::vector<int> least = Preferred(graph, Smaller);
    const std::vector<int> fastest = Preferred(graph, Faster);
    weighed += count_weights &&
               (Weights(graph, fastest, true) != given_weights || Weights(graph, least, true) != given_weights);
    CheckSearched(graph, *plan, "fastest", fastest, budget, count_weights, trial);
    CheckSearched(graph, *plan, "least_workspace", least, budget, count_weights, trial);
    for (const std::string& name : PrimitiveNames(graph)) {
      CheckSearched(graph, *plan, "one:" + name, OneChoices(graph, name), budget, count_weights, trial);
    }
    // The same peak through ChosenGraph, the graph the baselines search.
    EXPECT_EQ(Find(*plan, "fastest")->peak_bytes(),
              [&] {
                int64_t low = std::numeric_limits<int64_t>::max();
                const Graph chosen = ChosenGraph(graph, fastest);
                testing::ForEachTopologicalOrder(graph, [&](const std::vector<OpId>& order) {
                  low = std::min(low, testing::NaivePeak(chosen, order, false, count_weights));
                });
                return low;
              }())
        << "trial " << trial;

    // The baselines with an order of their own: a peak some choice of their
    // time has in that order (file order) or some order (the others), and
    // fits as that peak says.
    std::vector<OpId> file_order(graph.num_ops());
    for (OpId u = 0; u < graph.num_ops(); ++u) file_order[u] = u;
    std::vector<std::vector<OpId>> all_orders;
    testing::ForEachTopologicalOrder(graph, [&](const std::vector<OpId>& order) { all_orders.push_back(order); });
    const double optimum = testing::BruteForceLeastTime(graph, false, false, budget, count_weights);
    for (const char* name : {"order_first", "primitives_first", "file_order"}) {
      const v1::PrimitiveBaseline* b = Find(*plan, name);
      ASSERT_NE(b, nullptr) << name;
      EXPECT_TRUE(SomeChoiceHas(
          graph, *b, std::string(name) == "file_order" ? std::vector<std::vector<OpId>>{file_order} : all_orders,
          count_weights))
          << name << ", trial " << trial;
      EXPECT_EQ(b->fits(), b->peak_bytes() <= budget) << name << ", trial " << trial;
      if (b->fits()) {
        EXPECT_GE(b->time_us(), optimum - 1e-9) << name << ", trial " << trial;
      }
      fits += b->fits();
      not_fits += !b->fits();
    }

    // Summed footprint: the knapsack by enumeration, with the weights.
    double summed_best = kNone;
    ForEachChoice(graph, [&](const std::vector<int>& choice) {
      if (Footprint(graph, choice, count_weights) <= budget) summed_best = std::min(summed_best, Time(graph, choice));
    });
    const v1::PrimitiveBaseline* summed = Find(*plan, "summed_footprint");
    ASSERT_NE(summed, nullptr);
    EXPECT_EQ(summed->certificate(), v1::CERTIFICATE_OPTIMAL);
    if (std::isinf(summed_best)) {
      EXPECT_GT(summed->summed_footprint_bytes(), budget) << "trial " << trial;
    } else {
      ++summed_feasible;
      EXPECT_LE(summed->summed_footprint_bytes(), budget) << "trial " << trial;
      EXPECT_NEAR(summed->time_us(), summed_best, 1e-9) << "trial " << trial;
      EXPECT_TRUE(summed->fits()) << "trial " << trial;
      EXPECT_LE(summed->peak_bytes(), summed->summed_footprint_bytes());
      EXPECT_GE(summed->time_us(), optimum - 1e-9) << "trial " << trial;
    }

    // The plan's own summed footprint, from its reported primitives.
    EXPECT_EQ(time.summed_footprint_bytes(), Footprint(graph, ChoiceOf(graph, time), count_weights))
        << "trial " << trial;
  }
  EXPECT_GT(weighed, 60);
  EXPECT_GT(summed_feasible, 30);
  EXPECT_GT(fits, 100);
  EXPECT_GT(not_fits, 100);
}

// Two branches (testing::TwoBranchesWithKernels): a and b each winograd (10
// us, 60 bytes) or direct (30 us, none). Peaks: a,c,b,d max(150 + wa, 160,
// 160 + wb); a,b,c,d max(150 + wa, 200 + wb); b,a,c,d max(150 + wb, 200 +
// wa). Activations 220 bytes in all.
TEST(PrimitiveBaselinesTest, TwoBranchesByHand) {
  const GraphSpec spec = testing::TwoBranchesWithKernels();
  const auto baseline = [](const v1::Plan& plan, const std::string& name) {
    const v1::PrimitiveBaseline* b = Find(plan, name);
    EXPECT_NE(b, nullptr) << name;
    return b == nullptr ? v1::PrimitiveBaseline() : *b;
  };
  // At 230 both fast kernels fit in a,c,b,d (220); the file order a,b,c,d
  // fits winograd for a only (b would need 260).
  absl::StatusOr<v1::Plan> plan = ExecutePlanRequest(TimeRequest(spec, 230));
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->time().time_us(), 20);
  EXPECT_EQ(plan->time().summed_footprint_bytes(), 340);
  EXPECT_EQ(baseline(*plan, "fastest").time_us(), 20);
  EXPECT_EQ(baseline(*plan, "fastest").peak_bytes(), 220);
  EXPECT_TRUE(baseline(*plan, "fastest").fits());
  EXPECT_EQ(baseline(*plan, "least_workspace").peak_bytes(), 160);
  EXPECT_EQ(baseline(*plan, "one:direct").time_us(), 60);
  EXPECT_EQ(baseline(*plan, "one:winograd").time_us(), 20);
  EXPECT_EQ(baseline(*plan, "order_first").time_us(), 20);
  EXPECT_EQ(baseline(*plan, "file_order").time_us(), 40);
  EXPECT_EQ(baseline(*plan, "file_order").peak_bytes(), 210);
  EXPECT_EQ(baseline(*plan, "summed_footprint").time_us(), 60);  // room for no workspace
  EXPECT_EQ(baseline(*plan, "summed_footprint").summed_footprint_bytes(), 220);
  // At 215 the fast kernels together need 220: one only.
  plan = ExecutePlanRequest(TimeRequest(spec, 215));
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->time().time_us(), 40);
  EXPECT_FALSE(baseline(*plan, "fastest").fits());
  EXPECT_FALSE(baseline(*plan, "one:winograd").fits());
  EXPECT_EQ(baseline(*plan, "order_first").time_us(), 40);
  EXPECT_EQ(baseline(*plan, "order_first").peak_bytes(), 210);
  EXPECT_EQ(baseline(*plan, "primitives_first").time_us(), 40);
  EXPECT_EQ(baseline(*plan, "file_order").time_us(), 40);
  EXPECT_GT(baseline(*plan, "summed_footprint").summed_footprint_bytes(), 215);  // nothing within
  // The summed model's optimum needs 340 bytes for both fast kernels.
  plan = ExecutePlanRequest(TimeRequest(spec, 340));
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(baseline(*plan, "summed_footprint").time_us(), 20);
  EXPECT_EQ(baseline(*plan, "file_order").time_us(), 20);
}

TEST(PrimitiveBaselinesTest, OnlyWhenAsked) {
  v1::PlanRequest request = TimeRequest(testing::TwoBranchesWithKernels(), 230);
  request.mutable_options()->set_primitive_baselines(false);
  absl::StatusOr<v1::Plan> plan = ExecutePlanRequest(request);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->time().baselines_size(), 0);
  EXPECT_EQ(plan->time().summed_footprint_bytes(), 340);  // always reported
  // Read only when the request asks for time: a plan of least peak has none.
  request.mutable_options()->set_objective("min_peak");
  request.mutable_options()->set_primitive_baselines(true);
  plan = ExecutePlanRequest(request);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_FALSE(plan->has_time());
  // With pareto (no budget: everything fits).
  request.mutable_options()->set_pareto(true);
  request.mutable_options()->set_memory_budget_bytes(0);
  plan = ExecutePlanRequest(request);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_GT(plan->time().baselines_size(), 0);
  for (const v1::PrimitiveBaseline& b : plan->time().baselines()) EXPECT_TRUE(b.fits()) << b.name();
}

TEST(PrimitiveBaselinesTest, Choices) {
  const Graph graph = *Graph::Build(testing::TwoBranchesWithKernels());
  EXPECT_THAT(PrimitiveNames(graph), ElementsAreArray({"direct", "winograd"}));
  EXPECT_THAT(FastestChoices(graph), ElementsAreArray({0, 0, -1, -1}));
  EXPECT_THAT(OneChoices(graph, "direct"), ElementsAreArray({1, 1, -1, -1}));
  EXPECT_THAT(OneChoices(graph, "fft"), ElementsAreArray({1, 1, -1, -1}));  // none: least workspace
  EXPECT_EQ(ChoiceTime(graph, {0, 1, -1, -1}), 40);
}

}  // namespace
}  // namespace serenity
