#include "core/graph/reachability.h"

#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "tests/testing/test_graph.h"

namespace serenity {
namespace {

// Reachability by depth-first search from every op.
std::vector<std::vector<bool>> Paths(const Graph& g) {
  const int n = g.num_ops();
  std::vector<std::vector<bool>> reach(n, std::vector<bool>(n, false));
  for (OpId u = 0; u < n; ++u) {
    std::vector<OpId> stack = {u};
    while (!stack.empty()) {
      const OpId v = stack.back();
      stack.pop_back();
      for (OpId s : g.op(v).successors) {
        if (!reach[u][s]) {
          reach[u][s] = true;
          stack.push_back(s);
        }
      }
    }
  }
  return reach;
}

// Segments, cut points and ancestor/descendant answers match their
// definitions on random DAGs (chains of cells included), with every op's
// segment given bitsets or, with a cap of 3 ops, only the small ones.
TEST(ReachabilityTest, MatchesDepthFirstSearch) {
  std::mt19937 rng(18);
  int cuts_seen = 0;
  for (int trial = 0; trial < 200; ++trial) {
    Graph g = *Graph::Build(testing::RandomDag(1 + trial % 40, rng));
    const int n = g.num_ops();
    const std::vector<std::vector<bool>> paths = Paths(g);
    for (int cap : {Reachability::kDefaultMaxSegmentOps, 3}) {
      const Reachability reach(g, cap);
      // Every op in exactly one segment, segments in a topological order.
      std::vector<int> seen(n, 0);
      int position = 0;
      std::vector<int> pos(n);
      for (int k = 0; k < reach.num_segments(); ++k) {
        ASSERT_FALSE(reach.segment(k).empty());
        for (OpId u : reach.segment(k)) {
          ++seen[u];
          pos[u] = position++;
          EXPECT_EQ(reach.segment_of(u), k);
        }
      }
      for (OpId u = 0; u < n; ++u) ASSERT_EQ(seen[u], 1);
      for (OpId u = 0; u < n; ++u) {
        for (OpId s : g.op(u).successors) EXPECT_LT(pos[u], pos[s]);
      }
      // Cut points: exactly the ops related to every other op, each ending
      // its segment (the last segment may end otherwise).
      for (OpId u = 0; u < n; ++u) {
        bool is_cut = true;
        for (OpId v = 0; v < n; ++v) is_cut = is_cut && (v == u || paths[u][v] || paths[v][u]);
        const std::vector<OpId>& segment = reach.segment(reach.segment_of(u));
        const bool ends_segment = segment.back() == u;
        const bool last_segment = reach.segment_of(u) + 1 == reach.num_segments();
        if (is_cut) {
          EXPECT_TRUE(ends_segment) << "trial " << trial << " op " << u;
          ++cuts_seen;
        } else if (!last_segment) {
          EXPECT_FALSE(ends_segment) << "trial " << trial << " op " << u;
        }
        if (!last_segment && ends_segment) {
          EXPECT_TRUE(is_cut);
        }
      }
      for (OpId u = 0; u < n; ++u) {
        const int k = reach.segment_of(u);
        EXPECT_EQ(reach.has_bits(k), static_cast<int>(reach.segment(k).size()) <= cap);
        for (OpId v = 0; v < n; ++v) {
          if (reach.segment_of(v) == k && !reach.has_bits(k)) continue;
          EXPECT_EQ(reach.IsAncestor(v, u), paths[v][u]) << "trial " << trial;
          EXPECT_EQ(reach.IsDescendant(v, u), paths[u][v]) << "trial " << trial;
        }
      }
    }
  }
  EXPECT_GT(cuts_seen, 100);
}

// A chain of 100,000 ops is 100,000 segments of one op (no bitsets at all);
// a layered DAG of 20,000 ops is one segment (after its first layer).
TEST(ReachabilityTest, LongChainIsLinear) {
  const int n = 100000;
  Graph g = *Graph::Build(testing::ReluChain(n));
  const Reachability reach(g);
  ASSERT_EQ(reach.num_segments(), n);
  EXPECT_TRUE(reach.IsAncestor(0, n - 1));
  EXPECT_FALSE(reach.IsDescendant(0, n - 1));
  EXPECT_TRUE(reach.IsDescendant(n - 1, 0));
  Graph layered = *Graph::Build(testing::LayeredDag(20000, 8));
  const Reachability wide(layered, 1000);
  EXPECT_LE(wide.num_segments(), 2);
  EXPECT_FALSE(wide.has_bits(wide.num_segments() - 1));
}

}  // namespace
}  // namespace serenity
