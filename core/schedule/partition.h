// Divide-and-conquer at cut points. An op that is an ancestor or a
// descendant of every other op runs at the same position in every
// topological order, so the ops between two consecutive such cut points form
// a segment that every order runs contiguously, after all earlier segments.
// The live bytes while a segment runs depend only on the set of earlier ops
// and the segment's own order, so the best order is the concatenation of the
// best order of every segment, and its peak is the largest segment peak.
#ifndef SERENITY_CORE_SCHEDULE_PARTITION_H_
#define SERENITY_CORE_SCHEDULE_PARTITION_H_

#include <vector>

#include "core/graph/graph.h"

namespace serenity {

// The segments of `graph`, in execution order; each segment ends with its
// cut point except possibly the last. Their concatenation holds every op once.
// Within a segment the ops are by ancestor count, then op id; a segment
// without bitsets (core/graph/reachability.h: above 20,000 ops, or past
// their 256 MB in all) keeps a Kahn order instead. Linear in the graph plus
// m^2/64 words per segment of m ops.
std::vector<std::vector<OpId>> SplitAtCutPoints(const Graph& graph);

}  // namespace serenity

#endif  // SERENITY_CORE_SCHEDULE_PARTITION_H_
