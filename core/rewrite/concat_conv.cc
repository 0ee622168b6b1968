#include "core/rewrite/concat_conv.h"

#include <climits>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/graph/dtype.h"

namespace serenity {
namespace {

using Runs = std::vector<std::pair<int64_t, int64_t>>;  // (first element, count)

absl::Status Skip(absl::string_view conv, absl::string_view why) {
  return absl::FailedPreconditionError(absl::StrCat("Conv '", conv, "' not rewritten: ", why));
}

template <typename Field>
void CopyRuns(const Field& from, const Runs& runs, Field* to) {
  for (const auto& [first, count] : runs) {
    for (int64_t i = 0; i < count; ++i) to->Add(from.Get(static_cast<int>(first + i)));
  }
}

// Copies `from`'s runs into `to` when `from` holds `elements` * m values for
// a whole m >= 1 (m = 2 for complex numbers); FailedPrecondition otherwise.
template <typename Field>
absl::Status SliceField(const Field& from, int64_t elements, Runs runs, Field* to) {
  if (elements == 0 || from.size() % elements != 0) {
    return absl::FailedPreconditionError("weight data does not match its dims");
  }
  const int64_t m = from.size() / elements;
  for (auto& [first, count] : runs) first *= m, count *= m;
  CopyRuns(from, runs, to);
  return absl::OkStatus();
}

// Names not yet used in the graph, as tensors or nodes.
class NameMint {
 public:
  explicit NameMint(const onnx::GraphProto& graph) {
    for (const onnx::NodeProto& node : graph.node()) {
      taken_.insert(node.name());
      for (const std::string& t : node.output()) taken_.insert(t);
      for (const std::string& t : node.input()) taken_.insert(t);
    }
    for (const onnx::TensorProto& t : graph.initializer()) taken_.insert(t.name());
    for (const onnx::ValueInfoProto& v : graph.input()) taken_.insert(v.name());
    for (const onnx::ValueInfoProto& v : graph.output()) taken_.insert(v.name());
    for (const onnx::ValueInfoProto& v : graph.value_info()) taken_.insert(v.name());
  }
  std::string Take(std::string name) {
    const std::string base = name;
    for (int n = 1; taken_.contains(name); ++n) name = absl::StrCat(base, "_", n);
    taken_.insert(name);
    return name;
  }

