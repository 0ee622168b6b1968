// Layout conversions between primitives (issue 19; docs/primitives.md).
//
// An alternative may state the data layout it reads and writes
// (Primitive::layout; empty: any). When op v runs an alternative of layout
// B and one of its inputs was written by an op whose chosen alternative has
// layout A != B (both stated), the input is converted first: the graph's
// LayoutTransform for (A, B) gives, per MiB (2^20 bytes) of the tensor, the
// time (added to v's) and the bytes of the converted copy (a workspace of
// v's step, live beside v's own). A tensor read twice by v is converted
// once; an op without alternatives or of layout "any" converts nothing and
// causes no conversion. Graph::Build checks that every conversion the
// alternatives can need is in the table, so every choice is runnable.
//
// The conversions depend on the choices only, not on the order.
#ifndef SERENITY_CORE_SCHEDULE_LAYOUT_CONVERSIONS_H_
#define SERENITY_CORE_SCHEDULE_LAYOUT_CONVERSIONS_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "core/graph/graph.h"

namespace serenity {

// The time and the workspace of one op's conversions.
struct ConversionCost {
  double time_us = 0;
  int64_t workspace_bytes = 0;
};

// The cost of converting `bytes` of tensor with `transform`.
ConversionCost CostOf(const LayoutTransform& transform, int64_t bytes);

class LayoutConversions {
 public:
  // `graph` must outlive this object.
  explicit LayoutConversions(const Graph& graph);

  // False when no alternative states a layout: nothing ever converts.
  bool active() const { return active_; }

  // Layouts by small ids, 0 being "any".
  int LayoutOf(OpId u, int choice) const { return choice < 0 ? 0 : layout_[u][choice]; }
  // Per alternative of u, its layout.
  const std::vector<int>& alternative_layouts(OpId u) const { return layout_[u]; }
  const std::string& LayoutName(int id) const { return names_[id]; }

  // True when some alternative of u states a layout (u may convert its
  // inputs, and its consumers may convert its outputs).
  bool sensitive(OpId u) const { return sensitive_[u]; }
  // True when u is sensitive and so is one of its consumers: u's layout
  // matters to ops after it.
  bool feeds_sensitive(OpId u) const { return feeds_sensitive_[u]; }

  // The distinct layouts of u's alternatives (ids; 0 for "any").
  const std::vector<int>& layouts(OpId u) const { return layouts_[u]; }

  // One input of u that may need converting: a distinct input tensor whose
  // producer is sensitive (u being sensitive too).
  struct Input {
    TensorId tensor;
    OpId producer;
  };
  const std::vector<Input>& inputs(OpId u) const { return inputs_[u]; }

  // The conversions u needs when it runs with layout `layout` and its input
  // producers wrote the layouts `layout_of(producer)` gives (0: any).
  template <typename LayoutOfProducer>
  ConversionCost InputCost(OpId u, int layout, LayoutOfProducer layout_of) const {
    ConversionCost cost;
    if (layout == 0) return cost;
    for (const Input& input : inputs_[u]) {
      const int from = layout_of(input.producer);
      if (from == 0 || from == layout) continue;
      const ConversionCost one = CostOf(transform(from, layout), graph_.tensor(input.tensor).bytes);
      cost.time_us += one.time_us;
      cost.workspace_bytes += one.workspace_bytes;
    }
    return cost;
  }

  // The same with every op's choice given (choice[p] per op, -1 none).
  ConversionCost CostFor(OpId u, const std::vector<int>& choice) const;

  // The transform from layout `from` to `to` (both stated and distinct).
  const LayoutTransform& transform(int from, int to) const { return *transform_.at({from, to}); }

  // The most bytes u's conversions can take, whatever the choices (0 when
  // u converts nothing).
  int64_t MostConversionBytes(OpId u) const;

 private:
  const Graph& graph_;
  bool active_ = false;
  std::vector<std::string> names_;
  std::vector<std::vector<int>> layout_;   // per op, per alternative
  std::vector<std::vector<int>> layouts_;  // per op, distinct
  std::vector<bool> sensitive_;
  std::vector<bool> feeds_sensitive_;
  std::vector<std::vector<Input>> inputs_;
  // By (from, to): only the pairs given (a dense table of every pair of
  // layout names could take names^2 pointers).
  absl::flat_hash_map<std::pair<int, int>, const LayoutTransform*> transform_;
};

// Per op the workspace of its step with `choice`: the chosen alternative's
// (or the op's own without alternatives) plus its conversions.
std::vector<int64_t> StepWorkspaces(const Graph& graph, const std::vector<int>& choice);

// The total time of `choice`: the chosen alternatives' and the conversions'.
double ChoiceTime(const Graph& graph, const std::vector<int>& choice);

}  // namespace serenity

#endif  // SERENITY_CORE_SCHEDULE_LAYOUT_CONVERSIONS_H_
