#include "core/rewrite/pattern.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/onnx/onnx_import.h"
#include "core/rewrite/per_channel.h"

namespace serenity {
namespace {

bool DefaultDomain(const onnx::NodeProto& node) { return node.domain().empty() || node.domain() == "ai.onnx"; }

// The weight rank of the first Conv (default domain, weight an
// initializer) reached from `tensor` through single-output readers,
// breadth first over at most 256 nodes; 0 when none. The rank of the data
// such a Conv reads, for a Slice's negative axes on the way.
int ConvRankDownstream(const onnx::GraphProto& graph, const ModelIndex& index, const std::string& tensor) {
  std::vector<std::string> frontier = {tensor};
  for (size_t next = 0; next < frontier.size() && next < 256; ++next) {
    for (int reader : index.ConsumersOf(frontier[next])) {
      const onnx::NodeProto& node = graph.node(reader);
      if (node.op_type() == "Conv" && DefaultDomain(node) && node.input_size() >= 2) {
        auto w = index.initializers.find(node.input(1));
        if (w != index.initializers.end()) return graph.initializer(w->second).dims_size();
      }
      if (node.output_size() == 1) frontier.push_back(node.output(0));
    }
  }
  return 0;
}

}  // namespace

UnusedNames::UnusedNames(const onnx::GraphProto& graph) {
  taken_.reserve(3 * static_cast<size_t>(graph.node_size()) + graph.initializer_size());
  for (const onnx::NodeProto& node : graph.node()) {
    taken_.insert(node.name());
    taken_.insert(node.output().begin(), node.output().end());
    taken_.insert(node.input().begin(), node.input().end());
  }
  for (const onnx::TensorProto& t : graph.initializer()) taken_.insert(t.name());
  for (const onnx::SparseTensorProto& t : graph.sparse_initializer()) taken_.insert(t.values().name());
  for (const auto* list : {&graph.input(), &graph.output(), &graph.value_info()}) {
    for (const onnx::ValueInfoProto& v : *list) taken_.insert(v.name());
  }
}

std::string UnusedNames::Take(const std::string& base) {
  std::string name = base;
  for (int n = 1; taken_.contains(name); ++n) name = absl::StrCat(base, "_", n);
  made_.push_back(name);
  taken_.insert(made_.back());
  return name;
}

int64_t IntAttribute(const onnx::NodeProto& node, absl::string_view name, int64_t fallback) {
  for (const onnx::AttributeProto& attr : node.attribute()) {
    if (attr.name() == name) return attr.i();
  }
  return fallback;
}

ModelIndex ModelIndex::Build(const onnx::GraphProto& graph) {
  ModelIndex index;
  index.producer.reserve(graph.node_size());
  index.consumers.reserve(graph.node_size());
  index.initializers.reserve(graph.initializer_size());
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
  index.shapes.reserve(graph.input_size() + graph.output_size() + graph.value_info_size());
  for (const auto* list : {&graph.input(), &graph.output(), &graph.value_info()}) {
    for (const onnx::ValueInfoProto& v : *list) {
      if (!v.type().has_tensor_type() || !v.type().tensor_type().has_shape()) continue;
      std::vector<int64_t> dims;
      dims.reserve(v.type().tensor_type().shape().dim_size());
      for (const onnx::TensorShapeProto_Dimension& d : v.type().tensor_type().shape().dim()) {
        if (!d.has_dim_value()) break;
        dims.push_back(d.dim_value());
      }
      if (static_cast<int>(dims.size()) == v.type().tensor_type().shape().dim_size())
        index.shapes[v.name()] = std::move(dims);
    }
  }
  return index;
}

const std::vector<int>& ModelIndex::ConsumersOf(absl::string_view tensor) const {
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

std::optional<ConcatConvSite> MatchConcatConvSite(const onnx::GraphProto& graph, const ModelIndex& index, int i) {
  if (i < 0 || i >= graph.node_size()) return std::nullopt;
  const onnx::NodeProto& concat = graph.node(i);
  if (concat.op_type() != "Concat" || !DefaultDomain(concat) || concat.output_size() != 1) return std::nullopt;
  ConcatConvSite site;
  site.concat = i;
  const int rank_hint = ConvRankDownstream(graph, index, concat.output(0));
  // Breadth first from the Concat's output: each tensor reached is read by
  // per-channel ops (followed) and Convs (leaves) only.
  std::vector<std::string> frontier = {concat.output(0)};
  for (size_t next = 0; next < frontier.size(); ++next) {
    const std::string tensor = frontier[next];
    const std::vector<int>& readers = index.ConsumersOf(tensor);
    if (index.graph_outputs.contains(tensor) || readers.empty()) return std::nullopt;
    for (int r : readers) {
      const onnx::NodeProto& reader = graph.node(r);
      if (reader.op_type() == "Conv" && DefaultDomain(reader)) {
        if (reader.input_size() < 2 || reader.input(0) != tensor) return std::nullopt;
        for (int in = 1; in < reader.input_size(); ++in) {
          if (reader.input(in) == tensor) return std::nullopt;
        }
        site.convs.push_back(r);
      } else if (std::string assumption; IsPerChannelOp(reader, tensor, graph, index, &assumption, rank_hint)) {
        if (!assumption.empty()) site.assumptions.push_back(std::move(assumption));
        site.pushed.push_back(r);
        frontier.push_back(reader.output(0));
      } else {
        return std::nullopt;
      }
    }
  }
  if (site.convs.empty()) return std::nullopt;
  int64_t axis = IntAttribute(concat, "axis", 1);
  if (axis < 0) {
    auto w = index.initializers.find(graph.node(site.convs[0]).input(1));
    if (w == index.initializers.end()) return std::nullopt;
    axis += graph.initializer(w->second).dims_size();
  }
  if (axis != 1) return std::nullopt;
  std::sort(site.convs.begin(), site.convs.end());
  return site;
}

std::vector<ConcatConvSite> FindConcatConvSites(const onnx::GraphProto& graph, const ModelIndex& index) {
  std::vector<ConcatConvSite> sites;
  for (int i = 0; i < graph.node_size(); ++i) {
    if (std::optional<ConcatConvSite> site = MatchConcatConvSite(graph, index, i); site.has_value()) {
      sites.push_back(*std::move(site));
    }
  }
  return sites;
}

}  // namespace serenity