 private:
  absl::flat_hash_set<std::string> taken_;
};

onnx::NodeProto PartialConv(const onnx::NodeProto& conv, const std::string& name, std::vector<std::string> inputs,
                            const std::string& output, int64_t group) {
  onnx::NodeProto node;
  node.set_name(name);
  node.set_op_type("Conv");
  node.set_domain(conv.domain());
  for (std::string& in : inputs) node.add_input(std::move(in));
  node.add_output(output);
  for (const onnx::AttributeProto& attr : conv.attribute()) {
    if (attr.name() != "group") *node.add_attribute() = attr;
  }
  if (group != 1) {
    onnx::AttributeProto* attr = node.add_attribute();
    attr->set_name("group");
    attr->set_type(onnx::AttributeProto::INT);
    attr->set_i(group);
  }
  return node;
}

onnx::NodeProto Binary(const std::string& type, const std::string& name, std::vector<std::string> inputs,
                       const std::string& output) {
  onnx::NodeProto node;
  node.set_name(name);
  node.set_op_type(type);
  for (std::string& in : inputs) node.add_input(std::move(in));
  node.add_output(output);
  return node;
}

}  // namespace

absl::StatusOr<onnx::TensorProto> SliceInitializer(const onnx::TensorProto& source, int axis, int64_t begin,
                                                   int64_t end, const std::string& name) {
  if (axis < 0 || axis >= source.dims_size() || begin < 0 || end <= begin || end > source.dims(axis)) {
    return absl::InvalidArgumentError(
        absl::StrCat("slice [", begin, ", ", end, ") along axis ", axis, " is outside '", source.name(), "'"));
  }
  onnx::TensorProto out;
  out.set_name(name);
  out.set_data_type(source.data_type());
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < source.dims_size(); ++d) {
    out.add_dims(d == axis ? end - begin : source.dims(d));
    if (d < axis) outer *= source.dims(d);
    if (d > axis) inner *= source.dims(d);
  }
  const int64_t elements = outer * source.dims(axis) * inner;
  if (source.data_location() == onnx::TensorProto::EXTERNAL) return out;  // dims only
  Runs runs;
  for (int64_t o = 0; o < outer; ++o) runs.emplace_back((o * source.dims(axis) + begin) * inner, (end - begin) * inner);
  if (!source.raw_data().empty()) {
    absl::StatusOr<int64_t> size = DtypeSize(source.data_type());
    if (!size.ok()) return absl::FailedPreconditionError(size.status().message());
    if (static_cast<int64_t>(source.raw_data().size()) != elements * *size) {
      return absl::FailedPreconditionError(absl::StrCat("raw data of '", source.name(), "' does not match its dims"));
    }
    std::string* raw = out.mutable_raw_data();
    for (const auto& [first, count] : runs) raw->append(source.raw_data(), first * *size, count * *size);
    return out;
  }
  if (source.string_data_size() > 0) return absl::FailedPreconditionError("string weights are not sliced");
  if (source.float_data_size() > 0) {
    if (absl::Status s = SliceField(source.float_data(), elements, runs, out.mutable_float_data()); !s.ok()) return s;
  } else if (source.double_data_size() > 0) {
    if (absl::Status s = SliceField(source.double_data(), elements, runs, out.mutable_double_data()); !s.ok()) return s;
  } else if (source.int32_data_size() > 0) {
    if (absl::Status s = SliceField(source.int32_data(), elements, runs, out.mutable_int32_data()); !s.ok()) return s;
  } else if (source.int64_data_size() > 0) {
    if (absl::Status s = SliceField(source.int64_data(), elements, runs, out.mutable_int64_data()); !s.ok()) return s;
  } else if (source.uint64_data_size() > 0) {
    if (absl::Status s = SliceField(source.uint64_data(), elements, runs, out.mutable_uint64_data()); !s.ok()) return s;
  }
  return out;  // no data: dims only
}

