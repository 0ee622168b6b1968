#include "core/schedule/layout_conversions.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "absl/container/flat_hash_map.h"

namespace serenity {

ConversionCost CostOf(const LayoutTransform& transform, int64_t bytes) {
  const double mib = static_cast<double>(bytes) / 1048576.0;
  return {transform.time_us_per_mb * mib, static_cast<int64_t>(std::ceil(transform.workspace_bytes_per_mb * mib))};
}

LayoutConversions::LayoutConversions(const Graph& graph) : graph_(graph) {
  const int n = graph.num_ops();
  names_.push_back("");
  absl::flat_hash_map<std::string, int> id{{"", 0}};
  const auto intern = [&](const std::string& name) {
    auto [it, inserted] = id.try_emplace(name, static_cast<int>(names_.size()));
    if (inserted) names_.push_back(name);
    return it->second;
  };
  layout_.resize(n);
  layouts_.resize(n);
  sensitive_.assign(n, false);
  feeds_sensitive_.assign(n, false);
  inputs_.resize(n);
  for (OpId u = 0; u < n; ++u) {
    for (const Primitive& p : graph.op(u).alternatives) {
      const int l = intern(p.layout);
      layout_[u].push_back(l);
      if (std::find(layouts_[u].begin(), layouts_[u].end(), l) == layouts_[u].end()) layouts_[u].push_back(l);
      sensitive_[u] = sensitive_[u] || l != 0;
    }
    if (layouts_[u].empty()) layouts_[u].push_back(0);
    active_ = active_ || sensitive_[u];
  }
  for (const LayoutTransform& t : graph.layout_transforms()) {
    auto from = id.find(t.from), to = id.find(t.to);
    if (from != id.end() && to != id.end()) transform_[{from->second, to->second}] = &t;
  }
  for (OpId u = 0; u < n; ++u) {
    if (!sensitive_[u]) continue;
    std::vector<TensorId> seen;
    for (TensorId t : graph.op(u).inputs) {
      const OpId p = graph.tensor(t).producer;
      if (p == kNoOp || !sensitive_[p] || std::find(seen.begin(), seen.end(), t) != seen.end()) continue;
      seen.push_back(t);
      inputs_[u].push_back({t, p});
      feeds_sensitive_[p] = true;
    }
  }
}

int64_t LayoutConversions::MostConversionBytes(OpId u) const {
  int64_t most = 0;
  for (const Input& input : inputs_[u]) {
    int64_t one = 0;
    for (const auto& [pair, t] : transform_) {
      one = std::max(one, CostOf(*t, graph_.tensor(input.tensor).bytes).workspace_bytes);
    }
    most += one;
  }
  return most;
}

ConversionCost LayoutConversions::CostFor(OpId u, const std::vector<int>& choice) const {
  if (!active_) return {};
  return InputCost(u, LayoutOf(u, choice[u]), [&](OpId p) { return LayoutOf(p, choice[p]); });
}

std::vector<int64_t> StepWorkspaces(const Graph& graph, const std::vector<int>& choice) {
  const LayoutConversions conversions(graph);
  std::vector<int64_t> out(graph.num_ops());
  for (OpId u = 0; u < graph.num_ops(); ++u) {
    const Op& op = graph.op(u);
    out[u] = (choice[u] < 0 ? op.workspace_bytes : op.alternatives[choice[u]].workspace_bytes) +
             conversions.CostFor(u, choice).workspace_bytes;
  }
  return out;
}

double ChoiceTime(const Graph& graph, const std::vector<int>& choice) {
  const LayoutConversions conversions(graph);
  double time = 0;
  for (OpId u = 0; u < graph.num_ops(); ++u) {
    if (choice[u] >= 0) time += graph.op(u).alternatives[choice[u]].time_us;
    time += conversions.CostFor(u, choice).time_us;
  }
  return time;
}

}  // namespace serenity
