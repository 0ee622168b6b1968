#include "core/schedule/summed_footprint.h"

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "core/schedule/layout_conversions.h"
#include "core/schedule/primitive_weights.h"
#include "core/schedule/time_search.h"

namespace serenity {
namespace {

using Clock = std::chrono::steady_clock;

// A (workspace sum, time) pair of the ops so far, with how it was reached:
// the index of its pair after the previous op and this op's alternative.
struct Candidate {
  int64_t workspace;
  double time;
  uint32_t parent;
  uint8_t alternative;
};

}  // namespace

int64_t FixedFootprintBytes(const Graph& graph, bool count_weights) {
  int64_t bytes = count_weights ? graph.weight_bytes() : 0;
  for (const Tensor& t : graph.tensors()) {
    if (!t.is_weight) bytes += t.bytes;
  }
  for (const Op& op : graph.ops()) {
    if (op.alternatives.empty()) bytes += op.workspace_bytes;
  }
  return bytes;
}

int64_t SummedFootprintBytes(const Graph& graph, const std::vector<int>& choice, bool count_weights) {
  int64_t bytes = FixedFootprintBytes(graph, count_weights) + PrimitiveWeights(graph, count_weights).ExtraOf(choice);
  const std::vector<int64_t> workspaces = StepWorkspaces(graph, choice);
  for (OpId u = 0; u < graph.num_ops(); ++u) {
    if (choice[u] >= 0) bytes += workspaces[u];
  }
  return bytes;
}

SummedFootprintChoice LeastTimeWithinFootprint(const Graph& graph, int64_t budget, bool count_weights,
                                               const SummedFootprintLimits& limits) {
  // An alternative's knapsack weight: its workspace and, when weights are
  // counted, the resident bytes it adds above its op's least (never
  // negative; the least of every op are in `fixed`).
  const PrimitiveWeights weights(graph, count_weights);
  const auto item = [&](OpId u, int a) {
    return graph.op(u).alternatives[a].workspace_bytes + weights.ExtraAboveLeast(u, a);
  };
  // Per op its alternative of least item (ties: the faster, then the
  // first); without counted weights LeastWorkspaceChoices.
  std::vector<int> least(graph.num_ops(), -1);
  std::vector<OpId> stages;  // the ops with alternatives
  for (OpId u = 0; u < graph.num_ops(); ++u) {
    const std::vector<Primitive>& alternatives = graph.op(u).alternatives;
    if (alternatives.empty()) continue;
    stages.push_back(u);
    for (int a = 0; a < static_cast<int>(alternatives.size()); ++a) {
      const int b = least[u];
      if (b < 0 || item(u, a) < item(u, b) ||
          (item(u, a) == item(u, b) && alternatives[a].time_us < alternatives[b].time_us)) {
        least[u] = a;
      }
    }
  }
  const size_t m = stages.size();
  // suffix[k]: the least item sum the stages from k on need.
  std::vector<int64_t> suffix(m + 1, 0);
  for (size_t k = m; k-- > 0;) suffix[k] = suffix[k + 1] + item(stages[k], least[stages[k]]);
  const int64_t fixed = FixedFootprintBytes(graph, count_weights) + weights.least_total();

  SummedFootprintChoice out;
  const auto finish = [&](std::vector<int> choice) {
    out.time_us = ChoiceTime(graph, choice);
    out.footprint_bytes = SummedFootprintBytes(graph, choice, count_weights);
    out.choice = std::move(choice);
    return out;
  };
  if (budget < fixed || suffix[0] > budget - fixed) {
    out.proven = true;  // even the least footprint is above the budget
    return finish(least);
  }
  // The bytes the stages' items may take in all.
  const int64_t room = budget - fixed;
  const size_t max_pairs = static_cast<size_t>(std::max<int64_t>(2, limits.max_pairs));
  std::vector<std::pair<int64_t, double>> pairs = {{0, 0.0}};
  std::vector<std::vector<uint32_t>> parents(m);
  std::vector<std::vector<uint8_t>> alternatives(m);
  MemoryCharge charge(limits.memory);
  bool proven = true;
  size_t done = 0;  // stages whose pairs are in `pairs`
  std::vector<Candidate> next;
  for (; done < m; ++done) {
    if (Clock::now() >= limits.deadline) {
      proven = false;
      break;
    }
    const Op& op = graph.op(stages[done]);
    // Pairs that leave the later stages less than their least workspaces
    // cannot be completed: left out.
    const int64_t cap = room - suffix[done + 1];
    next.clear();
    for (size_t i = 0; i < pairs.size(); ++i) {
      for (size_t a = 0; a < op.alternatives.size(); ++a) {
        const int64_t bytes = item(stages[done], static_cast<int>(a));
        if (bytes > cap - pairs[i].first) continue;
        next.push_back({pairs[i].first + bytes, pairs[i].second + op.alternatives[a].time_us, static_cast<uint32_t>(i),
                        static_cast<uint8_t>(a)});
      }
    }
    std::sort(next.begin(), next.end(), [](const Candidate& x, const Candidate& y) {
      return x.workspace != y.workspace ? x.workspace < y.workspace : x.time < y.time;
    });
    // The undominated ones: each faster than every one of smaller sum.
    std::vector<Candidate> kept;
    for (const Candidate& c : next) {
      if (kept.empty() || c.time < kept.back().time) kept.push_back(c);
    }
    if (kept.size() > max_pairs) {
      std::vector<Candidate> thinned;
      for (size_t j = 0; j < max_pairs; ++j) thinned.push_back(kept[j * (kept.size() - 1) / (max_pairs - 1)]);
      kept = std::move(thinned);
      proven = false;
    }
    if (!charge.TryAdd(static_cast<int64_t>(kept.size() * (sizeof(uint32_t) + sizeof(uint8_t))))) {
      proven = false;
      break;
    }
    out.max_pairs_kept = std::max<int64_t>(out.max_pairs_kept, static_cast<int64_t>(kept.size()));
    pairs.clear();
    for (const Candidate& c : kept) {
      pairs.emplace_back(c.workspace, c.time);
      parents[done].push_back(c.parent);
      alternatives[done].push_back(c.alternative);
    }
  }
  // The fastest pair (the last: times fall as sums grow), the stages not
  // reached at their least workspace (within the budget by `cap`).
  std::vector<int> choice = least;
  size_t index = pairs.size() - 1;
  for (size_t k = done; k-- > 0;) {
    choice[stages[k]] = alternatives[k][index];
    index = parents[k][index];
  }
  out.feasible = true;
  out.proven = proven;
  finish(std::move(choice));
  if (LayoutConversions(graph).active()) {
    // The knapsack left the layout conversions out: its choice, with them,
    // is not proven least, and may not fit.
    out.proven = false;
    out.feasible = out.footprint_bytes <= budget;
  }
  return out;
}

}  // namespace serenity