absl::StatusOr<RewriteSite> ApplyConcatConv(onnx::ModelProto* model, const ConcatConvSite& site,
                                            const std::vector<int64_t>& channels) {
  onnx::GraphProto* graph = model->mutable_graph();
  const onnx::NodeProto concat = graph->node(site.concat);
  const onnx::NodeProto conv = graph->node(site.conv);
  const int k = concat.input_size();
  if (k < 2) return Skip(conv.name(), "its Concat has fewer than two inputs");
  if (static_cast<int>(channels.size()) != k) return Skip(conv.name(), "channel counts do not match the inputs");
  for (int64_t n : channels) {
    if (n <= 0) return Skip(conv.name(), "a Concat input has no channels");
  }
  const ModelIndex index = ModelIndex::Build(*graph);
  const std::string& w_name = conv.input(1);
  auto w_it = index.initializers.find(w_name);
  if (w_it == index.initializers.end())
    return Skip(conv.name(), absl::StrCat("weight '", w_name, "' is no initializer"));
  const onnx::TensorProto w = graph->initializer(w_it->second);
  if (w.dims_size() < 3) return Skip(conv.name(), "weight rank below 3");
  const int64_t group = IntAttribute(conv, "group", 1);
  const int64_t out_channels = w.dims(0), group_channels = w.dims(1);
  if (group < 1 || out_channels % group != 0) return Skip(conv.name(), "bad group");
  int64_t total = 0;
  for (int64_t n : channels) total += n;
  if (total != group_channels * group) return Skip(conv.name(), "the Concat's channels do not match the weight");
  const bool has_bias = conv.input_size() > 2 && !conv.input(2).empty();
  const std::string b_name = has_bias ? conv.input(2) : "";
  std::optional<onnx::TensorProto> b;
  if (has_bias) {
    auto b_it = index.initializers.find(b_name);
    if (b_it != index.initializers.end()) b = graph->initializer(b_it->second);
  }

  RewriteSite result;
  result.concat = concat.name();
  result.conv = conv.name();
  result.inputs.assign(concat.input().begin(), concat.input().end());
  result.channels = channels;
  const std::string& y = conv.output(0);
  NameMint mint(*graph);
  std::vector<onnx::NodeProto> nodes;
  std::vector<onnx::TensorProto> slices;
  auto slice = [&](const onnx::TensorProto& source, int axis, int64_t begin, int64_t end, int i) -> absl::Status {
    std::string name = mint.Take(absl::StrCat(source.name(), "/", conv.name(), "/part", i));
    absl::StatusOr<onnx::TensorProto> sliced = SliceInitializer(source, axis, begin, end, name);
    if (!sliced.ok()) return Skip(conv.name(), sliced.status().message());
    slices.push_back(*std::move(sliced));
    result.weight_slices.push_back({source.name(), axis, begin, end, std::move(name)});
    return absl::OkStatus();
  };
  std::vector<std::string> parts;
  if (group == 1) {
    result.form = "conv_sum";
    std::string sum;
    int64_t begin = 0;
    for (int i = 0; i < k; ++i) {
      if (absl::Status s = slice(w, 1, begin, begin + channels[i], i); !s.ok()) return s;
      begin += channels[i];
      std::vector<std::string> inputs = {concat.input(i), slices.back().name()};
      if (i == 0 && has_bias) inputs.push_back(b_name);
      const std::string part = mint.Take(absl::StrCat(conv.name(), "/part", i));
      nodes.push_back(PartialConv(conv, part, std::move(inputs), part, 1));
      result.new_ops.push_back(part);
      if (i == 0) {
        sum = part;
        continue;
      }
      const std::string add = mint.Take(absl::StrCat(conv.name(), "/sum", i));
      const std::string out = i == k - 1 ? y : add;
      nodes.push_back(Binary("Add", add, {sum, part}, out));
      result.new_ops.push_back(add);
      sum = out;
    }
  } else {
    if (group_channels == 1) return Skip(conv.name(), "depthwise (the kernel-wise partition, not this rewrite)");
    if (has_bias && !b.has_value()) return Skip(conv.name(), "the bias of a grouped Conv is no initializer");
    result.form = "group_concat";
    const int64_t group_outputs = out_channels / group;
    int64_t first_group = 0;
    for (int i = 0; i < k; ++i) {
      if (channels[i] % group_channels != 0) {
        return Skip(conv.name(), absl::StrCat("input ", i, " covers part of a group"));
      }
      const int64_t groups = channels[i] / group_channels;
      const int64_t begin = first_group * group_outputs, end = (first_group + groups) * group_outputs;
      first_group += groups;
      if (absl::Status s = slice(w, 0, begin, end, i); !s.ok()) return s;
      std::vector<std::string> inputs = {concat.input(i), slices.back().name()};
      if (has_bias) {
        if (absl::Status s = slice(*b, 0, begin, end, i); !s.ok()) return s;
        inputs.push_back(slices.back().name());
      }
      const std::string part = mint.Take(absl::StrCat(conv.name(), "/part", i));
      nodes.push_back(PartialConv(conv, part, std::move(inputs), part, groups));
      result.new_ops.push_back(part);
      parts.push_back(part);
    }
    const std::string join = mint.Take(absl::StrCat(conv.name(), "/concat"));
    onnx::NodeProto node = Binary("Concat", join, parts, y);
    onnx::AttributeProto* axis = node.add_attribute();
    axis->set_name("axis");
    axis->set_type(onnx::AttributeProto::INT);
    axis->set_i(1);
    nodes.push_back(std::move(node));
    result.new_ops.push_back(join);
  }

  // Commit: the Concat goes, the Conv becomes `nodes`, the slices join the
  // initializers, and weights nothing else reads go.
  google::protobuf::RepeatedPtrField<onnx::NodeProto> rebuilt;
  for (int i = 0; i < graph->node_size(); ++i) {
    if (i == site.concat) continue;
    if (i != site.conv) {
      rebuilt.Add()->Swap(graph->mutable_node(i));
      continue;
    }
    for (onnx::NodeProto& node : nodes) rebuilt.Add()->Swap(&node);
  }
  graph->mutable_node()->Swap(&rebuilt);
  absl::flat_hash_set<std::string> dropped;
  auto only_this_conv = [&](const std::string& t) {
    return index.ConsumersOf(t).size() == 1 && !index.graph_outputs.contains(t);
  };
  if (only_this_conv(w_name)) dropped.insert(w_name);
  if (group != 1 && has_bias && only_this_conv(b_name)) dropped.insert(b_name);
  bool listed_as_input = false;
  google::protobuf::RepeatedPtrField<onnx::TensorProto> initializers;
  for (onnx::TensorProto& t : *graph->mutable_initializer()) {
    if (!dropped.contains(t.name())) initializers.Add()->Swap(&t);
  }
  for (onnx::TensorProto& t : slices) *initializers.Add() = t;
  graph->mutable_initializer()->Swap(&initializers);
  google::protobuf::RepeatedPtrField<onnx::ValueInfoProto> inputs;
  for (onnx::ValueInfoProto& v : *graph->mutable_input()) {
    if (dropped.contains(v.name())) {
      listed_as_input = true;
    } else {
      inputs.Add()->Swap(&v);
    }
  }
  // Old IR versions list initializers as inputs: list the slices too.
  if (listed_as_input) {
    for (const onnx::TensorProto& t : slices) {
      onnx::ValueInfoProto* v = inputs.Add();
      v->set_name(t.name());
      onnx::TypeProto_Tensor* type = v->mutable_type()->mutable_tensor_type();
      type->set_elem_type(t.data_type());
      for (int64_t d : t.dims()) type->mutable_shape()->add_dim()->set_dim_value(d);
    }
  }
  graph->mutable_input()->Swap(&inputs);
  google::protobuf::RepeatedPtrField<onnx::ValueInfoProto> infos;
  for (onnx::ValueInfoProto& v : *graph->mutable_value_info()) {
    if (v.name() != concat.output(0)) infos.Add()->Swap(&v);
  }
  graph->mutable_value_info()->Swap(&infos);
  return result;
}

