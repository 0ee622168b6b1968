// Transformed weights (issue 19; docs/primitives.md "Transformed weights").
//
// An alternative may keep its op's weights in another form, larger or
// smaller (Primitive::weight_bytes, not 0: Winograd F(2,3)'s transformed
// filters take 16/9 of the 3x3 ones). When the memory model counts weights
// (MemoryModel::count_weights: resident for the whole run), choosing it
// replaces the bytes of the op's own weights (OwnWeightBytes: the weight
// tensors only it reads) by weight_bytes, at every step of the plan. The
// resident bytes then depend on every op's choice at once, not on the order.
#ifndef SERENITY_CORE_SCHEDULE_PRIMITIVE_WEIGHTS_H_
#define SERENITY_CORE_SCHEDULE_PRIMITIVE_WEIGHTS_H_

#include <cstdint>
#include <vector>

#include "core/graph/graph.h"

namespace serenity {

class PrimitiveWeights {
 public:
  // With `count_weights` false nothing changes: every extra is 0.
  PrimitiveWeights(const Graph& graph, bool count_weights);

  // True when some choice changes the resident bytes.
  bool active() const { return active_; }

  // How many bytes running u with alternative `choice` (-1: none) adds to
  // the resident weights (negative: removes): weight_bytes minus u's own
  // weights, 0 when weight_bytes is 0 or weights are not counted.
  int64_t Extra(OpId u, int choice) const;

  // The least Extra of u over its alternatives (0 without alternatives).
  int64_t least_extra(OpId u) const { return least_[u]; }
  // The sum of least_extra over all ops: the resident bytes every choice
  // adds at least (may be negative).
  int64_t least_total() const { return least_total_; }
  // `budget` less least_total(): what is left of it for the activations
  // and the extras above each op's least (saturating at the int64 range,
  // so that an unlimited budget stays unlimited).
  int64_t RoomFor(int64_t budget) const;
  // Extra(u, choice) - least_extra(u): never negative.
  int64_t ExtraAboveLeast(OpId u, int choice) const { return Extra(u, choice) - least_[u]; }

  // The resident bytes `choice` adds (the sum of Extra).
  int64_t ExtraOf(const std::vector<int>& choice) const;

 private:
  const Graph& graph_;
  bool active_ = false;
  std::vector<int64_t> own_;
  std::vector<int64_t> least_;
  int64_t least_total_ = 0;
};

// The graph as `choice` runs it (one entry per op, -1: no alternative):
// each op's step workspace (StepWorkspaces: the chosen alternative's and its
// layout conversions) and, for each op whose chosen alternative states
// weight_bytes, its own weight tensors scaled in proportion so that they add
// up to weight_bytes.
Graph ChosenGraph(const Graph& graph, const std::vector<int>& choice);

}  // namespace serenity

#endif  // SERENITY_CORE_SCHEDULE_PRIMITIVE_WEIGHTS_H_
