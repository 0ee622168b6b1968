// A canonical form of a Graph, for caches keyed by structure: the same
// graph with renamed ops and tensors, or with its op and tensor lists in
// another order, gets the same serialization; any change to an op type,
// workspace, MACs, edge, shape, dtype, size or graph input/output/weight
// flag changes it.
//
// Ops are ordered by colour refinement (Weisfeiler-Lehman over the DAG, in
// both directions and with input and output slots), individualizing one op
// of the first tied class and refining again until every op is distinct.
// Ties between automorphic ops (identical parallel branches) are harmless:
// either choice gives the same serialization. Refinement cannot tell apart
// some non-isomorphic graphs in theory; a cache that compares
// serializations byte for byte (as ours does) then misses, it never returns
// the wrong plan.
#ifndef SERENITY_CORE_GRAPH_CANONICAL_GRAPH_H_
#define SERENITY_CORE_GRAPH_CANONICAL_GRAPH_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "core/graph/graph.h"

namespace serenity {

struct CanonicalGraph {
  // The graph in canonical order, names excluded. Two graphs with equal
  // serializations are isomorphic under the position mappings below.
  std::string serialization;
  // StableHash128(serialization): 32 lowercase hex digits.
  std::string key;
  std::vector<OpId> op_at;          // canonical position -> this graph's op
  std::vector<TensorId> tensor_at;  // canonical position -> this graph's tensor
};

// Computes the canonical form. Deterministic across runs and machines.
CanonicalGraph Canonicalize(const Graph& graph);

// A 128-bit hash of `bytes` as 32 lowercase hex digits, the same on every
// machine and run (keys are shared between replicas). Not cryptographic.
std::string StableHash128(absl::string_view bytes);

}  // namespace serenity

#endif  // SERENITY_CORE_GRAPH_CANONICAL_GRAPH_H_
