#include "client/pareto_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "core/plan_proto.h"
#include "core/plan_request.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/test_graph.h"
#include "tests/testing/xml.h"

namespace serenity {
namespace {

// The elements of `svg` that start with `prefix` (e.g. "<circle
// class=\"point\""), each as its attributes.
std::vector<std::map<std::string, std::string>> Elements(const std::string& svg, const std::string& prefix) {
  std::vector<std::map<std::string, std::string>> out;
  static const std::regex kAttribute("([a-z0-9-]+)=\"([^\"]*)\"");
  for (size_t i = svg.find(prefix); i != std::string::npos; i = svg.find(prefix, i + 1)) {
    const std::string tag = svg.substr(i, svg.find('>', i) - i);
    std::map<std::string, std::string> attributes;
    for (std::sregex_iterator it(tag.begin(), tag.end(), kAttribute), end; it != end; ++it) {
      attributes[(*it)[1]] = (*it)[2];
    }
    out.push_back(attributes);
  }
  return out;
}

double Number(const std::map<std::string, std::string>& attributes, const std::string& name) {
  auto it = attributes.find(name);
  EXPECT_NE(it, attributes.end()) << name;
  return it == attributes.end() ? NAN : std::strtod(it->second.c_str(), nullptr);
}

// The map from data to the picture an axis' ticks give (their data-value
// and position): the line through the first and the last tick, checked to
// pass through every other tick.
struct Linear {
  double value0, pos0, scale;
  double operator()(double value) const { return pos0 + (value - value0) * scale; }
};
Linear AxisMap(const std::string& svg, const std::string& tick_class, const std::string& position) {
  const auto ticks = Elements(svg, "<text class=\"" + tick_class + "\"");
  EXPECT_GE(ticks.size(), 2u);
  if (ticks.size() < 2) return {0, 0, 1};
  const double v0 = Number(ticks.front(), "data-value"), p0 = Number(ticks.front(), position);
  const double v1 = Number(ticks.back(), "data-value"), p1 = Number(ticks.back(), position);
  const Linear map{v0, p0, (p1 - p0) / (v1 - v0)};
  for (const auto& t : ticks) {
    EXPECT_NEAR(map(Number(t, "data-value")), Number(t, position), 0.01);
  }
  return map;
}

TEST(ParetoPlotTest, NiceTicks) {
  EXPECT_THAT(NiceTicks(0, 10, 5), ::testing::ElementsAre(0, 2, 4, 6, 8, 10));
  EXPECT_THAT(NiceTicks(160, 220, 6), ::testing::ElementsAre(160, 170, 180, 190, 200, 210, 220));
  EXPECT_THAT(NiceTicks(21, 59, 4), ::testing::ElementsAre(20, 30, 40, 50, 60));
  EXPECT_THAT(NiceTicks(21, 59, 3), ::testing::ElementsAre(20, 40, 60));
  const std::vector<double> small = NiceTicks(0.13, 0.58, 5);
  ASSERT_EQ(small.size(), 6u);
  EXPECT_NEAR(small.front(), 0.1, 1e-12);
  EXPECT_NEAR(small.back(), 0.6, 1e-12);
  EXPECT_EQ(NiceTicks(5, 5, 6).size() >= 2, true);  // a single value widens
  EXPECT_LE(NiceTicks(5, 5, 6).front(), 5);
  EXPECT_GE(NiceTicks(5, 5, 6).back(), 5);
}

// The two-branch graph's frontier (testing::TwoBranchesWithKernels: (160,
// 60), (210, 40), (220, 20) us) through the request path: one dot per point
// where the axes' ticks put it, the staircase through them, the plan marked.
TEST(ParetoPlotTest, PointsWhereTheTicksPutThem) {
  v1::PlanRequest request;
  *request.mutable_graph() = GraphSpecToProto(testing::TwoBranchesWithKernels());
  request.mutable_options()->set_objective("time");
  request.mutable_options()->set_memory_budget_bytes(215);
  request.mutable_options()->set_alignment(1);
  request.mutable_options()->set_pareto(true);
  absl::StatusOr<v1::Plan> plan = ExecutePlanRequest(request);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->time().pareto_size(), 3);
  const std::string svg = ParetoPlotSvg(*plan);
  EXPECT_EQ(svg.rfind("<?xml", 0), 0u);
  EXPECT_TRUE(testing::IsWellFormedXml(svg));
  EXPECT_NE(svg.find("peak (bytes)"), std::string::npos);
  EXPECT_NE(svg.find("(us)"), std::string::npos);

