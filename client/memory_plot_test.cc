#include "client/memory_plot.h"

#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "core/plan_request.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/orders.h"
#include "tests/testing/xml.h"

namespace serenity {
namespace {

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t i = text.find(what); i != std::string::npos; i = text.find(what, i + 1)) ++n;
  return n;
}

TEST(MemoryPlotTest, OneCurvePerOrderAndOneRectanglePerBuffer) {
  v1::PlanRequest request;
  request.set_onnx_model(testing::ReadFile(SERENITY_SHARED_DIR "/bench/models/nasnet_a_cifar10_normal_cell.onnx"));
  request.mutable_options()->set_memory_budget_bytes(3000000);
  request.mutable_options()->add_onchip_bytes(1 << 20);
  absl::StatusOr<v1::Plan> plan = ExecutePlanRequest(request);
  ASSERT_TRUE(plan.ok()) << plan.status();
  std::string svg = MemoryPlotSvg(*plan);
  EXPECT_TRUE(testing::IsWellFormedXml(svg));
  EXPECT_EQ(svg.rfind("<?xml", 0), 0u);
  EXPECT_EQ(Count(svg, "<polyline class=\"order\""), 6u);
  for (const char* order : {"serenity", "file order", "kahn", "greedy", "inductor", "xla"}) {
    EXPECT_NE(svg.find(std::string("data-order=\"") + order + "\""), std::string::npos) << order;
  }
  int nonempty = 0;
  for (const v1::ArenaBuffer& b : plan->arena().buffers()) nonempty += b.size() > 0;
  EXPECT_EQ(Count(svg, "<title>"), static_cast<size_t>(nonempty));
  EXPECT_EQ(Count(svg, "class=\"level\""), 4u);  // budget and on-chip, in both panels
  EXPECT_NE(svg.find("live bytes"), std::string::npos);
  EXPECT_NE(svg.find("arena offset (bytes)"), std::string::npos);
}

TEST(MemoryPlotTest, EscapesNames) {
  v1::Plan plan;
  plan.set_model("a<b>&\"c\"");
  plan.add_step_bytes(10);
  v1::ArenaBuffer* b = plan.mutable_arena()->add_buffers();
  b->set_tensor("x<y");
  b->set_size(10);
  plan.mutable_arena()->set_size_bytes(10);
  std::string svg = MemoryPlotSvg(plan);
  EXPECT_TRUE(testing::IsWellFormedXml(svg));
  EXPECT_NE(svg.find("a&lt;b&gt;&amp;&quot;c&quot;"), std::string::npos);
  EXPECT_NE(svg.find("x&lt;y"), std::string::npos);
}

using ::testing::ElementsAre;

constexpr int64_t kKiB = 1024, kMiB = 1024 * 1024;

TEST(ByteTicksTest, TinyRangesInBytes) {
  AxisTicks ticks = ByteTicks(10);  // steps of 2 B: 5 intervals
  EXPECT_EQ(ticks.unit, "B");
  EXPECT_THAT(ticks.values, ElementsAre(0, 2, 4, 6, 8, 10));
  EXPECT_EQ(ticks.top, 10);
  EXPECT_THAT(ByteTicks(0).values, ElementsAre(0, 1));
  EXPECT_THAT(ByteTicks(1).values, ElementsAre(0, 1));
  // 1,500 B (under 2 KiB): steps of 500 B.
  EXPECT_THAT(ByteTicks(1500).values, ElementsAre(0, 500, 1000, 1500));
  EXPECT_EQ(TickLabel(ByteTicks(1500), 1000), "1,000 B");
}

TEST(ByteTicksTest, KiBRanges) {
  // 3,000 B: 3 KiB rounded up, steps of 1 KiB.
  AxisTicks ticks = ByteTicks(3000);
  EXPECT_EQ(ticks.unit, "KiB");
  EXPECT_THAT(ticks.values, ElementsAre(0, kKiB, 2 * kKiB, 3 * kKiB));
  EXPECT_EQ(TickLabel(ticks, 2 * kKiB), "2 KiB");
  // 700 KiB: 100 would take 7 intervals, so steps of 200 KiB up to 800.
  ticks = ByteTicks(700 * kKiB);
  EXPECT_THAT(ticks.values, ElementsAre(0, 200 * kKiB, 400 * kKiB, 600 * kKiB, 800 * kKiB));
  EXPECT_EQ(TickLabel(ticks, 800 * kKiB), "800 KiB");
  // Just under 2 MiB stays in KiB: 2,047 KiB + 1 B -> steps of 500 KiB.
  ticks = ByteTicks(2 * kMiB - 1);
  EXPECT_EQ(ticks.unit, "KiB");
  EXPECT_THAT(ticks.values, ElementsAre(0, 500 * kKiB, 1000 * kKiB, 1500 * kKiB, 2000 * kKiB, 2500 * kKiB));
  EXPECT_EQ(TickLabel(ticks, 1500 * kKiB), "1,500 KiB");
}

TEST(ByteTicksTest, MiBRangesAndNonPowersOfTwo) {
  // 3,000,000 B is 2.86 MiB: steps of 1 MiB up to 3.
  AxisTicks ticks = ByteTicks(3000000);
  EXPECT_EQ(ticks.unit, "MiB");
  EXPECT_THAT(ticks.values, ElementsAre(0, kMiB, 2 * kMiB, 3 * kMiB));
  // 100 MiB: steps of 20 MiB.
  EXPECT_THAT(ByteTicks(100 * kMiB).values, ElementsAre(0, 20 * kMiB, 40 * kMiB, 60 * kMiB, 80 * kMiB, 100 * kMiB));
  // 13,000,000 B = 12.4 MiB -> 13 MiB: 2 MiB would take 7 intervals, 5 MiB takes 3.
  ticks = ByteTicks(13000000);
  EXPECT_THAT(ticks.values, ElementsAre(0, 5 * kMiB, 10 * kMiB, 15 * kMiB));
  EXPECT_EQ(TickLabel(ticks, 15 * kMiB), "15 MiB");
  EXPECT_EQ(TickLabel(ticks, 0), "0");
}

