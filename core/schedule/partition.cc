#include "core/schedule/partition.h"

#include <algorithm>

#include "core/graph/reachability.h"

namespace serenity {

std::vector<std::vector<OpId>> SplitAtCutPoints(const Graph& graph) {
  const Reachability reach(graph);
  std::vector<std::vector<OpId>> segments;
  segments.reserve(reach.num_segments());
  for (int k = 0; k < reach.num_segments(); ++k) {
    std::vector<OpId> segment = reach.segment(k);
    if (reach.has_bits(k) && segment.size() > 1) {
      // By ancestor count (a topological order), ties by op id.
      const size_t words = reach.words(k);
      std::vector<int> ancestors(segment.size());  // by local index
      for (OpId u : segment) {
        const uint64_t* bits = reach.Ancestors(u);
        int count = 0;
        for (size_t w = 0; w < words; ++w) count += __builtin_popcountll(bits[w]);
        ancestors[reach.local_index(u)] = count;
      }
      std::sort(segment.begin(), segment.end(), [&](OpId a, OpId b) {
        const int ca = ancestors[reach.local_index(a)], cb = ancestors[reach.local_index(b)];
        return ca != cb ? ca < cb : a < b;
      });
    }
    // A segment without bitsets keeps the reachability's topological order.
    segments.push_back(std::move(segment));
  }
  return segments;
}

}  // namespace serenity
