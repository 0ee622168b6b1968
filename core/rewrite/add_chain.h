// Add chains (issue 17): a sum of many tensors, as RandWire's weighted sums
// and NASNet's cell sums are exported (((x1 + x2) + x3) + ...), or a single
// Sum node, accumulated in the order a schedule prefers instead of the
// order written:
//
//   x1 + x2 + ... + xn = ((o1 + o2) + o3) + ... + on
//
// for any permutation o of the x, so that an operand produced early can be
// added (and freed) before one produced late is made. ApplyAddChainOrder
// requires every operand to have the sum's shape (no broadcasting), so that
// every partial sum has the size the memory model counts. Float addition
// is not associative: the rewritten model computes the same sum up to
// rounding (a difference up to about epsilon times the sum of the operands'
// magnitudes), as any reassociation does.
#ifndef SERENITY_CORE_REWRITE_ADD_CHAIN_H_
#define SERENITY_CORE_REWRITE_ADD_CHAIN_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "core/graph/graph.h"
#include "core/rewrite/pattern.h"
#include "core/rewrite/recipe.h"
#include "onnx/onnx_pb.h"

namespace serenity {

// A sum of at least three operands written as binary Adds (or one Sum).
struct AddChain {
  // The nodes of the sum (indices into graph.node), in node order; the last
  // is the one writing the sum (`output`). One index for a Sum node.
  std::vector<int> adds;
  // The leaves, in the order written (left to right through the nested
  // Adds: ((a + b) + c) gives a, b, c). A tensor added twice appears twice.
  std::vector<std::string> operands;
  std::string output;  // the tensor the sum writes
};

// Every maximal sum of `graph` with at least three operands, in the node
// order of the node writing it: a default-domain binary Add whose inputs
// are expanded while they are written by a default-domain binary Add read
// by nothing else (once, by this Add) and no graph output. Chains, as
// exporters write them, are the usual case; a tree ((a + b) + (c + d)) is
// found the same way. A default-domain Sum node with at least three inputs
// is a chain of its own (its inputs are not expanded, nor is it part of an
// Add chain). Whether operands broadcast is not checked here.
std::vector<AddChain> FindAddChains(const onnx::GraphProto& graph, const ModelIndex& index);

// Rewrites `chain` of `model` (found by FindAddChains on it) into binary
// Adds "<name>/sum<i>" (i = 1..n-1, a suffix added while a name is taken;
// each names its node and, but for the last, its output tensor), where
// <name> is the name of the node that wrote the sum: sum1 = o1 + o2,
// sum<i> = sum<i-1> + o<i+1>, the last writing chain.output. The chain's
// nodes are removed (and value_info of their partial sums); sum<i> is
// placed right after the node producing the last of o1..o<i+1> (so the
// model stays topologically sorted), other nodes keep their order. The
// result has a chain again (written by "<name>/sum<n-1>"): a caller applies
// one order per chain. Returns the site: form "add_order", `conv` the name of
// the node that wrote the sum (the chain's last Add, or the Sum), `concat`
// and `channels` empty, `inputs` the operands in the new order, `new_ops`
// the new Adds in order, no weight slices.
// With `model` unchanged: InvalidArgument when `order` is no permutation of
// chain.operands or the chain does not match the model; FailedPrecondition
// when an operand's or the output's shape is not in `shapes` or
// an operand's shape differs from the output's (broadcasting).
absl::StatusOr<RewriteSite> ApplyAddChainOrder(onnx::ModelProto* model, const AddChain& chain,
                                               const std::vector<std::string>& order,
                                               const absl::flat_hash_map<std::string, std::vector<int64_t>>& shapes);

// For ApplyRecipe (a site of form "add_order" that ApplyAddChainOrder made
// on the same model, named as NameNodesAsImporter names it): rewrites the
// sum written by the node named site.conv to add site.inputs in that order.
// The shapes were checked when the site was made and are not checked again.
// InvalidArgument, with `model` unchanged, when the model has no such sum,
// site.inputs is no permutation of its operands or the new names would
// differ from site.new_ops.
absl::StatusOr<RewriteSite> ApplyAddOrderSite(onnx::ModelProto* model, const RewriteSite& site);

// chain.operands sorted by the step at which each becomes available:
// position[tensor] (e.g. the plan step of its producer, ProductionSteps);
// a tensor not in `position` (graph input, initializer) counts as available
// before every step. Stable: ties keep the written order.
std::vector<std::string> OrderByFirstAvailable(const AddChain& chain,
                                               const absl::flat_hash_map<std::string, int>& position);

// For the callers: every tensor's shape in `graph` (as imported), by name.
absl::flat_hash_map<std::string, std::vector<int64_t>> TensorShapes(const Graph& graph);

// For the callers: the step of `order` (a schedule of `graph`) at which each
// produced tensor is written, by name. Graph inputs and weights are absent.
absl::flat_hash_map<std::string, int> ProductionSteps(const Graph& graph, const std::vector<OpId>& order);

}  // namespace serenity

#endif  // SERENITY_CORE_REWRITE_ADD_CHAIN_H_
