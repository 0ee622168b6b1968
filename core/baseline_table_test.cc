#include "core/baseline_table.h"

#include <random>
#include <set>
#include <string>

#include "core/schedule/compiler_baselines.h"
#include "gtest/gtest.h"
#include "tests/testing/test_graph.h"

namespace serenity {
namespace {

// The table has one row per Baseline, at the enum's position, with distinct
// names; BaselineName reads it.
TEST(BaselineTableTest, OneRowPerBaselineInEnumOrder) {
  ASSERT_EQ(BaselineTable().size(), kNumBaselines);
  std::set<std::string> names;
  for (size_t i = 0; i < BaselineTable().size(); ++i) {
    const BaselineInfo& info = BaselineTable()[i];
    EXPECT_EQ(static_cast<size_t>(info.baseline), i);
    EXPECT_EQ(std::string(BaselineName(info.baseline)), info.name);
    names.insert(info.name);
  }
  EXPECT_EQ(names.size(), kNumBaselines);
  EXPECT_STREQ(BaselineName(Baseline::kFileOrder), "file_order");
  EXPECT_STREQ(BaselineName(Baseline::kXla), "xla");
}

// Each row's order function is the schedule it names.
TEST(BaselineTableTest, RowsMakeTheNamedOrders) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 20; ++trial) {
    const Graph g = *Graph::Build(testing::RandomDag(5 + trial, rng));
    const BufferModel buffers(g, MemoryModel{});
    PerBaseline<std::vector<OpId>> orders;
    for (const BaselineInfo& info : BaselineTable()) orders[info.baseline] = info.order(buffers, {});
    EXPECT_EQ(orders[Baseline::kFileOrder], FileOrder(g));
    EXPECT_EQ(orders[Baseline::kKahn], KahnOrder(g));
    EXPECT_EQ(orders[Baseline::kGreedy], GreedyOrder(buffers));
    EXPECT_EQ(orders[Baseline::kInductor], InductorOrder(buffers));
    EXPECT_EQ(orders[Baseline::kXla], XlaOrder(buffers));
  }
}

}  // namespace
}  // namespace serenity
