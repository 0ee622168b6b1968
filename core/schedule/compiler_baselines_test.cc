#include "core/schedule/compiler_baselines.h"

#include <algorithm>
#include <functional>
#include <random>

#include "core/memory/simulator.h"
#include "core/schedule/baselines.h"
#include "core/schedule/list_schedule.h"
#include "gtest/gtest.h"
#include "tests/testing/test_graph.h"

namespace serenity {
namespace {

// The compiler baselines as they were first written (their list schedules
// aside, which list_schedule_test checks against a scan of every ready op):
// a post-order asking for each op's visiting order as a new list, sorts by
// std::stable_sort and whole replays of every candidate.
std::vector<OpId> ReferencePostOrder(const Graph& graph, const std::function<std::vector<OpId>(OpId)>& visit_order) {
  std::vector<OpId> roots;
  auto add_root = [&](OpId u) {
    if (std::find(roots.begin(), roots.end(), u) == roots.end()) roots.push_back(u);
  };
  for (TensorId t : graph.outputs()) {
    if (graph.tensor(t).producer != kNoOp) add_root(graph.tensor(t).producer);
  }
  for (OpId u = 0; u < graph.num_ops(); ++u) {
    if (graph.op(u).successors.empty()) add_root(u);
  }
  std::vector<bool> visited(graph.num_ops(), false);
  std::vector<OpId> order;
  std::function<void(OpId)> visit = [&](OpId u) {
    visited[u] = true;
    for (OpId p : visit_order(u)) {
      if (!visited[p]) visit(p);
    }
    order.push_back(u);
  };
  for (OpId root : roots) {
    if (!visited[root]) visit(root);
  }
  return order;
}

std::vector<OpId> ReferenceSorted(const Graph& graph, OpId u, const std::function<bool(OpId, OpId)>& before) {
  std::vector<OpId> preds = graph.op(u).predecessors;
  std::stable_sort(preds.begin(), preds.end(), before);
  return preds;
}

std::vector<OpId> ReferenceBest(const BufferModel& buffers, std::vector<std::vector<OpId>> candidates) {
  size_t best = 0;
  for (size_t i = 1; i < candidates.size(); ++i) {
    if (PeakOf(buffers, candidates[i]) < PeakOf(buffers, candidates[best])) best = i;
  }
  return candidates[best];
}

std::vector<OpId> ReferenceInductor(const BufferModel& buffers) {
  const Graph& graph = buffers.graph();
  std::vector<int> depth(graph.num_ops(), 0);
  for (OpId u : FileOrder(graph)) {
    for (OpId p : graph.op(u).predecessors) depth[u] = std::max(depth[u], depth[p] + 1);
  }
  std::vector<OpId> bfs(graph.num_ops());
  for (OpId u = 0; u < graph.num_ops(); ++u) bfs[u] = u;
  std::stable_sort(bfs.begin(), bfs.end(), [&](OpId a, OpId b) { return depth[a] < depth[b]; });
  std::vector<int64_t> out_bytes(graph.num_ops(), 0);
  for (OpId u = 0; u < graph.num_ops(); ++u) {
    for (TensorId t : graph.op(u).outputs) out_bytes[u] += graph.tensor(t).bytes;
  }
  std::vector<OpId> dfs = ReferencePostOrder(graph, [&](OpId u) {
    return ReferenceSorted(graph, u, [&](OpId a, OpId b) { return out_bytes[a] > out_bytes[b]; });
  });
  return ReferenceBest(buffers, {FileOrder(graph), ListSchedule(buffers, ListRule::kLeastPeakFirst), bfs, dfs});
}

std::vector<OpId> ReferenceXla(const BufferModel& buffers) {
  const Graph& graph = buffers.graph();
  std::vector<int> extra_users(graph.num_ops(), 0);
  std::vector<int64_t> total_bytes(graph.num_ops(), 0);
  for (OpId u : FileOrder(graph)) {
    for (TensorId t : graph.op(u).outputs) {
      total_bytes[u] += graph.tensor(t).bytes;
      extra_users[u] += std::max(0, static_cast<int>(graph.tensor(t).consumers.size()) - 1);
    }
    for (OpId p : graph.op(u).predecessors) total_bytes[u] = std::min(INT64_MAX / 2, total_bytes[u] + total_bytes[p]);
  }
  std::vector<OpId> dfs = ReferencePostOrder(graph, [&](OpId u) {
    return ReferenceSorted(graph, u, [&](OpId a, OpId b) {
      if (extra_users[a] != extra_users[b]) return extra_users[a] > extra_users[b];
      return total_bytes[a] > total_bytes[b];
    });
  });
  std::vector<OpId> post = ReferencePostOrder(graph, [&](OpId u) {
    std::vector<OpId> preds;
    for (TensorId t : graph.op(u).inputs) {
      OpId p = graph.tensor(t).producer;
      if (p != kNoOp && std::find(preds.begin(), preds.end(), p) == preds.end()) preds.push_back(p);
    }
    return preds;
  });
  return ReferenceBest(buffers, {ListSchedule(buffers, ListRule::kLeastNetAllocation), dfs, post});
}

// The same orders as the reference on random DAGs (tensors of 1-100 bytes:
// many equal sizes, so the sorts' ties matter) under several memory models,
// and on DAGs whose ops read up to 40 tensors (the long predecessor lists
// that std::stable_sort still sorts).
TEST(CompilerBaselinesTest, SameOrdersAsTheReference) {
  std::mt19937 rng(23);
  for (int trial = 0; trial < 600; ++trial) {
    GraphSpec spec = testing::RandomDag(1 + trial % 70, rng, /*concats=*/trial % 3 == 0);
    if (trial % 4 == 1) testing::AddRandomWeights(&spec, rng);
    const Graph g = *Graph::Build(spec);
    MemoryModel model;
    model.alias_views = trial % 2 == 0;
    model.in_place = trial % 5 < 2;
    const BufferModel buffers(g, model);
    ASSERT_EQ(InductorOrder(buffers), ReferenceInductor(buffers)) << "trial " << trial;
    ASSERT_EQ(XlaOrder(buffers), ReferenceXla(buffers)) << "trial " << trial;
  }
}

TEST(CompilerBaselinesTest, SameOrdersAsTheReferenceWithLongPredecessorLists) {
  std::mt19937 rng(29);
  for (int trial = 0; trial < 40; ++trial) {
    testing::TestGraph g;
    g.Input("in", 7);
    const int num_ops = 30 + trial;
    for (int u = 0; u < num_ops; ++u) {
      std::vector<std::string> inputs{"in"};
      const int fan_in = std::uniform_int_distribution<int>(0, std::min(u, 40))(rng);
      for (int k = 0; k < fan_in; ++k) {
        inputs.push_back("t" + std::to_string(std::uniform_int_distribution<int>(0, u - 1)(rng)));
      }
      g.Op("op" + std::to_string(u), "Op", inputs,
           {{"t" + std::to_string(u), std::uniform_int_distribution<int64_t>(1, 4)(rng)}});
    }
    g.Output("t" + std::to_string(num_ops - 1));
    const Graph graph = g.Build();
    const BufferModel buffers(graph, {});
    ASSERT_EQ(InductorOrder(buffers), ReferenceInductor(buffers)) << "trial " << trial;
    ASSERT_EQ(XlaOrder(buffers), ReferenceXla(buffers)) << "trial " << trial;
  }
}

}  // namespace
}  // namespace serenity
