#include "core/rewrite/follow_order.h"

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/testing/orders.h"
#include "tests/testing/test_graph.h"

namespace serenity {
namespace {

// A graph and a reference naming about two thirds of its ops (the others
// play a rewrite's new ops) in one of its orders, with names of ops it does
// not have (ops a rewrite removed) among them.
struct RewrittenCase {
  Graph graph;
  std::vector<OpId> reference_order;  // the graph's order the names come from
  std::vector<std::string> reference;
  std::vector<bool> named;
};

RewrittenCase RandomRewrittenCase(int trial, std::mt19937& rng) {
  RewrittenCase c{*Graph::Build(testing::RandomDag(2 + trial % 40, rng, trial % 3 == 0)), {}, {}, {}};
  c.reference_order = testing::RandomTopologicalOrder(c.graph, rng);
  c.named.assign(c.graph.num_ops(), false);
  for (OpId u : c.reference_order) {
    if (rng() % 3 == 0) continue;  // a new op
    c.named[u] = true;
    c.reference.push_back(c.graph.op(u).name);
    if (rng() % 5 == 0) c.reference.push_back("removed_" + std::to_string(u));
  }
  return c;
}

// The named ops of `order`, in its order.
std::vector<OpId> NamedOps(const std::vector<OpId>& order, const std::vector<bool>& named) {
  std::vector<OpId> ops;
  for (OpId u : order) {
    if (named[u]) ops.push_back(u);
  }
  return ops;
}

// Given the names of one of its own orders, a graph gets that order back.
TEST(FollowOrderTest, GivesBackAnOrderOfTheSameGraph) {
  std::mt19937 rng(5);
  for (int trial = 0; trial < 200; ++trial) {
    const Graph g = *Graph::Build(testing::RandomDag(1 + trial % 30, rng, trial % 2 == 0));
    const std::vector<OpId> order = testing::RandomTopologicalOrder(g, rng);
    EXPECT_EQ(FollowOrder(g, OpNamesInOrder(g, order)), order) << "trial " << trial;
    EXPECT_EQ(FollowOrder(g, OpNamesInOrder(g, order), NewOps::kWhenNeeded), order) << "trial " << trial;
  }
}

// Ops the reference does not name (a rewrite's new ops) run as soon as
// they are ready; the named ones keep the reference's order; names the graph
// does not have (ops a rewrite removed) are ignored.
TEST(FollowOrderTest, NewOpsRunAsSoonAsReadyAndNamedOnesKeepTheirOrder) {
  std::mt19937 rng(6);
  int new_ops = 0;
  for (int trial = 0; trial < 300; ++trial) {
    const RewrittenCase c = RandomRewrittenCase(trial, rng);
    const Graph& g = c.graph;
    const std::vector<bool>& named = c.named;
    const std::vector<OpId> order = FollowOrder(g, c.reference);
    ASSERT_TRUE(CheckOrder(g, order).ok()) << "trial " << trial;
    std::vector<int> position(g.num_ops());
    for (size_t i = 0; i < order.size(); ++i) position[order[i]] = static_cast<int>(i);
    EXPECT_EQ(NamedOps(order, named), NamedOps(c.reference_order, named)) << "trial " << trial;
    // No named op runs between a new op's last predecessor and itself.
    for (OpId u = 0; u < g.num_ops(); ++u) {
      if (named[u]) continue;
      ++new_ops;
      int ready = 0;
      for (OpId p : g.op(u).predecessors) ready = std::max(ready, position[p] + 1);
      for (int i = ready; i < position[u]; ++i) {
        EXPECT_FALSE(named[order[i]]) << "trial " << trial << ": new op " << u << " waited for " << order[i];
      }
    }
  }
  EXPECT_GT(new_ops, 100);
}

// kWhenNeeded: the named ops keep the reference's order (names the graph
// does not have are ignored), and a new op runs with no named op between it
// and the first named op that needs it (directly or through other new ops);
// a new op no named op needs runs after every named op.
TEST(FollowOrderTest, NewOpsRunWhenNeededAndNamedOnesKeepTheirOrder) {
  std::mt19937 rng(9);
  int needed = 0, unneeded = 0;
  for (int trial = 0; trial < 300; ++trial) {
    const RewrittenCase c = RandomRewrittenCase(trial, rng);
    const Graph& g = c.graph;
    const std::vector<bool>& named = c.named;
    const std::vector<OpId> order = FollowOrder(g, c.reference, NewOps::kWhenNeeded);
    ASSERT_TRUE(CheckOrder(g, order).ok()) << "trial " << trial;
    EXPECT_EQ(NamedOps(order, named), NamedOps(c.reference_order, named)) << "trial " << trial;
    std::vector<int> position(g.num_ops());
    for (size_t i = 0; i < order.size(); ++i) position[order[i]] = static_cast<int>(i);
    int last_named = -1;
    for (size_t i = 0; i < order.size(); ++i) {
      if (named[order[i]]) last_named = static_cast<int>(i);
    }
    for (OpId u = 0; u < g.num_ops(); ++u) {
      if (named[u]) continue;
      // The first named op, in the order, among u's descendants.
      std::vector<bool> below(g.num_ops(), false);
      std::vector<OpId> stack = {u};
      int first_named = INT32_MAX;
      while (!stack.empty()) {
        const OpId v = stack.back();
        stack.pop_back();
        for (OpId w : g.op(v).successors) {
          if (below[w]) continue;
          below[w] = true;
          if (named[w]) first_named = std::min(first_named, position[w]);
          stack.push_back(w);
        }
      }
      if (first_named == INT32_MAX) {
        ++unneeded;
        EXPECT_GT(position[u], last_named) << "trial " << trial << ": new op " << u;
        continue;
      }
      ++needed;
      for (int i = position[u] + 1; i < first_named; ++i) {
        EXPECT_FALSE(named[order[i]]) << "trial " << trial << ": new op " << u << " ran before " << order[i];
      }
    }
  }
  EXPECT_GT(needed, 100);
  EXPECT_GT(unneeded, 20);
}

}  // namespace
}  // namespace serenity
