#include "core/graph/reachability.h"

#include <algorithm>
#include <climits>

namespace serenity {

Reachability::Reachability(const Graph& graph, int max_segment_ops) {
  const int n = graph.num_ops();
  segment_of_.assign(n, 0);
  local_.assign(n, 0);
  std::vector<OpId> topo;
  topo.reserve(n);
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
  std::vector<int> pos(n);
  for (int i = 0; i < n; ++i) pos[topo[i]] = i;
  // The op at position i is a cut point when every op before it has a
  // successor at or before i (so a path to it) and every op after it a
  // predecessor at or after i (so a path from it): a prefix maximum of the
  // nearest successors and a suffix minimum of the latest predecessors.
  // suffix_min[i]: the smallest, over positions j >= i, of the latest
  // predecessor's position (INT_MIN for an op without predecessors).
  std::vector<int> suffix_min(n + 1, INT_MAX);
  for (int i = n - 1; i >= 0; --i) {
    int latest = INT_MIN;
    for (OpId p : graph.op(topo[i]).predecessors) latest = std::max(latest, pos[p]);
    suffix_min[i] = std::min(suffix_min[i + 1], latest);
  }
  std::vector<bool> cut(n, false);
  int furthest = INT_MIN;  // max over j < i of the nearest successor's position
  for (int i = 0; i < n; ++i) {
    cut[i] = furthest <= i && suffix_min[i + 1] >= i;
    int nearest = INT_MAX;
    for (OpId s : graph.op(topo[i]).successors) nearest = std::min(nearest, pos[s]);
    furthest = std::max(furthest, nearest);
  }
  segments_.emplace_back();
  for (int i = 0; i < n; ++i) {
    segments_.back().push_back(topo[i]);
    if (cut[i] && i + 1 < n) segments_.emplace_back();
  }
  if (segments_.back().empty()) segments_.pop_back();

  for (size_t k = 0; k < segments_.size(); ++k) {
    for (size_t i = 0; i < segments_[k].size(); ++i) {
      segment_of_[segments_[k][i]] = static_cast<int>(k);
      local_[segments_[k][i]] = static_cast<int>(i);
    }
  }
  bits_.resize(segments_.size());
  int64_t total_bytes = 0;
  for (size_t k = 0; k < segments_.size(); ++k) {
    const std::vector<OpId>& ops = segments_[k];
    const int m = static_cast<int>(ops.size());
    if (m <= 1 || m > max_segment_ops) continue;
    const int64_t bytes = 2 * 8 * static_cast<int64_t>(m) * ((m + 63) / 64);
    if (total_bytes + bytes > kMaxBitsetBytes) continue;
    total_bytes += bytes;
    Bits& bits = bits_[k];
    bits.words = (static_cast<size_t>(m) + 63) / 64;
    bits.ancestors.assign(static_cast<size_t>(m) * bits.words, 0);
    bits.descendants.assign(static_cast<size_t>(m) * bits.words, 0);
    const int kk = static_cast<int>(k);
    for (int i = 0; i < m; ++i) {
      uint64_t* anc = &bits.ancestors[static_cast<size_t>(i) * bits.words];
      for (OpId p : graph.op(ops[i]).predecessors) {
        if (segment_of_[p] != kk) continue;
        const int j = local_[p];
        const uint64_t* from = &bits.ancestors[static_cast<size_t>(j) * bits.words];
        for (size_t w = 0; w < bits.words; ++w) anc[w] |= from[w];
        anc[j / 64] |= uint64_t{1} << (j % 64);
      }
    }
    for (int i = m - 1; i >= 0; --i) {
      uint64_t* desc = &bits.descendants[static_cast<size_t>(i) * bits.words];
      for (OpId s : graph.op(ops[i]).successors) {
        if (segment_of_[s] != kk) continue;
        const int j = local_[s];
        const uint64_t* from = &bits.descendants[static_cast<size_t>(j) * bits.words];
        for (size_t w = 0; w < bits.words; ++w) desc[w] |= from[w];
        desc[j / 64] |= uint64_t{1} << (j % 64);
      }
    }
  }
}

}  // namespace serenity
