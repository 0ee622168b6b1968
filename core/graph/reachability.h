// Ancestor and descendant sets of every op, as bitsets.
#ifndef SERENITY_CORE_GRAPH_REACHABILITY_H_
#define SERENITY_CORE_GRAPH_REACHABILITY_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/graph/graph.h"

namespace serenity {

class Reachability {
 public:
  explicit Reachability(const Graph& graph);

  // Words per bitset: (num_ops + 63) / 64.
  size_t words() const { return words_; }
  // Ops with a path to `u` (excluding u), as `words()` words.
  const uint64_t* ancestors(OpId u) const { return &ancestors_[static_cast<size_t>(u) * words_]; }
  // Ops reachable from `u` (excluding u).
  const uint64_t* descendants(OpId u) const { return &descendants_[static_cast<size_t>(u) * words_]; }
  bool IsAncestor(OpId a, OpId u) const { return (ancestors(u)[a / 64] >> (a % 64)) & 1; }
  bool IsDescendant(OpId d, OpId u) const { return (descendants(u)[d / 64] >> (d % 64)) & 1; }

 private:
  size_t words_;
  std::vector<uint64_t> ancestors_;
  std::vector<uint64_t> descendants_;
};

}  // namespace serenity

#endif  // SERENITY_CORE_GRAPH_REACHABILITY_H_
