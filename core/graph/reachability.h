// Ancestor and descendant sets of the ops, kept per segment.
//
// A cut point is an op that is an ancestor or a descendant of every other op;
// the ops after one cut point up to the next form a segment (partition.h).
// Every op of an earlier segment is an ancestor of every op of a later one,
// and a path between two ops of one segment stays inside it, so only the
// pairs within a segment need bitsets: a segment of m ops takes m^2/4
// bytes, and a long chain of small segments never an n x n structure. Cut
// points are found in linear time from one topological order.
#ifndef SERENITY_CORE_GRAPH_REACHABILITY_H_
#define SERENITY_CORE_GRAPH_REACHABILITY_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/graph/graph.h"

namespace serenity {

class Reachability {
 public:
  // Segments above this many ops get no bitsets (100 MB at this size).
  static constexpr int kDefaultMaxSegmentOps = 20000;
  // The bitsets of all segments together stay within this many bytes: the
  // segments met first (in execution order) get theirs, a segment that
  // would pass the total gets none.
  static constexpr int64_t kMaxBitsetBytes = int64_t{256} << 20;

  explicit Reachability(const Graph& graph, int max_segment_ops = kDefaultMaxSegmentOps);

  // Segments in execution order; each holds its ops in a topological order
  // and ends with its cut point except possibly the last.
  int num_segments() const { return static_cast<int>(segments_.size()); }
  const std::vector<OpId>& segment(int k) const { return segments_[k]; }
  int segment_of(OpId u) const { return segment_of_[u]; }
  // Whether segment k has bitsets (at most max_segment_ops ops, within
  // kMaxBitsetBytes with the segments before it).
  bool has_bits(int k) const { return !bits_[k].ancestors.empty() || segments_[k].size() <= 1; }

  // Whether `a` has a path to `u` (a != u). Ops of different segments are
  // always answered; ops of one segment need has_bits(segment_of(u)).
  bool IsAncestor(OpId a, OpId u) const {
    const int sa = segment_of_[a], su = segment_of_[u];
    if (sa != su) return sa < su;
    if (a == u) return false;
    return Test(Ancestors(u), local_[a]);
  }
  // Whether `u` has a path to `d` (d != u); as IsAncestor.
  bool IsDescendant(OpId d, OpId u) const { return d != u && IsAncestor(u, d); }

  // Position of `u` within its segment, and the segment's bitsets over those
  // positions (words(k) words each); only when has_bits(k) and the segment
  // has two ops or more.
  int local_index(OpId u) const { return local_[u]; }
  size_t words(int k) const { return bits_[k].words; }
  const uint64_t* Ancestors(OpId u) const { return Row(bits_[segment_of_[u]].ancestors, u); }
  const uint64_t* Descendants(OpId u) const { return Row(bits_[segment_of_[u]].descendants, u); }

 private:
  struct Bits {
    size_t words = 0;
    std::vector<uint64_t> ancestors;
    std::vector<uint64_t> descendants;
  };
  static bool Test(const uint64_t* bits, int i) { return (bits[i / 64] >> (i % 64)) & 1; }
  const uint64_t* Row(const std::vector<uint64_t>& rows, OpId u) const {
    return &rows[static_cast<size_t>(local_[u]) * bits_[segment_of_[u]].words];
  }

  std::vector<std::vector<OpId>> segments_;
  std::vector<int> segment_of_;
  std::vector<int> local_;
  std::vector<Bits> bits_;
};

}  // namespace serenity

#endif  // SERENITY_CORE_GRAPH_REACHABILITY_H_
