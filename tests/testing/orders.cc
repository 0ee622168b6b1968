#include "tests/testing/orders.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <sstream>

#include "tests/testing/plan_verifier.h"

namespace serenity::testing {
namespace {

void Extend(const Graph& g, std::vector<OpId>& prefix, std::vector<int>& indegree,
            const std::function<void(const std::vector<OpId>&)>& visit) {
  if (static_cast<int>(prefix.size()) == g.num_ops()) {
    visit(prefix);
    return;
  }
  for (OpId u = 0; u < g.num_ops(); ++u) {
    if (indegree[u] != 0) continue;
    indegree[u] = -1;
    for (OpId v : g.op(u).successors) --indegree[v];
    prefix.push_back(u);
    Extend(g, prefix, indegree, visit);
    prefix.pop_back();
    for (OpId v : g.op(u).successors) ++indegree[v];
    indegree[u] = 0;
  }
}

std::vector<int> Indegrees(const Graph& g) {
  std::vector<int> indegree(g.num_ops());
  for (OpId u = 0; u < g.num_ops(); ++u) indegree[u] = static_cast<int>(g.op(u).predecessors.size());
  return indegree;
}

}  // namespace

void ForEachTopologicalOrder(const Graph& graph, const std::function<void(const std::vector<OpId>&)>& visit) {
  std::vector<OpId> prefix;
  std::vector<int> indegree = Indegrees(graph);
  Extend(graph, prefix, indegree, visit);
}

ChoiceCost CostOfChoice(const Graph& graph, const std::vector<int>& choice) {
  const int n = graph.num_ops();
  ChoiceCost out;
  out.workspace.resize(n);
  const auto layout = [&](OpId u) -> std::string {
    const Op& op = graph.op(u);
    return op.alternatives.empty() || choice[u] < 0 ? "" : op.alternatives[choice[u]].layout;
  };
  for (const Tensor& t : graph.tensors()) out.weight_bytes += t.is_weight ? t.bytes : 0;
  for (OpId v = 0; v < n; ++v) {
    const Op& op = graph.op(v);
    const bool has = !op.alternatives.empty() && choice[v] >= 0;
    if (has && op.alternatives[choice[v]].weight_bytes != 0) {
      out.weight_bytes += op.alternatives[choice[v]].weight_bytes;
      std::vector<TensorId> own;
      for (TensorId t : op.inputs) {
        const Tensor& tensor = graph.tensor(t);
        if (!tensor.is_weight || tensor.is_graph_output || tensor.consumers != std::vector<OpId>{v}) continue;
        if (std::find(own.begin(), own.end(), t) != own.end()) continue;
        own.push_back(t);
        out.weight_bytes -= tensor.bytes;
      }
    }
    out.workspace[v] = has ? op.alternatives[choice[v]].workspace_bytes : op.workspace_bytes;
    out.time += has ? op.alternatives[choice[v]].time_us : 0;
    const std::string to = layout(v);
    if (to.empty()) continue;
    std::vector<TensorId> converted;
    for (TensorId t : op.inputs) {
      const OpId p = graph.tensor(t).producer;
      if (p == kNoOp || std::find(converted.begin(), converted.end(), t) != converted.end()) continue;
      const std::string from = layout(p);
      if (from.empty() || from == to) continue;
      converted.push_back(t);
      for (const LayoutTransform& transform : graph.layout_transforms()) {
        if (transform.from != from || transform.to != to) continue;
        const double mib = static_cast<double>(graph.tensor(t).bytes) / (1 << 20);
        out.time += transform.time_us_per_mb * mib;
        out.workspace[v] += static_cast<int64_t>(std::ceil(transform.workspace_bytes_per_mb * mib));
      }
    }
  }
  return out;
}

std::vector<std::pair<int64_t, double>> BruteForceTimeFrontier(const Graph& graph, bool alias_views, bool in_place,
                                                               bool count_weights) {
  const int n = graph.num_ops();
  std::vector<int> choice(n, 0);
  std::vector<std::pair<int64_t, double>> plans;  // (least peak, time) per choice
  std::function<void(int)> choose = [&](int u) {
    if (u == n) {
      const ChoiceCost cost = CostOfChoice(graph, choice);
      const std::vector<int64_t>& workspace = cost.workspace;
      const double time = cost.time;
      const Graph chosen = graph.WithWorkspaces(workspace);
      int64_t least = std::numeric_limits<int64_t>::max();
      ForEachTopologicalOrder(chosen, [&](const std::vector<OpId>& order) {
        least = std::min(least, NaivePeak(chosen, order, alias_views, /*count_weights=*/false, in_place));
      });
      plans.emplace_back(least + (count_weights ? cost.weight_bytes : 0), time);
      return;
    }
    const int alternatives = std::max<int>(1, static_cast<int>(graph.op(u).alternatives.size()));
    for (choice[u] = 0; choice[u] < alternatives; ++choice[u]) choose(u + 1);
  };
  choose(0);
  std::sort(plans.begin(), plans.end());
  std::vector<std::pair<int64_t, double>> frontier;
  for (const auto& plan : plans) {
    if (frontier.empty() || plan.second < frontier.back().second) frontier.push_back(plan);
  }
  return frontier;
}

double BruteForceLeastTime(const Graph& graph, bool alias_views, bool in_place, int64_t budget, bool count_weights) {
  double best = std::numeric_limits<double>::infinity();
  for (const auto& [peak, time] : BruteForceTimeFrontier(graph, alias_views, in_place, count_weights)) {
    if (peak <= budget) best = std::min(best, time);
  }
  return best;
}

std::vector<OpId> RandomTopologicalOrder(const Graph& graph, std::mt19937& rng) {
  std::vector<int> indegree = Indegrees(graph);
  std::vector<OpId> ready, order;
  for (OpId u = 0; u < graph.num_ops(); ++u) {
    if (indegree[u] == 0) ready.push_back(u);
  }
  while (!ready.empty()) {
    size_t i = std::uniform_int_distribution<size_t>(0, ready.size() - 1)(rng);
    OpId u = ready[i];
    ready.erase(ready.begin() + static_cast<long>(i));
    order.push_back(u);
    for (OpId v : graph.op(u).successors) {
      if (--indegree[v] == 0) ready.push_back(v);
    }
  }
  return order;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

std::vector<std::string> OnnxFilesIn(const std::string& dir) {
  std::vector<std::string> files;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
    if (entry.path().extension() == ".onnx") files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace serenity::testing
