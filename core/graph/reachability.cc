#include "core/graph/reachability.h"

namespace serenity {

Reachability::Reachability(const Graph& graph)
    : words_((static_cast<size_t>(graph.num_ops()) + 63) / 64),
      ancestors_(static_cast<size_t>(graph.num_ops()) * words_, 0),
      descendants_(static_cast<size_t>(graph.num_ops()) * words_, 0) {
  const int n = graph.num_ops();
  std::vector<OpId> topo;
  std::vector<int> indegree(n);
  for (OpId u = 0; u < n; ++u) {
    indegree[u] = static_cast<int>(graph.op(u).predecessors.size());
    if (indegree[u] == 0) topo.push_back(u);
  }
  for (size_t i = 0; i < topo.size(); ++i) {
    for (OpId v : graph.op(topo[i]).successors) {
      if (--indegree[v] == 0) topo.push_back(v);
    }
  }
  for (OpId u : topo) {
    uint64_t* anc = &ancestors_[static_cast<size_t>(u) * words_];
    for (OpId p : graph.op(u).predecessors) {
      const uint64_t* from = &ancestors_[static_cast<size_t>(p) * words_];
      for (size_t w = 0; w < words_; ++w) anc[w] |= from[w];
      anc[p / 64] |= uint64_t{1} << (p % 64);
    }
  }
  for (auto it = topo.rbegin(); it != topo.rend(); ++it) {
    uint64_t* desc = &descendants_[static_cast<size_t>(*it) * words_];
    for (OpId s : graph.op(*it).successors) {
      const uint64_t* from = &descendants_[static_cast<size_t>(s) * words_];
      for (size_t w = 0; w < words_; ++w) desc[w] |= from[w];
      desc[s / 64] |= uint64_t{1} << (s % 64);
    }
  }
}

}  // namespace serenity