  const Linear x = AxisMap(svg, "xtick", "x");
  const Linear y = AxisMap(svg, "ytick", "y");
  EXPECT_GT(x.scale, 0);  // more bytes to the right
  EXPECT_LT(y.scale, 0);  // more time upwards
  const auto points = Elements(svg, "<circle class=\"point\"");
  ASSERT_EQ(points.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    const v1::ParetoPoint& p = plan->time().pareto(i);
    EXPECT_EQ(Number(points[i], "data-peak"), p.peak_bytes());
    EXPECT_EQ(Number(points[i], "data-time"), p.time_us());
    EXPECT_NEAR(Number(points[i], "cx"), x(p.peak_bytes()), 0.01) << i;
    EXPECT_NEAR(Number(points[i], "cy"), y(p.time_us()), 0.01) << i;
  }
  // The staircase: each point, then across to the next one's peak.
  const auto stairs = Elements(svg, "<polyline class=\"staircase\"");
  ASSERT_EQ(stairs.size(), 1u);
  std::vector<double> coordinates;
  {
    std::string text = stairs[0].at("points");
    for (char& c : text) c = c == ',' ? ' ' : c;
    std::istringstream in(text);
    for (double v; in >> v;) coordinates.push_back(v);
  }
  ASSERT_EQ(coordinates.size(), 12u);
  for (int i = 0; i < 3; ++i) {
    const v1::ParetoPoint& p = plan->time().pareto(i);
    EXPECT_NEAR(coordinates[4 * i], x(p.peak_bytes()), 0.01);
    EXPECT_NEAR(coordinates[4 * i + 1], y(p.time_us()), 0.01);
    EXPECT_NEAR(coordinates[4 * i + 3], y(p.time_us()), 0.01);
    if (i < 2) {
      EXPECT_NEAR(coordinates[4 * i + 2], x(plan->time().pareto(i + 1).peak_bytes()), 0.01);
    }
  }
  // The plan (40 us within 215 bytes) and the budget.
  const auto chosen = Elements(svg, "<circle class=\"chosen\"");
  ASSERT_EQ(chosen.size(), 1u);
  EXPECT_NEAR(Number(chosen[0], "cx"), x(plan->peak_bytes()), 0.01);
  EXPECT_NEAR(Number(chosen[0], "cy"), y(40), 0.01);
  const auto budget = Elements(svg, "<line class=\"budget\"");
  ASSERT_EQ(budget.size(), 1u);
  EXPECT_NEAR(Number(budget[0], "x1"), x(215), 0.01);
}

TEST(ParetoPlotTest, UnitsEscapesAndNoFrontier) {
  v1::Plan plan;
  plan.set_model("a<b>&\"c\"");
  plan.set_peak_bytes(3 << 20);
  plan.mutable_time()->set_time_us(1500);
  v1::ParetoPoint* p = plan.mutable_time()->add_pareto();
  p->set_peak_bytes(3 << 20);
  p->set_time_us(1500);
  std::string svg = ParetoPlotSvg(plan);
  EXPECT_TRUE(testing::IsWellFormedXml(svg));
  EXPECT_NE(svg.find("a&lt;b&gt;&amp;&quot;c&quot;"), std::string::npos);
  EXPECT_NE(svg.find("peak (MiB)"), std::string::npos);
  const Linear x = AxisMap(svg, "xtick", "x");
  const auto points = Elements(svg, "<circle class=\"point\"");
  ASSERT_EQ(points.size(), 1u);
  EXPECT_NEAR(Number(points[0], "cx"), x(3 << 20), 0.01);
  plan.mutable_time()->clear_pareto();
  svg = ParetoPlotSvg(plan);
  EXPECT_TRUE(testing::IsWellFormedXml(svg));
  EXPECT_NE(svg.find("no frontier"), std::string::npos);
  EXPECT_EQ(Elements(svg, "<circle class=\"point\"").size(), 0u);
}

}  // namespace
}  // namespace serenity