TEST(StepTicksTest, RoundStepsNeverRepeated) {
  EXPECT_THAT(StepTicks(1).values, ElementsAre(0, 1));
  EXPECT_THAT(StepTicks(3).values, ElementsAre(0, 1, 2, 3));
  EXPECT_THAT(StepTicks(37).values, ElementsAre(0, 5, 10, 15, 20, 25, 30, 35, 40));
  EXPECT_THAT(StepTicks(1000).values, ElementsAre(0, 200, 400, 600, 800, 1000));
}

// Labels of one class with their y (or x) coordinates, in document order.
std::vector<std::pair<std::string, double>> Labels(const std::string& svg, const std::string& cls, const char* axis) {
  std::vector<std::pair<std::string, double>> out;
  const std::regex text("<text class=\"" + cls + "\" x=\"([-0-9.]+)\" y=\"([-0-9.]+)\"[^>]*>([^<]*)</text>");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), text); it != std::sregex_iterator(); ++it) {
    out.push_back({(*it)[3].str(), std::stod((*it)[axis[0] == 'x' ? 1 : 2].str())});
  }
  return out;
}

// In each panel, labels of one kind are distinct and at least a label
// height (the 11 px font; 10 px for the level labels) apart.
void ExpectSeparate(const std::vector<std::pair<std::string, double>>& labels, size_t per_panel, double min_gap,
                    bool distinct) {
  ASSERT_GT(per_panel, 0u);
  for (size_t start = 0; start < labels.size(); start += per_panel) {
    std::set<std::string> texts;
    std::vector<double> at;
    for (size_t i = start; i < std::min(labels.size(), start + per_panel); ++i) {
      texts.insert(labels[i].first);
      at.push_back(labels[i].second);
    }
    if (distinct) {
      EXPECT_EQ(texts.size(), at.size());
    }
    std::sort(at.begin(), at.end());
    for (size_t i = 1; i < at.size(); ++i) EXPECT_GE(at[i] - at[i - 1], min_gap) << labels[start + i].first;
  }
}

TEST(MemoryPlotTest, TickAndLevelLabelsAreDistinctAndApart) {
  v1::Plan plan;
  plan.set_model("m");
  for (int64_t bytes : {3000000, 2500000, 2900000}) plan.add_step_bytes(bytes);  // a 2.86 MiB peak, 3 steps
  plan.set_memory_budget_bytes(2800000);
  v1::OrderTraffic* traffic = plan.add_traffic();
  for (int64_t onchip : {2810000, 2820000, 1 << 20}) traffic->add_points()->set_onchip_bytes(onchip);  // close lines
  plan.mutable_arena()->set_size_bytes(3000000);
  const std::string svg = MemoryPlotSvg(plan);
  EXPECT_TRUE(testing::IsWellFormedXml(svg));

  const auto y_ticks = Labels(svg, "ytick", "y");
  ASSERT_EQ(y_ticks.size(), 8u);  // 0..3 MiB, in both panels
  std::vector<std::string> texts;
  for (size_t i = 0; i < 4; ++i) texts.push_back(y_ticks[i].first);
  EXPECT_THAT(texts, ElementsAre("0", "1 MiB", "2 MiB", "3 MiB"));
  ExpectSeparate(y_ticks, 4, 11, true);

  const auto x_ticks = Labels(svg, "xtick", "x");
  ASSERT_EQ(x_ticks.size(), 8u);  // 0..3, in both panels: no repeats for few steps
  ExpectSeparate(x_ticks, 4, 11, true);

  const auto levels = Labels(svg, "level-label", "y");
  ASSERT_EQ(levels.size(), 8u);  // budget and three on-chip sizes, in both panels
  ExpectSeparate(levels, 4, 10, true);

  const auto legend = Labels(svg, "legend", "y");
  ASSERT_EQ(legend.size(), 1u);  // one order with steps
  EXPECT_EQ(legend[0].first, "serenity (peak 3,000,000)");
}

// Many steps and a large graph: the x labels stay round and apart.
TEST(MemoryPlotTest, RealPlanTicksAreRoundAndApart) {
  v1::PlanRequest request;
  request.set_onnx_model(testing::ReadFile(SERENITY_SHARED_DIR "/bench/models/nasnet_a_cifar10_normal_cell.onnx"));
  request.mutable_options()->add_onchip_bytes(1 << 20);
  request.mutable_options()->add_onchip_bytes((1 << 20) + 4096);
  absl::StatusOr<v1::Plan> plan = ExecutePlanRequest(request);
  ASSERT_TRUE(plan.ok()) << plan.status();
  const std::string svg = MemoryPlotSvg(*plan);
  const auto y_ticks = Labels(svg, "ytick", "y");
  ASSERT_EQ(y_ticks.size() % 2, 0u);
  ExpectSeparate(y_ticks, y_ticks.size() / 2, 11, true);
  for (const auto& [label, y] : y_ticks)
    EXPECT_TRUE(std::regex_match(label, std::regex("0|[0-9,]+ (B|KiB|MiB)"))) << label;
  const auto x_ticks = Labels(svg, "xtick", "x");
  ExpectSeparate(x_ticks, x_ticks.size() / 2, 40, true);
  ExpectSeparate(Labels(svg, "legend", "y"), 6, 11, false);
  ExpectSeparate(Labels(svg, "level-label", "y"), 2, 10, true);
}

}  // namespace
}  // namespace serenity
