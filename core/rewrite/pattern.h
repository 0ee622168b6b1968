// The pattern matcher shared by the graph rewrites (issue 17): producer and
// consumer maps of an ONNX graph, the importer's node names, and the
// Concat -> Conv sites the channel-wise partition (concat_conv.h) rewrites.
// Everything works on onnx::GraphProto; nothing here changes a model except
// NameNodesAsImporter.
#ifndef SERENITY_CORE_REWRITE_PATTERN_H_
#define SERENITY_CORE_REWRITE_PATTERN_H_

#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/string_view.h"
#include "onnx/onnx_pb.h"

namespace serenity {

// Who makes and who reads each tensor of a graph (node indices into
// graph.node). Built once; stale after the graph changes. The names are
// views of the graph's own strings: the index must not outlive them (a
// graph whose nodes are moved, not destroyed, keeps them).
struct ModelIndex {
  absl::flat_hash_map<absl::string_view, int> producer;
  // Every node that reads the tensor, once per input slot (a node reading a
  // tensor twice is listed twice), in node order.
  absl::flat_hash_map<absl::string_view, std::vector<int>> consumers;
  absl::flat_hash_set<absl::string_view> graph_outputs;
  absl::flat_hash_map<absl::string_view, int> initializers;  // name -> index in graph.initializer
  // Shapes the graph states (inputs, outputs, value_info), where every dim
  // is a known value.
  absl::flat_hash_map<absl::string_view, std::vector<int64_t>> shapes;

  static ModelIndex Build(const onnx::GraphProto& graph);
  // Readers of `tensor` (empty when none).
  const std::vector<int>& ConsumersOf(absl::string_view tensor) const;
};

// Gives every node the name OnnxToGraphSpec (onnx_import.h) would give it:
// its own name, or "<op_type>_<index>" when empty, with "_<index>" appended
// while the name is taken. Afterwards the importer keeps every name as is,
// so a rewrite can name nodes that had none and the op names of a plan stay
// those of the unrewritten import.
void NameNodesAsImporter(onnx::GraphProto* graph);

// Names not yet used in a graph by a node, a tensor (inputs, outputs,
// value_info, initializers, sparse initializers), for the nodes and tensors
// a rewrite adds.
// It keeps views of the graph's strings: it must not outlive them.
class UnusedNames {
 public:
  explicit UnusedNames(const onnx::GraphProto& graph);
  // `base`, or "<base>_<n>" for the first n >= 1 that is free; then taken.
  std::string Take(const std::string& base);

 private:
  absl::flat_hash_set<absl::string_view> taken_;
  std::deque<std::string> made_;  // the names Take gave (stable addresses)
};

// The node's integer attribute `name`, or `fallback` when it has none.
int64_t IntAttribute(const onnx::NodeProto& node, absl::string_view name, int64_t fallback);

// Index of the node named `name`, or -1.
int FindNode(const onnx::GraphProto& graph, absl::string_view name);

// A Concat whose output reaches Convs only, directly or through per-channel
// ops (per_channel.h): the channel-wise partition (concat_conv.h) rewrites
// all of it at once.
struct ConcatConvSite {
  int concat = -1;          // node indices
  std::vector<int> pushed;  // the per-channel ops in between, producers first
  std::vector<int> convs;   // the Convs, in node order
  // What the match took on trust (IsPerChannelOp's assumptions).
  std::vector<std::string> assumptions;
};

// Every site where a Concat (default domain) joins along axis 1 (the channel
// axis; a negative axis counts from the rank of the first Conv's weight when
// that is an initializer), and every reader of its output, and of the output
// of each per-channel op reached so, is either a per-channel op reading it
// as its data input or a Conv (default domain) reading it as input 0 (X)
// only; with at least one Conv, and none of these tensors a graph output.
// In node order. Whether the site can be rewritten (weights, groups,
// per-channel constants) is the rewrite's decision.
std::vector<ConcatConvSite> FindConcatConvSites(const onnx::GraphProto& graph, const ModelIndex& index);

// The site of the Concat at node index `concat`, by the same rules; nullopt
// when that node is no such Concat.
std::optional<ConcatConvSite> MatchConcatConvSite(const onnx::GraphProto& graph, const ModelIndex& index, int concat);

}  // namespace serenity

#endif  // SERENITY_CORE_REWRITE_PATTERN_H_
