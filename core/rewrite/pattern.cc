#include "core/rewrite/pattern.h"

#include "absl/strings/str_cat.h"
#include "core/onnx/onnx_import.h"

namespace serenity {
namespace {

bool DefaultDomain(const onnx::NodeProto& node) { return node.domain().empty() || node.domain() == "ai.onnx"; }

}  // namespace

int64_t IntAttribute(const onnx::NodeProto& node, absl::string_view name, int64_t fallback) {
  for (const onnx::AttributeProto& attr : node.attribute()) {
    if (attr.name() == name) return attr.i();
  }
  return fallback;
}

ModelIndex ModelIndex::Build(const onnx::GraphProto& graph) {
  ModelIndex index;
  for (int i = 0; i < graph.node_size(); ++i) {
    for (const std::string& out : graph.node(i).output()) {
      if (!out.empty()) index.producer[out] = i;
    }
    for (const std::string& in : graph.node(i).input()) {
      if (!in.empty()) index.consumers[in].push_back(i);
    }
  }
  for (const onnx::ValueInfoProto& out : graph.output()) index.graph_outputs.insert(out.name());
  for (int i = 0; i < graph.initializer_size(); ++i) index.initializers[graph.initializer(i).name()] = i;
  return index;
}

const std::vector<int>& ModelIndex::ConsumersOf(const std::string& tensor) const {
  static const std::vector<int>* const kNone = new std::vector<int>;
  auto it = consumers.find(tensor);
  return it == consumers.end() ? *kNone : it->second;
}

void NameNodesAsImporter(onnx::GraphProto* graph) {
  const std::vector<std::string> names = ImporterNodeNames(*graph);
  for (int i = 0; i < graph->node_size(); ++i) graph->mutable_node(i)->set_name(names[i]);
}

int FindNode(const onnx::GraphProto& graph, absl::string_view name) {
  for (int i = 0; i < graph.node_size(); ++i) {
    if (graph.node(i).name() == name) return i;
  }
  return -1;
}

std::vector<ConcatConvSite> FindConcatConvSites(const onnx::GraphProto& graph, const ModelIndex& index) {
  std::vector<ConcatConvSite> sites;
  for (int i = 0; i < graph.node_size(); ++i) {
    const onnx::NodeProto& concat = graph.node(i);
    if (concat.op_type() != "Concat" || !DefaultDomain(concat) || concat.output_size() != 1) continue;
    const std::string& y = concat.output(0);
    if (index.graph_outputs.contains(y)) continue;
    const std::vector<int>& readers = index.ConsumersOf(y);
    if (readers.size() != 1) continue;
    const onnx::NodeProto& conv = graph.node(readers[0]);
    if (conv.op_type() != "Conv" || !DefaultDomain(conv) || conv.input_size() < 2 || conv.input(0) != y) continue;
    int64_t axis = IntAttribute(concat, "axis", 1);
    if (axis < 0) {
      auto w = index.initializers.find(conv.input(1));
      if (w == index.initializers.end()) continue;
      axis += graph.initializer(w->second).dims_size();
    }
    if (axis != 1) continue;
    sites.push_back({i, readers[0]});
  }
  return sites;
}

}  // namespace serenity
