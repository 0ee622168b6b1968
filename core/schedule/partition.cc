#include "core/schedule/partition.h"

#include <algorithm>

#include "core/graph/reachability.h"

namespace serenity {
namespace {

int Count(const uint64_t* bits, size_t words) {
  int count = 0;
  for (size_t w = 0; w < words; ++w) count += __builtin_popcountll(bits[w]);
  return count;
}

}  // namespace

std::vector<std::vector<OpId>> SplitAtCutPoints(const Graph& graph) {
  const int n = graph.num_ops();
  Reachability reach(graph);
  // Each op with its ancestor count, which orders the cut points.
  std::vector<std::pair<int, OpId>> cuts;
  std::vector<int> ancestors(n);
  for (OpId u = 0; u < n; ++u) {
    ancestors[u] = Count(reach.ancestors(u), reach.words());
    if (ancestors[u] + Count(reach.descendants(u), reach.words()) + 1 == n) cuts.emplace_back(ancestors[u], u);
  }
  std::sort(cuts.begin(), cuts.end());
  // An op belongs to the segment of the first cut point that is it or one of
  // its descendants; ops after the last cut form a final segment. Each cut
  // point descends from the one before it, so those that are an op or its
  // descendants are a suffix of `cuts`: found by binary search.
  std::vector<std::vector<OpId>> segments(cuts.size() + 1);
  for (OpId u = 0; u < n; ++u) {
    const size_t k =
        static_cast<size_t>(std::partition_point(cuts.begin(), cuts.end(),
                                                 [&](const std::pair<int, OpId>& cut) {
                                                   return cut.second != u && !reach.IsDescendant(cut.second, u);
                                                 }) -
                            cuts.begin());
    segments[k].push_back(u);
  }
  if (segments.back().empty()) segments.pop_back();
  // Within a segment keep a topological order (ancestor count is one).
  for (std::vector<OpId>& segment : segments) {
    std::stable_sort(segment.begin(), segment.end(), [&](OpId a, OpId b) { return ancestors[a] < ancestors[b]; });
  }
  return segments;
}

}  // namespace serenity