absl::StatusOr<std::string> ApplyRecipe(absl::string_view model_bytes, const RewriteRecipe& recipe) {
  onnx::ModelProto model;
  if (model_bytes.size() > static_cast<size_t>(INT_MAX) ||
      !model.ParseFromArray(model_bytes.data(), static_cast<int>(model_bytes.size()))) {
    return absl::InvalidArgumentError("not a valid ONNX model");
  }
  NameNodesAsImporter(model.mutable_graph());
  for (const RewriteSite& want : recipe.sites) {
    const int concat = FindNode(model.graph(), want.concat);
    const int conv = FindNode(model.graph(), want.conv);
    const ModelIndex index = ModelIndex::Build(model.graph());
    bool found = false;
    for (const ConcatConvSite& site : FindConcatConvSites(model.graph(), index)) {
      found = found || (site.concat == concat && site.conv == conv);
    }
    const auto mismatch = [&](absl::string_view what) {
      return absl::InvalidArgumentError(absl::StrCat("the recipe does not match this model at Concat '", want.concat,
                                                     "' -> Conv '", want.conv, "': ", what));
    };
    if (!found) return mismatch("no such Concat feeding that Conv");
    const onnx::NodeProto& node = model.graph().node(concat);
    if (std::vector<std::string>(node.input().begin(), node.input().end()) != want.inputs) {
      return mismatch("other Concat inputs");
    }
    absl::StatusOr<RewriteSite> done = ApplyConcatConv(&model, {concat, conv}, want.channels);
    if (!done.ok()) return mismatch(done.status().message());
    std::vector<std::string> want_slices, got_slices;
    for (const WeightSlice& s : want.weight_slices) want_slices.push_back(absl::StrCat(s.name, s.begin, ":", s.end));
    for (const WeightSlice& s : done->weight_slices) got_slices.push_back(absl::StrCat(s.name, s.begin, ":", s.end));
    if (done->new_ops != want.new_ops || done->form != want.form || got_slices != want_slices) {
      return mismatch(absl::StrCat("other new ops or slices (", absl::StrJoin(done->new_ops, ","), ")"));
    }
  }
  return model.SerializeAsString();
}

}  // namespace serenity
