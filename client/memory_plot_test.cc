#include "client/memory_plot.h"

#include <string>
#include <vector>

#include "core/plan_request.h"
#include "gtest/gtest.h"
#include "tests/testing/orders.h"

namespace serenity {
namespace {

// True when every element opened is closed in order (a small XML
// well-formedness check: tags, self-closing tags, declarations).
bool TagsBalance(const std::string& xml) {
  std::vector<std::string> open;
  for (size_t i = xml.find('<'); i != std::string::npos; i = xml.find('<', i + 1)) {
    size_t end = xml.find('>', i);
    if (end == std::string::npos) return false;
    std::string tag = xml.substr(i + 1, end - i - 1);
    if (tag.empty() || tag[0] == '?' || tag[0] == '!') continue;
    if (tag.back() == '/') continue;
    std::string name = tag.substr(tag[0] == '/' ? 1 : 0);
    name = name.substr(0, name.find_first_of(" \n\t"));
    if (tag[0] == '/') {
      if (open.empty() || open.back() != name) return false;
      open.pop_back();
    } else {
      open.push_back(name);
    }
  }
  return open.empty();
}

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
  EXPECT_TRUE(TagsBalance(svg));
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
  EXPECT_TRUE(TagsBalance(svg));
  EXPECT_NE(svg.find("a&lt;b&gt;&amp;&quot;c&quot;"), std::string::npos);
  EXPECT_NE(svg.find("x&lt;y"), std::string::npos);
}

}  // namespace
}  // namespace serenity
