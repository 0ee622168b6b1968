#include "core/rewrite/add_chain.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/util/status_macros.h"

namespace serenity {
namespace {

bool DefaultDomain(const onnx::NodeProto& node) { return node.domain().empty() || node.domain() == "ai.onnx"; }

bool BinaryAdd(const onnx::NodeProto& node) {
  return node.op_type() == "Add" && DefaultDomain(node) && node.input_size() == 2 && node.output_size() == 1 &&
         !node.input(0).empty() && !node.input(1).empty() && !node.output(0).empty();
}

bool WideSum(const onnx::NodeProto& node) {
  if (node.op_type() != "Sum" || !DefaultDomain(node) || node.input_size() < 3 || node.output_size() != 1) {
    return false;
  }
  for (const std::string& in : node.input()) {
    if (in.empty()) return false;
  }
  return !node.output(0).empty();
}

// The binary Add writing `tensor` when its sum is part of the sum the binary
// Add `reader` computes: read by nothing else, once, and no graph output. -1 otherwise.
int InnerAdd(const onnx::GraphProto& graph, const ModelIndex& index, const std::string& tensor, int reader) {
  if (index.graph_outputs.contains(tensor)) return -1;
  auto p = index.producer.find(tensor);
  if (p == index.producer.end() || !BinaryAdd(graph.node(p->second))) return -1;
  const std::vector<int>& readers = index.ConsumersOf(tensor);
  return readers.size() == 1 && readers[0] == reader ? p->second : -1;
}

std::string ShapeText(const std::vector<int64_t>& shape) { return absl::StrCat("[", absl::StrJoin(shape, ","), "]"); }

// InvalidArgument unless `chain` matches `graph` and `order` is a
// permutation of its operands.
absl::Status CheckChain(const onnx::GraphProto& graph, const AddChain& chain, const std::vector<std::string>& order) {
  if (chain.operands.size() < 2 || chain.adds.empty()) {
    return absl::InvalidArgumentError("an add chain needs two operands and a node");
  }
  for (int a : chain.adds) {
    if (a < 0 || a >= graph.node_size() || !(BinaryAdd(graph.node(a)) || WideSum(graph.node(a)))) {
      return absl::InvalidArgumentError(absl::StrCat("add chain node ", a, " is no Add or Sum of the model"));
    }
  }
  const onnx::NodeProto& root = graph.node(chain.adds.back());
  if (root.output(0) != chain.output) {
    return absl::InvalidArgumentError(
        absl::StrCat("add chain of '", root.name(), "' does not write '", chain.output, "'"));
  }
  std::vector<std::string> want = chain.operands, got = order;
  std::sort(want.begin(), want.end());
  std::sort(got.begin(), got.end());
  if (want != got) {
    return absl::InvalidArgumentError(absl::StrCat("order {", absl::StrJoin(order, ", "),
                                                   "} is no permutation of the operands of '", root.name(), "'"));
  }
  return absl::OkStatus();
}

// The names of the n - 1 new Adds of the chain whose sum `root` wrote.
std::vector<std::string> NewNames(const onnx::GraphProto& graph, const std::string& root, int n) {
  UnusedNames names(graph);
  std::vector<std::string> out;
  for (int i = 1; i < n; ++i) out.push_back(names.Take(absl::StrCat(root, "/sum", i)));
  return out;
}

// The rewrite itself, on a chain CheckChain accepted.
RewriteSite Reorder(onnx::ModelProto* model, const AddChain& chain, const std::vector<std::string>& order) {
  onnx::GraphProto* graph = model->mutable_graph();
  const int n = static_cast<int>(chain.operands.size());
  const int root = chain.adds.back();
  const std::string root_name = graph->node(root).name();
  // The new Adds, not yet placed: sum<i> reads o<i+1> and the running sum.
  const std::vector<std::string> names = NewNames(*graph, root_name, n);
  std::vector<onnx::NodeProto> adds(n - 1);
  RewriteSite site;
  site.form = "add_order";
  site.conv = root_name;
  site.inputs = order;
  for (int i = 1; i < n; ++i) {
    onnx::NodeProto& add = adds[i - 1];
    const std::string& name = names[i - 1];
    add.set_name(name);
    add.set_op_type("Add");
    add.add_input(i == 1 ? order[0] : adds[i - 2].output(0));
    add.add_input(order[i]);
    add.add_output(i == n - 1 ? chain.output : name);
    site.new_ops.push_back(name);
  }

  // Rebuild the node list: the chain's nodes go; sum<i> follows the node
  // producing the last of o1..o<i+1> (at the latest, where the sum was).
  const absl::flat_hash_set<int> removed(chain.adds.begin(), chain.adds.end());
  absl::flat_hash_set<std::string> produced_in_graph;
  for (const onnx::NodeProto& node : graph->node()) {
    for (const std::string& t : node.output()) produced_in_graph.insert(t);
  }
  absl::flat_hash_set<std::string> available;
  auto ready = [&](const std::string& t) { return !produced_in_graph.contains(t) || available.contains(t); };
  int placed = 0;
  // On the graph's arena (if any), so that the kept nodes move, not copy.
  google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes(graph->GetArena());
  std::vector<onnx::NodeProto> removed_nodes;
  auto place_ready = [&](bool all) {
    while (placed < n - 1 && (all || ready(order[placed + 1])) && (placed > 0 || all || ready(order[0]))) {
      *nodes.Add() = adds[placed++];
    }
  };
  place_ready(false);
  for (int i = 0; i < graph->node_size(); ++i) {
    if (i == root) place_ready(true);
    if (removed.contains(i)) {
      removed_nodes.push_back(graph->node(i));
      continue;
    }
    onnx::NodeProto* kept = nodes.Add();
    kept->Swap(graph->mutable_node(i));
    for (const std::string& t : kept->output()) available.insert(t);
    place_ready(false);
  }
  graph->mutable_node()->Swap(&nodes);
  // The partial sums written are gone: so is what value_info said of them.
  absl::flat_hash_set<std::string> gone;
  for (const onnx::NodeProto& node : removed_nodes) {
    if (node.output(0) != chain.output) gone.insert(node.output(0));
  }
  auto* info = graph->mutable_value_info();
  info->erase(std::remove_if(info->begin(), info->end(),
                             [&](const onnx::ValueInfoProto& v) { return gone.contains(v.name()); }),
              info->end());
  return site;
}

}  // namespace

std::vector<AddChain> FindAddChains(const onnx::GraphProto& graph, const ModelIndex& index) {
  std::vector<AddChain> chains;
  for (int i = 0; i < graph.node_size(); ++i) {
    const onnx::NodeProto& node = graph.node(i);
    AddChain chain;
    chain.output = node.output_size() == 1 ? node.output(0) : "";
    if (WideSum(node)) {
      chain.adds = {i};
      chain.operands.assign(node.input().begin(), node.input().end());
      chains.push_back(std::move(chain));
      continue;
    }
    if (!BinaryAdd(node)) continue;
    // Not a root when its sum is part of a larger one.
    const std::vector<int>& readers = index.ConsumersOf(chain.output);
    if (readers.size() == 1 && BinaryAdd(graph.node(readers[0])) &&
        InnerAdd(graph, index, chain.output, readers[0]) == i) {
      continue;
    }
    // Leaves left to right: a stack of (tensor, the Add reading it).
    std::vector<std::pair<std::string, int>> stack = {{node.input(1), i}, {node.input(0), i}};
    chain.adds.push_back(i);
    while (!stack.empty()) {
      auto [tensor, reader] = std::move(stack.back());
      stack.pop_back();
      const int inner = InnerAdd(graph, index, tensor, reader);
      if (inner < 0) {
        chain.operands.push_back(std::move(tensor));
        continue;
      }
      chain.adds.push_back(inner);
      stack.emplace_back(graph.node(inner).input(1), inner);
      stack.emplace_back(graph.node(inner).input(0), inner);
    }
    if (chain.operands.size() < 3) continue;
    std::sort(chain.adds.begin(), chain.adds.end());
    chains.push_back(std::move(chain));
  }
  return chains;
}

absl::StatusOr<RewriteSite> ApplyAddChainOrder(onnx::ModelProto* model, const AddChain& chain,
                                               const std::vector<std::string>& order,
                                               const absl::flat_hash_map<std::string, std::vector<int64_t>>& shapes) {
  const onnx::GraphProto& graph = model->graph();
  RETURN_IF_ERROR(CheckChain(graph, chain, order));
  const std::string& root_name = graph.node(chain.adds.back()).name();
  auto out_shape = shapes.find(chain.output);
  if (out_shape == shapes.end()) {
    return absl::FailedPreconditionError(
        absl::StrCat("add chain of '", root_name, "' not reordered: the shape of '", chain.output, "' is unknown"));
  }
  for (const std::string& x : chain.operands) {
    auto s = shapes.find(x);
    if (s == shapes.end()) {
      return absl::FailedPreconditionError(
          absl::StrCat("add chain of '", root_name, "' not reordered: the shape of '", x, "' is unknown"));
    }
    if (s->second != out_shape->second) {
      return absl::FailedPreconditionError(absl::StrCat("add chain of '", root_name, "' not reordered: '", x, "' ",
                                                        ShapeText(s->second), " broadcasts to ",
                                                        ShapeText(out_shape->second)));
    }
  }
  return Reorder(model, chain, order);
}

absl::StatusOr<RewriteSite> ApplyAddOrderSite(onnx::ModelProto* model, const RewriteSite& site) {
  const onnx::GraphProto& graph = model->graph();
  for (const AddChain& chain : FindAddChains(graph, ModelIndex::Build(graph))) {
    if (graph.node(chain.adds.back()).name() != site.conv) continue;
    if (absl::Status s = CheckChain(graph, chain, site.inputs); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("add_order site does not match the model: ", s.message()));
    }
    if (NewNames(graph, site.conv, static_cast<int>(chain.operands.size())) != site.new_ops) {
      return absl::InvalidArgumentError(
          absl::StrCat("add_order site of '", site.conv, "' does not match the model: other new names"));
    }
    return Reorder(model, chain, site.inputs);
  }
  return absl::InvalidArgumentError(
      absl::StrCat("add_order site does not match the model: no sum of three or more written by '", site.conv, "'"));
}

std::vector<std::string> OrderByFirstAvailable(const AddChain& chain,
                                               const absl::flat_hash_map<std::string, int>& position) {
  auto step = [&](const std::string& t) {
    auto it = position.find(t);
    return it == position.end() ? -1 : it->second;
  };
  std::vector<std::string> order = chain.operands;
  std::stable_sort(order.begin(), order.end(),
                   [&](const std::string& a, const std::string& b) { return step(a) < step(b); });
  return order;
}

absl::flat_hash_map<std::string, std::vector<int64_t>> TensorShapes(const Graph& graph) {
  absl::flat_hash_map<std::string, std::vector<int64_t>> shapes;
  for (const Tensor& t : graph.tensors()) shapes[t.name] = t.shape;
  return shapes;
}

absl::flat_hash_map<std::string, int> ProductionSteps(const Graph& graph, const std::vector<OpId>& order) {
  absl::flat_hash_map<std::string, int> steps;
  for (int s = 0; s < static_cast<int>(order.size()); ++s) {
    for (TensorId t : graph.op(order[s]).outputs) steps[graph.tensor(t).name] = s;
  }
  return steps;
}

}  // namespace serenity
