#include "core/budget_levels.h"

#include <algorithm>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "core/plan_proto.h"
#include "core/plan_request.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/plan_verifier.h"
#include "tests/testing/test_graph.h"

namespace serenity {
namespace {

using ::testing::HasSubstr;

// A request for `spec` with objective time and `budgets` (none: one budget,
// `budget`).
v1::PlanRequest LevelsRequest(const GraphSpec& spec, const std::vector<int64_t>& budgets, int64_t budget = 0) {
  v1::PlanRequest request;
  *request.mutable_graph() = GraphSpecToProto(spec);
  request.mutable_options()->set_objective("time");
  request.mutable_options()->set_memory_budget_bytes(budget);
  for (int64_t b : budgets) request.mutable_options()->add_budgets(b);
  request.mutable_options()->set_alignment(1);
  return request;
}

// `graph` with the workspaces of `primitives`.
Graph Chosen(const Graph& graph, const google::protobuf::RepeatedPtrField<v1::ChosenPrimitive>& primitives) {
  std::vector<int64_t> workspace(graph.num_ops());
  for (OpId u = 0; u < graph.num_ops(); ++u) workspace[u] = graph.op(u).workspace_bytes;
  for (const v1::ChosenPrimitive& c : primitives) workspace[*graph.FindOp(c.op())] = c.workspace_bytes();
  return graph.WithWorkspaces(workspace);
}

// A level as a plan the independent verifier reads: its order, peak and
// arena, under `top`'s memory model.
v1::Plan LevelAsPlan(const Graph& chosen, const v1::Plan& top, const v1::BudgetLevel& level) {
  v1::Plan plan;
  *plan.mutable_memory_model() = top.memory_model();
  for (const std::string& name : level.order_names()) {
    plan.add_order(*chosen.FindOp(name));
    plan.add_order_names(name);
  }
  plan.set_nodes(chosen.num_ops());
  plan.set_peak_bytes(level.peak_bytes());
  *plan.mutable_arena() = level.arena();
  // (A level may give up the least arena to keep offsets, within its
  // budget: no comparison with the TFLite-style planner's.)
  plan.mutable_arena()->clear_tflite_size_bytes();
  return plan;
}

// The test's own reading of an arena: "kind/name" -> offset for every row
// and alias (the first listing of a name).
std::map<std::string, int64_t> NaiveOffsets(const v1::Arena& arena) {
  std::map<std::string, int64_t> offsets;
  for (const v1::ArenaBuffer& row : arena.buffers()) {
    const bool workspace = row.kind() == v1::BUFFER_KIND_WORKSPACE;
    offsets.insert({(workspace ? "w/" : "t/") + row.tensor(), row.offset()});
    for (const std::string& alias : row.aliases()) offsets.insert({"t/" + alias, row.offset()});
  }
  return offsets;
}

// The names whose offset differs between two arenas, or that one lacks,
// sorted.
std::vector<std::string> NaiveMoved(const v1::Arena& before, const v1::Arena& after) {
  const std::map<std::string, int64_t> a = NaiveOffsets(before), b = NaiveOffsets(after);
  std::vector<std::string> moved;
  for (const auto& [key, offset] : b) {
    auto it = a.find(key);
    if (it == a.end() || it->second != offset) moved.push_back(key.substr(2));
  }
  for (const auto& [key, offset] : a) {
    if (!b.count(key)) moved.push_back(key.substr(2));
  }
  std::sort(moved.begin(), moved.end());
  return moved;
}

std::vector<std::string> Sorted(const google::protobuf::RepeatedPtrField<std::string>& names) {
  std::vector<std::string> out(names.begin(), names.end());
  std::sort(out.begin(), out.end());
  return out;
}

// Random graphs (half with Concats laid out in place, alignment 4) with
// three budgets: every level is the independent plan of its budget (time,
// feasibility, certificate, peak), its arena passes the independent
// verifier and stays within its budget whenever the independent arena does,
// its moved_tensors are the test's own comparison with the level before,
// and sharing moves fewer tensors in all than the independent arenas.
TEST(BudgetLevelsTest, LevelsMatchIndependentPlans) {
  std::mt19937 rng(19);
  int shared_moves = 0, independent_moves = 0, feasible_levels = 0, infeasible_levels = 0, reused = 0;
  for (int trial = 0; trial < 60; ++trial) {
    const bool concats = trial % 2 == 1;
    GraphSpec spec = testing::RandomDag(4 + trial % 5, rng, concats);
    testing::AddRandomAlternatives(&spec, rng, 3, 1, 3, 40, 200);
    const Graph graph = *Graph::Build(spec);
    std::vector<int64_t> budgets;
    while (budgets.size() < 3) {
      const int64_t b = 150 + static_cast<int64_t>(rng() % 500);
      if (std::find(budgets.begin(), budgets.end(), b) == budgets.end()) budgets.push_back(b);
    }
    if (trial % 3 == 0) std::sort(budgets.begin(), budgets.end());
    v1::PlanRequest request = LevelsRequest(spec, budgets);
    if (concats) {
      request.mutable_options()->mutable_memory_model()->set_concat_in_place(true);
      request.mutable_options()->set_alignment(4);
    }
    absl::StatusOr<v1::Plan> plan = ExecutePlanRequest(request);
    ASSERT_TRUE(plan.ok()) << plan.status();
    const v1::TimeReport& time = plan->time();
    ASSERT_EQ(time.levels_size(), 3);
    EXPECT_EQ(plan->memory_budget_bytes(), budgets[0]);
    EXPECT_EQ(time.time_us(), time.levels(0).time_us());
    EXPECT_EQ(plan->arena().SerializeAsString(), time.levels(0).arena().SerializeAsString());
    EXPECT_EQ(time.levels(0).moved_tensors_size(), 0);
    v1::Arena independent_before;
    for (int k = 0; k < 3; ++k) {
      const v1::BudgetLevel& level = time.levels(k);
      v1::PlanRequest one = request;
      one.mutable_options()->clear_budgets();
      one.mutable_options()->set_memory_budget_bytes(budgets[k]);
      absl::StatusOr<v1::Plan> alone = ExecutePlanRequest(one);
      ASSERT_TRUE(alone.ok()) << alone.status();
      EXPECT_EQ(level.budget_bytes(), budgets[k]);
      EXPECT_EQ(level.feasible(), alone->feasible()) << "trial " << trial << " level " << k;
      EXPECT_NEAR(level.time_us(), alone->time().time_us(), 1e-9) << "trial " << trial << " level " << k;
      EXPECT_EQ(level.certificate(), alone->time().certificate());
      // A level as fast as the one before, whose plan fits its budget, takes
      // that plan (and moves nothing); any other is its budget's own.
      const bool same_plan =
          k > 0 && level.moved_tensors_size() == 0 &&
          level.order_names_size() == time.levels(k - 1).order_names_size() &&
          std::equal(level.order_names().begin(), level.order_names().end(),
                     time.levels(k - 1).order_names().begin()) &&
          level.primitives().size() == time.levels(k - 1).primitives().size() &&
          std::equal(level.primitives().begin(), level.primitives().end(), time.levels(k - 1).primitives().begin(),
                     [](const v1::ChosenPrimitive& a, const v1::ChosenPrimitive& b) {
                       return a.op() == b.op() && a.name() == b.name();
                     });
      if (same_plan && level.peak_bytes() != alone->peak_bytes()) {
        ++reused;
        EXPECT_LE(level.peak_bytes(), budgets[k]);
      } else {
        EXPECT_EQ(level.peak_bytes(), alone->peak_bytes()) << "trial " << trial << " level " << k;
      }
      (level.feasible() ? feasible_levels : infeasible_levels)++;
      const Graph chosen = Chosen(graph, level.primitives());
      absl::Status verified = testing::VerifyPlan(chosen, LevelAsPlan(chosen, *plan, level));
      EXPECT_TRUE(verified.ok()) << "trial " << trial << " level " << k << ": " << verified;
      if (alone->arena().size_bytes() <= budgets[k]) {
        EXPECT_LE(level.arena().size_bytes(), budgets[k]) << "trial " << trial << " level " << k;
      }
      if (k > 0) {
        EXPECT_EQ(Sorted(level.moved_tensors()), NaiveMoved(time.levels(k - 1).arena(), level.arena()))
            << "trial " << trial << " level " << k;
        shared_moves += level.moved_tensors_size();
        independent_moves += static_cast<int>(NaiveMoved(independent_before, alone->arena()).size());
      }
      independent_before = alone->arena();
    }
  }
  EXPECT_GT(feasible_levels, 60);
  EXPECT_GT(infeasible_levels, 10);
  EXPECT_GT(reused, 0);
  EXPECT_LT(2 * shared_moves, independent_moves) << shared_moves << " moved, " << independent_moves << " apart";
}

// Budgets at a plan's own peak, where the static arena often ends above it
// and the plan fits only with moves (defragment): the levels' arenas are
// static and valid without moves, and the top-level plan keeps its moves.
TEST(BudgetLevelsTest, LevelsWithMovesGetStaticArenas) {
  std::mt19937 rng(79);
  int with_moves = 0;
  for (int trial = 0; trial < 300 && with_moves < 5; ++trial) {
    // (No alternatives: the plans are the least-peak ones, whose static
    // arenas now and then end above the peak.)
    GraphSpec spec = testing::RandomDag(8 + trial % 25, rng);
    const Graph graph = *Graph::Build(spec);
    v1::PlanRequest least = LevelsRequest(spec, {});
    least.mutable_options()->set_objective("min_peak");
    absl::StatusOr<v1::Plan> loose = ExecutePlanRequest(least);
    ASSERT_TRUE(loose.ok()) << loose.status();
    const std::vector<int64_t> budgets = {loose->peak_bytes(), loose->peak_bytes() + 1000};
    absl::StatusOr<v1::Plan> plan = ExecutePlanRequest(LevelsRequest(spec, budgets));
    ASSERT_TRUE(plan.ok()) << plan.status();
    absl::StatusOr<v1::Plan> alone = ExecutePlanRequest(LevelsRequest(spec, {}, budgets[0]));
    ASSERT_TRUE(alone.ok()) << alone.status();
    EXPECT_EQ(plan->moves_size(), alone->moves_size()) << "trial " << trial;
    if (alone->moves_size() > 0) ++with_moves;
    for (const v1::BudgetLevel& level : plan->time().levels()) {
      const Graph chosen = Chosen(graph, level.primitives());
      absl::Status verified = testing::VerifyPlan(chosen, LevelAsPlan(chosen, *plan, level));
      EXPECT_TRUE(verified.ok()) << "trial " << trial << ": " << verified;
    }
  }
  EXPECT_GT(with_moves, 0);
}

// A row of an arena for ShareOffsets.
void AddRow(v1::Arena* arena, const std::string& tensor, int64_t offset, int64_t size, int first, int last) {
  v1::ArenaBuffer* row = arena->add_buffers();
  row->set_kind(v1::BUFFER_KIND_TENSOR);
  row->set_tensor(tensor);
  row->set_offset(offset);
  row->set_size(size);
  row->set_first_step(first);
  row->set_last_step(last);
  arena->set_size_bytes(std::max(arena->size_bytes(), offset + size));
  arena->set_alignment(1);
}

int64_t OffsetOf(const v1::Arena& arena, const std::string& tensor) {
  for (const v1::ArenaBuffer& row : arena.buffers()) {
    if (row.tensor() == tensor) return row.offset();
  }
  return -1;
}

// Offsets kept where the lifetimes allow: a and b swap back to the
// previous level's places; c, co-live with both, goes above; of d and e,
// whose previous places overlap while both live now, the larger keeps its.
TEST(BudgetLevelsTest, ShareOffsetsKeepsWhatFits) {
  v1::Arena previous, own;
  AddRow(&previous, "a", 0, 10, 0, 1);
  AddRow(&previous, "b", 10, 10, 0, 1);
  AddRow(&previous, "d", 0, 8, 2, 2);
  AddRow(&previous, "e", 4, 4, 3, 3);
  AddRow(&own, "a", 10, 10, 0, 1);
  AddRow(&own, "b", 0, 10, 0, 1);
  AddRow(&own, "c", 20, 5, 0, 1);
  AddRow(&own, "d", 0, 8, 2, 3);
  AddRow(&own, "e", 8, 4, 3, 3);
  absl::StatusOr<v1::Arena> shared = ShareOffsets(previous, own, 100);
  ASSERT_TRUE(shared.ok()) << shared.status();
  EXPECT_EQ(OffsetOf(*shared, "a"), 0);
  EXPECT_EQ(OffsetOf(*shared, "b"), 10);
  EXPECT_EQ(OffsetOf(*shared, "c"), 20);
  EXPECT_EQ(OffsetOf(*shared, "d"), 0);
  EXPECT_EQ(OffsetOf(*shared, "e"), 8);
  EXPECT_EQ(shared->size_bytes(), 25);
  EXPECT_THAT(MovedTensors(previous, *shared), ::testing::ElementsAre("c", "e"));
  EXPECT_THAT(MovedTensors(previous, own), ::testing::ElementsAre("a", "b", "c", "e"));
  // A bound no arena meets (a, b and c live together take 25 bytes): the
  // pins are dropped, and own comes back as it was.
  absl::StatusOr<v1::Arena> tight = ShareOffsets(previous, own, 24);
  ASSERT_TRUE(tight.ok()) << tight.status();
  EXPECT_EQ(tight->SerializeAsString(), own.SerializeAsString());
  // A previous place above the bound is no candidate.
  v1::Arena high;
  AddRow(&high, "a", 40, 10, 0, 1);
  absl::StatusOr<v1::Arena> kept = ShareOffsets(high, own, 30);
  ASSERT_TRUE(kept.ok());
  EXPECT_EQ(kept->SerializeAsString(), own.SerializeAsString());
  // Tensors only one level holds move; aliases count at their row.
  v1::Arena aliased = previous;
  aliased.mutable_buffers(0)->add_aliases("a_view");
  EXPECT_THAT(MovedTensors(previous, aliased), ::testing::ElementsAre("a_view"));
  EXPECT_THAT(MovedTensors(aliased, previous), ::testing::ElementsAre("a_view"));
  // A weight in another form (its size changed) is written again: it
  // counts as moved even where its offset stays; a tensor does not.
  v1::Arena weights = previous;
  weights.mutable_buffers(0)->set_kind(v1::BUFFER_KIND_WEIGHT);
  v1::Arena transformed = weights;
  transformed.mutable_buffers(0)->set_size(12);
  transformed.mutable_buffers(1)->set_size(9);
  EXPECT_THAT(MovedTensors(weights, transformed), ::testing::ElementsAre("a"));
}

// Budgets need objective time and none of what plans one level only.
TEST(BudgetLevelsTest, BadBudgetsAreRefused) {
  const GraphSpec spec = testing::TwoBranchesWithKernels();
  const auto refused = [&](const std::function<void(v1::PlanRequest&)>& change) {
    v1::PlanRequest request = LevelsRequest(spec, {230, 300});
    change(request);
    absl::StatusOr<v1::Plan> plan = ExecutePlanRequest(request);
    EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument) << plan.status();
    return std::string(plan.status().message());
  };
  EXPECT_THAT(refused([](v1::PlanRequest& r) { r.mutable_options()->set_memory_budget_bytes(230); }),
              HasSubstr("not both"));
  EXPECT_THAT(refused([](v1::PlanRequest& r) { r.mutable_options()->set_objective("min_peak"); }),
              HasSubstr("need objective time"));
  EXPECT_THAT(refused([](v1::PlanRequest& r) { r.mutable_options()->add_budgets(0); }), HasSubstr("must be positive"));
  EXPECT_THAT(refused([](v1::PlanRequest& r) { r.mutable_options()->add_budgets(-5); }), HasSubstr("must be positive"));
  EXPECT_THAT(refused([](v1::PlanRequest& r) { r.mutable_options()->add_budgets(300); }),
              HasSubstr("budget 300 is given twice"));
  EXPECT_THAT(refused([](v1::PlanRequest& r) {
                for (int b = 1; b <= 15; ++b) r.mutable_options()->add_budgets(1000 + b);
              }),
              HasSubstr("at most 16"));
  EXPECT_THAT(refused([](v1::PlanRequest& r) { r.mutable_options()->set_pareto(true); }), HasSubstr("pareto"));
  EXPECT_THAT(refused([](v1::PlanRequest& r) { r.mutable_given_order()->add_indices(0); }), HasSubstr("given order"));
  EXPECT_THAT(refused([](v1::PlanRequest& r) {
                v1::Memory* m = r.mutable_options()->add_memories();
                m->set_name("sram");
                m->set_capacity_bytes(1000);
              }),
              HasSubstr("memories"));
  // max_time_us and rewrite, straight to the options.
  const Graph graph = *Graph::Build(spec);
  PlanOptions options;
  options.objective = Objective::kTime;
  options.budgets = {230, 300};
  options.max_time_us = 10;
  EXPECT_THAT(SanitizePlanOptions(graph, options).status().message(), HasSubstr("max_time_us"));
  options.max_time_us = 0;
  options.rewrite = true;
  EXPECT_THAT(SanitizePlanOptions(graph, options).status().message(), HasSubstr("rewrite"));
  options.rewrite = false;
  EXPECT_TRUE(SanitizePlanOptions(graph, options).ok());
  options.budgets.assign(16, 0);
  for (int k = 0; k < 16; ++k) options.budgets[k] = 100 + k;
  EXPECT_TRUE(SanitizePlanOptions(graph, options).ok());
}

}  // namespace
}  // namespace serenity
