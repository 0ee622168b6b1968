// A canonical form of a Graph, for caches keyed by graph structure: the same
// graph with renamed ops, tensors or graph, or with its op, tensor, input or
// output lists in another order, gets the same serialization byte for byte;
// any change to an op type, workspace, MACs, edge or input slot, or to a
// tensor's shape, dtype, size or weight/graph input/graph output flag,
// changes it.
//
// Ops are ordered by colour refinement (Weisfeiler-Lehman) over ops and
// tensors, in both directions and with input and output slots, starting from
// labels that exclude names; while ops tie, the first op of the smallest tied
// class is individualized (given a colour of its own) and refinement runs
// again. Tensors then take their positions from their producer's (position,
// output slot), or for graph inputs and weights from their first reader's
// (position, input slot); tensors nobody touches come last, by label. Ties
// between automorphic ops (identical parallel branches) are
// harmless: either choice gives the same serialization. Refinement cannot
// tell apart some non-automorphic ops in theory; two isomorphic graphs may
// then get different serializations. A cache that compares serializations
// byte for byte (as ours does) then misses; it never returns a wrong plan.
//
// Cost: near-linear for graphs without ties (about 1 ms for a 780-op NAS
// model); each individualization costs what it changes.
#ifndef SERENITY_CORE_GRAPH_CANONICAL_GRAPH_H_
#define SERENITY_CORE_GRAPH_CANONICAL_GRAPH_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "core/graph/graph.h"

namespace serenity {

struct CanonicalGraph {
  // The graph in canonical order, names excluded: tensors (shape, dtype,
  // bytes, flags), then ops (type, workspace, MACs, inputs and outputs as
  // canonical tensor positions in slot order), in a length-prefixed binary
  // encoding. Two graphs with equal serializations are isomorphic under the
  // position mappings below.
  std::string serialization;
  // StableHash128(serialization): 32 lowercase hex digits.
  std::string key;
  // Canonical position -> this graph's OpId; a permutation of all ops.
  std::vector<OpId> op_at;
  // Canonical position -> this graph's TensorId; a permutation of all
  // tensors, weights and unused ones included.
  std::vector<TensorId> tensor_at;
};

// Returns the canonical form of `graph`. Deterministic across runs, builds
// and machines. Thread-safe: keeps no state between calls.
CanonicalGraph Canonicalize(const Graph& graph);

// Returns a 128-bit hash of `bytes` as 32 lowercase hex digits: two 64-bit
// FNV-1a lanes with different seeds, each finished by a 64-bit mix. The same
// on every machine and run (keys are shared between replicas through Redis),
// unlike absl::Hash. Not cryptographic.
std::string StableHash128(absl::string_view bytes);

}  // namespace serenity

#endif  // SERENITY_CORE_GRAPH_CANONICAL_GRAPH_H_
