#include "core/sparsity/sparsity_report.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/plan_proto.h"
#include "core/plan_request.h"
#include "core/planner.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace serenity {
namespace {

using ::testing::HasSubstr;

// x -> c1 -> a; a -> c2 -> b; a -> c3 -> c; Add(b, c) -> d; d -> c4 -> y.
// Float32 activations [1,8,8,8] (2,048 bytes; x and y [1,4,8,8], 1,024) and
// conv weights w1 [8,4,3,3], w2 [8,8,3,3], w3 [8,8,1,1], w4 [4,8,1,1], and a
// bias b1 [8] no level names.
GraphSpec Residual() {
  GraphSpec spec;
  spec.name = "residual";
  spec.tensors = {{"x", {1, 4, 8, 8}},
                  {"a", {1, 8, 8, 8}},
                  {"b", {1, 8, 8, 8}},
                  {"c", {1, 8, 8, 8}},
                  {"d", {1, 8, 8, 8}},
                  {"y", {1, 4, 8, 8}},
                  {"w1", {8, 4, 3, 3}, 1, -1, true},
                  {"b1", {8}, 1, -1, true},
                  {"w2", {8, 8, 3, 3}, 1, -1, true},
                  {"w3", {8, 8, 1, 1}, 1, -1, true},
                  {"w4", {4, 8, 1, 1}, 1, -1, true}};
  spec.ops = {{"c1", "Conv", {"x", "w1", "b1"}, {"a"}, 0, 18432, {}},
              {"c2", "Conv", {"a", "w2"}, {"b"}, 0, 36864, {}},
              {"c3", "Conv", {"a", "w3"}, {"c"}, 64, 4096, {}},
              {"add", "Add", {"b", "c"}, {"d"}, 0, 0, {}},
              {"c4", "Conv", {"d", "w4"}, {"y"}, 0, 2048, {}}};
  spec.inputs = {"x"};
  spec.outputs = {"y"};
  return spec;
}

std::vector<SparsityLevel> Levels(double second, double third) {
  std::vector<SparsityLevel> levels = {{"full", {}, 1000}, {"half", {}, 600}, {"quarter", {}, 400}};
  for (const char* w : {"w1", "w2", "w3", "w4"}) {
    levels[0].density[w] = 1.0;
    levels[1].density[w] = second;
    levels[2].density[w] = third;
  }
  return levels;
}

v1::PlanRequest Request(const std::vector<SparsityLevel>& levels, const std::vector<std::string>& switch_points) {
  v1::PlanRequest request;
  *request.mutable_graph() = GraphSpecToProto(Residual());
  for (const SparsityLevel& level : levels) {
    v1::SparsityLevel* l = request.mutable_options()->add_levels();
    l->set_name(level.name);
    l->set_time_us(level.time_us);
    for (const auto& [tensor, fraction] : level.density) (*l->mutable_density())[tensor] = fraction;
  }
  for (const std::string& op : switch_points) request.mutable_options()->add_switch_points(op);
  return request;
}

// A level's CSR weight bytes, written out here: for each weight, rows = dim
// 0, cols = the rest, nnz = llround(fraction * rows * cols), values 4 bytes,
// indices and row pointers int32; b1 dense.
int64_t ExpectedCsrBytes(const Graph& graph, const SparsityLevel& level) {
  int64_t total = 0;
  for (const Tensor& t : graph.tensors()) {
    if (!t.is_weight) continue;
    if (t.name == "b1") {
      total += t.bytes;
      continue;
    }
    int64_t cols = 1;
    for (size_t d = 1; d < t.shape.size(); ++d) cols *= t.shape[d];
    const int64_t nnz = std::llround(level.density.at(t.name) * static_cast<double>(t.shape[0] * cols));
    total += nnz * 8 + (t.shape[0] + 1) * 4;
  }
  return total;
}

TEST(SparsityReportTest, SwitchPointsMatchAnIndependentResimulation) {
  for (bool count_weights : {false, true}) {
    SCOPED_TRACE(count_weights);
    const std::vector<SparsityLevel> levels = Levels(0.5, 0.25);
    const std::vector<std::string> points = {"c1", "add", "c4"};
    v1::PlanRequest request = Request(levels, points);
    request.mutable_options()->mutable_memory_model()->set_count_weights(count_weights);
    absl::StatusOr<v1::Plan> reply = ExecutePlanRequest(request);
    ASSERT_TRUE(reply.ok()) << reply.status();
    ASSERT_TRUE(reply->has_sparsity());
    const v1::SparsityReport& report = reply->sparsity();
    EXPECT_TRUE(report.one_plan_for_all_levels());

    // The same plan in core terms: order, lifetimes, offsets.
    absl::StatusOr<Graph> graph = Graph::Build(Residual());
    ASSERT_TRUE(graph.ok());
    PlanOptions options;
    options.memory_model.count_weights = count_weights;
    absl::StatusOr<Plan> plan = PlanGraph(*graph, options);
    ASSERT_TRUE(plan.ok()) << plan.status();
    ASSERT_EQ(static_cast<int>(plan->order.size()), reply->order_size());
    for (size_t s = 0; s < plan->order.size(); ++s) ASSERT_EQ(plan->order[s], reply->order(s));

    // Activations of each step: the non-weight buffers live then.
    const int steps = static_cast<int>(plan->order.size());
    std::vector<int64_t> activations(steps, 0);
    for (const BufferLifetimeInfo& b : plan->profile.buffers) {
      if (b.kind == BufferKind::kWeight) continue;
      for (int s = b.first_step; s <= b.last_step; ++s) activations[s] += b.bytes;
    }
    const int64_t activation_peak = *std::max_element(activations.begin(), activations.end());
    EXPECT_EQ(report.activation_peak_bytes(), activation_peak);
    std::vector<int64_t> w;
    for (const SparsityLevel& level : levels) w.push_back(ExpectedCsrBytes(*graph, level));
    ASSERT_EQ(report.levels_size(), 3);
    for (int l = 0; l < 3; ++l) {
      EXPECT_EQ(report.levels(l).csr_weight_bytes(), w[l]);
      EXPECT_EQ(report.levels(l).peak_bytes(), activation_peak + w[l]);
    }

    ASSERT_EQ(report.switch_points_size(), 3);
    for (int p = 0; p < 3; ++p) {
      const v1::SparsitySwitchPoint& point = report.switch_points(p);
      SCOPED_TRACE(point.op());
      int k = 0;
      while (graph->op(plan->order[k]).name != points[p]) ++k;
      EXPECT_EQ(point.op(), points[p]);
      EXPECT_EQ(point.step(), k);
      // Live across the switch: activation tensors made by step k, read after.
      std::vector<std::string> live;
      std::vector<int64_t> offsets;
      for (size_t i = 0; i < plan->profile.buffers.size(); ++i) {
        const BufferLifetimeInfo& b = plan->profile.buffers[i];
        if (b.kind != BufferKind::kTensor || b.first_step > k || b.last_step <= k) continue;
        live.push_back(graph->tensor(b.tensor).name);
        offsets.push_back(plan->arena.offsets[i]);
      }
      ASSERT_EQ(point.live_size(), static_cast<int>(live.size()));
      for (size_t i = 0; i < live.size(); ++i) {
        EXPECT_EQ(point.live(i).tensor(), live[i]);
        EXPECT_EQ(point.live(i).offset(), offsets[i]);
      }
      // Peak and time of each consecutive pair.
      ASSERT_EQ(point.switches_size(), 2);
      for (int d = 0; d < 2; ++d) {
        int64_t peak = 0;
        double time = 0;
        for (int s = 0; s < steps; ++s) {
          const int level = s <= k ? d : d + 1;
          peak = std::max(peak, activations[s] + w[level]);
          time += levels[level].time_us * static_cast<double>(graph->op(plan->order[s]).macs) / 61440.0;
        }
        EXPECT_EQ(point.switches(d).from_level(), levels[d].name);
        EXPECT_EQ(point.switches(d).to_level(), levels[d + 1].name);
        EXPECT_EQ(point.switches(d).peak_bytes(), peak);
        EXPECT_NEAR(point.switches(d).time_us(), time, 1e-9);
      }
    }
    // Switching after the last op runs the denser level throughout.
    EXPECT_NEAR(report.switch_points(2).switches(0).time_us(), 1000, 1e-9);
  }
}

TEST(SparsityReportTest, WeightTotalsAndSaving) {
  absl::StatusOr<v1::Plan> reply = ExecutePlanRequest(Request(Levels(0.5, 0.25), {}));
  ASSERT_TRUE(reply.ok()) << reply.status();
  const v1::SparsityReport& report = reply->sparsity();
  // w1: 8 x 36 (288 elements), w2: 8 x 72 (576), w3: 8 x 8 (64), w4: 4 x 8
  // (32); 960 elements, 36 + 36 + 36 + 20 = 128 row-pointer bytes per level.
  // full: 960 * 8 + 128 = 7,808; half: 480 * 8 + 128 = 3,968; quarter:
  // 240 * 8 + 128 = 2,048; each + the 32-byte bias.
  EXPECT_EQ(report.levels(0).csr_weight_bytes(), 7840);
  EXPECT_EQ(report.levels(1).csr_weight_bytes(), 4000);
  EXPECT_EQ(report.levels(2).csr_weight_bytes(), 2080);
  EXPECT_EQ(report.levels(1).dense_weight_bytes(), 480 * 4 + 32);
  EXPECT_EQ(report.separate_weight_bytes(), 7840 + 4000 + 2080);
  // Nested: 960 * 8 + 3 * 128 + 32.
  EXPECT_EQ(report.nested_weight_bytes(), 7680 + 384 + 32);
  EXPECT_EQ(report.nested_saving_bytes(), 13920 - 8096);
  EXPECT_EQ(report.switch_points_size(), 0);
}

TEST(SparsityReportTest, OneOrderAndArenaServeEveryLevel) {
  absl::StatusOr<v1::Plan> a = ExecutePlanRequest(Request(Levels(0.5, 0.25), {"add"}));
  absl::StatusOr<v1::Plan> b = ExecutePlanRequest(Request(Levels(0.1, 0.01), {"c2"}));
  absl::StatusOr<v1::Plan> none = ExecutePlanRequest(Request({}, {}));
  ASSERT_TRUE(a.ok() && b.ok() && none.ok());
  EXPECT_FALSE(none->has_sparsity());
  for (const v1::Plan* p : {&*b, &*none}) {
    EXPECT_THAT(p->order(), ::testing::ElementsAreArray(a->order()));
    ASSERT_EQ(p->arena().buffers_size(), a->arena().buffers_size());
    for (int i = 0; i < a->arena().buffers_size(); ++i) {
      EXPECT_EQ(p->arena().buffers(i).tensor(), a->arena().buffers(i).tensor());
      EXPECT_EQ(p->arena().buffers(i).offset(), a->arena().buffers(i).offset());
    }
    EXPECT_EQ(p->peak_bytes(), a->peak_bytes());
  }
  EXPECT_NE(a->sparsity().levels(1).csr_weight_bytes(), b->sparsity().levels(1).csr_weight_bytes());
}

TEST(SparsityReportTest, BudgetPicksTheDensestFittingLevelAndJudgesSwitches) {
  v1::PlanRequest request = Request(Levels(0.5, 0.25), {"c1", "c4"});
  absl::StatusOr<v1::Plan> free = ExecutePlanRequest(request);
  ASSERT_TRUE(free.ok());
  const int64_t act = free->sparsity().activation_peak_bytes();
  EXPECT_TRUE(free->sparsity().densest_fitting_level().empty());  // no budget
  // Room for the half level's weights but not the full one's.
  request.mutable_options()->set_memory_budget_bytes(act + 4000);
  absl::StatusOr<v1::Plan> tight = ExecutePlanRequest(request);
  ASSERT_TRUE(tight.ok());
  const v1::SparsityReport& report = tight->sparsity();
  EXPECT_EQ(report.densest_fitting_level(), "half");
  EXPECT_FALSE(report.levels(0).fits_budget());
  EXPECT_TRUE(report.levels(1).fits_budget());
  for (const v1::SparsitySwitchPoint& point : report.switch_points()) {
    for (const v1::SparsitySwitch& s : point.switches()) {
      EXPECT_EQ(s.fits_budget(), s.peak_bytes() <= act + 4000) << point.op() << " " << s.from_level();
    }
    // half -> quarter always fits; full -> half never (full is resident first).
    EXPECT_TRUE(point.switches(1).fits_budget());
    EXPECT_FALSE(point.switches(0).fits_budget());
  }
}

TEST(SparsityReportTest, BadLevelsAndSwitchPointsAreInvalidArgument) {
  absl::StatusOr<v1::Plan> bad = ExecutePlanRequest(Request(Levels(0.25, 0.5), {}));
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("at level 'quarter', more than 0.25 at the denser level 'half'"));
  bad = ExecutePlanRequest(Request(Levels(0.5, 0.25), {"c1", "nope", "gone"}));
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message(), "switch points name ops the graph does not have: 'nope', 'gone'");
  bad = ExecutePlanRequest(Request({}, {"c1"}));
  EXPECT_EQ(bad.status().message(), "switch points need sparsity levels");
  bad = ExecutePlanRequest(Request({{"a", {{"x", 0.5}}, 1}}, {}));
  EXPECT_EQ(bad.status().message(), "sparsity level 'a' names 'x', which is not a weight tensor");
}

}  // namespace
}  // namespace serenity
