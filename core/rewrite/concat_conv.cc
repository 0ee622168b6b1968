#include "core/rewrite/concat_conv.h"

#include <algorithm>
#include <climits>
#include <functional>
#include <map>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/graph/dtype.h"
#include "core/rewrite/add_chain.h"
#include "core/rewrite/per_channel.h"
#include "core/util/status_macros.h"

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
  int64_t outer = 1, inner = 1, elements = 1;
  bool overflow = false;
  for (int d = 0; d < source.dims_size(); ++d) {
    if (source.dims(d) < 0) return absl::InvalidArgumentError(absl::StrCat("'", source.name(), "' has a negative dim"));
    out.add_dims(d == axis ? end - begin : source.dims(d));
    if (d < axis) overflow |= __builtin_mul_overflow(outer, source.dims(d), &outer);
    if (d > axis) overflow |= __builtin_mul_overflow(inner, source.dims(d), &inner);
    overflow |= __builtin_mul_overflow(elements, source.dims(d), &elements);
  }
  const bool has_data = !source.raw_data().empty() || source.float_data_size() > 0 || source.double_data_size() > 0 ||
                        source.int32_data_size() > 0 || source.int64_data_size() > 0 || source.uint64_data_size() > 0 ||
                        source.string_data_size() > 0;
  if (source.data_location() == onnx::TensorProto::EXTERNAL || !has_data) return out;  // dims only
  if (overflow) return absl::FailedPreconditionError(absl::StrCat("'", source.name(), "' has too many elements"));
  // Runs are made only once the data is known to hold every element, so
  // their number is bounded by the data's size.
  const auto make_runs = [&] {
    Runs runs;
    for (int64_t o = 0; o < outer; ++o) {
      runs.emplace_back((o * source.dims(axis) + begin) * inner, (end - begin) * inner);
    }
    return runs;
  };
  if (!source.raw_data().empty()) {
    absl::StatusOr<int64_t> size = DtypeSize(source.data_type());
    if (!size.ok()) return absl::FailedPreconditionError(size.status().message());
    int64_t bytes = 0;
    if (__builtin_mul_overflow(elements, *size, &bytes) || static_cast<int64_t>(source.raw_data().size()) != bytes) {
      return absl::FailedPreconditionError(absl::StrCat("raw data of '", source.name(), "' does not match its dims"));
    }
    std::string* raw = out.mutable_raw_data();
    for (const auto& [first, count] : make_runs()) raw->append(source.raw_data(), first * *size, count * *size);
    return out;
  }
  if (source.string_data_size() > 0) return absl::FailedPreconditionError("string weights are not sliced");
  const int64_t values = source.float_data_size() + source.double_data_size() + source.int32_data_size() +
                         source.int64_data_size() + source.uint64_data_size();
  if (elements == 0 || values % elements != 0) {
    return absl::FailedPreconditionError(absl::StrCat("weight data of '", source.name(), "' does not match its dims"));
  }
  const Runs runs = make_runs();
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

namespace {

// Makes the slice of a Conv's weight for part `part`; returns its name.
using SliceForPart = std::function<absl::StatusOr<std::string>(const onnx::TensorProto& source, int axis, int64_t begin,
                                                               int64_t end, int part)>;

absl::StatusOr<std::string> SliceOrSkip(const onnx::NodeProto& conv, const SliceForPart& slice,
                                        const onnx::TensorProto& source, int axis, int64_t begin, int64_t end,
                                        int part) {
  absl::StatusOr<std::string> name = slice(source, axis, begin, end, part);
  if (!name.ok()) return Skip(conv.name(), name.status().message());
  return name;
}

// Splits one Conv of a site: `xs` are the parts of its input, one per
// Concat input, with `channels` channels each. Appends the new nodes to
// `nodes` and the slices (made by `slice`) through it.
absl::Status SplitConv(const onnx::NodeProto& conv, const onnx::GraphProto& graph, const ModelIndex& index,
                       const std::vector<std::string>& xs, const std::vector<int64_t>& channels, UnusedNames* mint,
                       const SliceForPart& slice, bool accumulate, const std::vector<int>& chain,
                       std::vector<onnx::NodeProto>* nodes, RewriteSite* result) {
  const int k = static_cast<int>(xs.size());
  const std::string& w_name = conv.input(1);
  auto w_it = index.initializers.find(w_name);
  if (w_it == index.initializers.end()) {
    return Skip(conv.name(), absl::StrCat("weight '", w_name, "' is no initializer"));
  }
  const onnx::TensorProto& w = graph.initializer(w_it->second);
  if (w.dims_size() < 3) return Skip(conv.name(), "weight rank below 3");
  const int64_t group = IntAttribute(conv, "group", 1);
  const int64_t out_channels = w.dims(0), group_channels = w.dims(1);
  if (group < 1 || out_channels % group != 0) return Skip(conv.name(), "bad group");
  int64_t total = 0;
  for (int64_t n : channels) total += n;
  if (total != group_channels * group) return Skip(conv.name(), "the Concat's channels do not match the weight");
  const bool has_bias = conv.input_size() > 2 && !conv.input(2).empty();
  const std::string b_name = has_bias ? conv.input(2) : "";
  const onnx::TensorProto* b = nullptr;
  if (has_bias) {
    auto b_it = index.initializers.find(b_name);
    if (b_it != index.initializers.end()) b = &graph.initializer(b_it->second);
  }
  const std::string& y = conv.output(0);
  ConvSplit split{conv.name(), ""};
  if (group == 1) {
    // The parts in `chain` order (the first with the bias): standard form,
    // sum<j> = sum<j-1> + part<chain[j]> (sum<0> being the first part);
    // accumulate form, the first part a Conv and each later one a
    // ConvAccumulate into the one before, written into its buffer. The
    // last writes y.
    split.form = accumulate ? "conv_accumulate" : "conv_sum";
    std::vector<int64_t> first_channel(k, 0);
    for (int i = 1; i < k; ++i) first_channel[i] = first_channel[i - 1] + channels[i - 1];
    std::string sum;
    for (int j = 0; j < k; ++j) {
      const int i = chain[j];
      ASSIGN_OR_RETURN(std::string w_i,
                       SliceOrSkip(conv, slice, w, 1, first_channel[i], first_channel[i] + channels[i], i));
      std::vector<std::string> inputs = {xs[i], w_i};
      if (j == 0 && has_bias) inputs.push_back(b_name);
      const std::string part = mint->Take(absl::StrCat(conv.name(), "/part", i));
      result->new_ops.push_back(part);
      if (accumulate) {
        if (j > 0) inputs.push_back(sum);
        const std::string out = j == k - 1 ? y : part;
        onnx::NodeProto node = PartialConv(conv, part, std::move(inputs), out, 1);
        if (j > 0) {
          node.set_op_type("ConvAccumulate");
          node.set_domain("serenity");
        }
        nodes->push_back(std::move(node));
        sum = out;
        continue;
      }
      nodes->push_back(PartialConv(conv, part, std::move(inputs), part, 1));
      if (j == 0) {
        sum = part;
        continue;
      }
      const std::string add = mint->Take(absl::StrCat(conv.name(), "/sum", j));
      const std::string out = j == k - 1 ? y : add;
      nodes->push_back(Binary("Add", add, {sum, part}, out));
      result->new_ops.push_back(add);
      sum = out;
    }
  } else {
    if (has_bias && b == nullptr) return Skip(conv.name(), "the bias of a grouped Conv is no initializer");
    split.form = group_channels == 1 ? "kernel_wise" : "group_concat";
    const int64_t group_outputs = out_channels / group;
    int64_t first_group = 0;
    std::vector<std::string> parts;
    for (int i = 0; i < k; ++i) {
      if (channels[i] % group_channels != 0) {
        return Skip(conv.name(), absl::StrCat("input ", i, " covers part of a group"));
      }
      const int64_t groups = channels[i] / group_channels;
      const int64_t begin = first_group * group_outputs, end = (first_group + groups) * group_outputs;
      first_group += groups;
      ASSIGN_OR_RETURN(std::string w_i, SliceOrSkip(conv, slice, w, 0, begin, end, i));
      std::vector<std::string> inputs = {xs[i], w_i};
      if (has_bias) {
        ASSIGN_OR_RETURN(std::string b_i, SliceOrSkip(conv, slice, *b, 0, begin, end, i));
        inputs.push_back(b_i);
      }
      const std::string part = mint->Take(absl::StrCat(conv.name(), "/part", i));
      nodes->push_back(PartialConv(conv, part, std::move(inputs), part, groups));
      result->new_ops.push_back(part);
      parts.push_back(part);
    }
    const std::string join = mint->Take(absl::StrCat(conv.name(), "/concat"));
    onnx::NodeProto node = Binary("Concat", join, parts, y);
    onnx::AttributeProto* axis = node.add_attribute();
    axis->set_name("axis");
    axis->set_type(onnx::AttributeProto::INT);
    axis->set_i(1);
    nodes->push_back(std::move(node));
    result->new_ops.push_back(join);
  }
  result->splits.push_back(std::move(split));
  return absl::OkStatus();
}

// Keeps the elements of `field` at `order` (indices, each once at most), in
// that order, by moving pointers: nothing is copied or made. The others are
// deleted, or left to `arena`, the field's arena, when it has one.
template <typename T>
void KeepInOrder(google::protobuf::RepeatedPtrField<T>* field, const std::vector<int>& order,
                 google::protobuf::Arena* arena) {
  const int n = field->size();
  std::vector<T*> all(n);
  field->UnsafeArenaExtractSubrange(0, n, all.data());
  std::vector<bool> kept(n, false);
  for (int i : order) {
    field->UnsafeArenaAddAllocated(all[i]);
    kept[i] = true;
  }
  if (arena != nullptr) return;
  for (int i = 0; i < n; ++i) {
    if (!kept[i]) delete all[i];
  }
}

// Appends `element`, made off any arena, to `field` by taking it over: an
// arena's field owns it from then on, so nothing is copied (Swap or Add()
// across arenas copies the whole message, twice).
template <typename T>
void AppendMoved(google::protobuf::RepeatedPtrField<T>* field, T&& element) {
  field->AddAllocated(new T(std::move(element)));
}

// Removes `removed` nodes and puts `inserted[i]` after node i (in its place
// when it is removed); drops the initializers only removed nodes read, adds `slices`, and drops the
// value_info of `gone` tensors.
// What stays is moved, not copied (KeepInOrder), and what is added is
// taken over (AppendMoved).
void Commit(onnx::GraphProto* graph, const ModelIndex& index, const absl::flat_hash_set<int>& removed,
            std::map<int, std::vector<onnx::NodeProto>> inserted, std::vector<onnx::TensorProto> slices,
            const absl::flat_hash_set<std::string>& gone, std::vector<onnx::ValueInfoProto> new_infos,
            bool list_slices_as_inputs) {
  absl::flat_hash_set<std::string> still_read;  // by the new nodes
  for (const auto& [at, nodes] : inserted) {
    for (const onnx::NodeProto& node : nodes) still_read.insert(node.input().begin(), node.input().end());
  }
  absl::flat_hash_set<std::string> dropped;
  for (int i : removed) {
    for (const std::string& in : graph->node(i).input()) {
      if (!index.initializers.contains(in) || index.graph_outputs.contains(in) || still_read.contains(in)) continue;
      bool only_removed = true;
      for (int reader : index.ConsumersOf(in)) only_removed = only_removed && removed.contains(reader);
      if (only_removed) dropped.insert(in);
    }
  }
  const int nodes = graph->node_size();
  std::vector<int> node_order;
  for (int i = 0; i < nodes; ++i) {
    if (!removed.contains(i)) node_order.push_back(i);
    for (onnx::NodeProto& node : inserted[i]) {
      AppendMoved(graph->mutable_node(), std::move(node));
      node_order.push_back(graph->node_size() - 1);
    }
  }
  KeepInOrder(graph->mutable_node(), node_order, graph->GetArena());
  std::vector<int> initializer_order;
  for (int i = 0; i < graph->initializer_size(); ++i) {
    if (!dropped.contains(graph->initializer(i).name())) initializer_order.push_back(i);
  }
  KeepInOrder(graph->mutable_initializer(), initializer_order, graph->GetArena());
  bool listed_as_input = list_slices_as_inputs;
  std::vector<int> input_order;
  for (int i = 0; i < graph->input_size(); ++i) {
    if (dropped.contains(graph->input(i).name())) {
      listed_as_input = true;
    } else {
      input_order.push_back(i);
    }
  }
  KeepInOrder(graph->mutable_input(), input_order, graph->GetArena());
  // Old IR versions (below 4) list initializers as inputs, and shape
  // inference reads only those: list the slices too.
  if (listed_as_input) {
    for (const onnx::TensorProto& t : slices) {
      onnx::ValueInfoProto* v = graph->add_input();
      v->set_name(t.name());
      onnx::TypeProto_Tensor* type = v->mutable_type()->mutable_tensor_type();
      type->set_elem_type(t.data_type());
      for (int64_t d : t.dims()) type->mutable_shape()->add_dim()->set_dim_value(d);
    }
  }
  for (onnx::TensorProto& t : slices) AppendMoved(graph->mutable_initializer(), std::move(t));
  std::vector<int> info_order;
  for (int i = 0; i < graph->value_info_size(); ++i) {
    if (!gone.contains(graph->value_info(i).name())) info_order.push_back(i);
  }
  KeepInOrder(graph->mutable_value_info(), info_order, graph->GetArena());
  for (onnx::ValueInfoProto& v : new_infos) AppendMoved(graph->mutable_value_info(), std::move(v));
}

}  // namespace

absl::StatusOr<RewriteSite> ApplyConcatConv(onnx::ModelProto* model, const ConcatConvSite& site,
                                            const std::vector<int64_t>& channels, RewriteForm form,
                                            const std::vector<int>& chain, const ModelIndex* given_index) {
  onnx::GraphProto* graph = model->mutable_graph();
  const onnx::NodeProto& concat = graph->node(site.concat);
  if (site.convs.empty()) return absl::InvalidArgumentError("a site without Convs");
  const std::string first_conv = graph->node(site.convs[0]).name();
  const int k = concat.input_size();
  if (k < 2) return Skip(first_conv, "its Concat has fewer than two inputs");
  if (static_cast<int>(channels.size()) != k) return Skip(first_conv, "channel counts do not match the inputs");
  int64_t total = 0;
  for (int64_t n : channels) {
    if (n <= 0) return Skip(first_conv, "a Concat input has no channels");
    total += n;
  }
  std::optional<ModelIndex> built;
  if (given_index == nullptr) built = ModelIndex::Build(*graph);
  const ModelIndex& index = given_index != nullptr ? *given_index : *built;
  int rank = 0;  // of the data, from the Convs' weights
  for (int c : site.convs) {
    auto w = index.initializers.find(graph->node(c).input(1));
    if (w == index.initializers.end()) continue;  // SplitConv says so
    const int r = graph->initializer(w->second).dims_size();
    if (r < 3) return Skip(graph->node(c).name(), "weight rank below 3");
    if (rank != 0 && r != rank) return Skip(first_conv, "the Convs have weights of different ranks");
    rank = r;
  }

  RewriteSite result;
  for (int i = 0; i < k; ++i) result.chain.push_back(i);
  if (!chain.empty()) {
    std::vector<int> sorted = chain;
    std::sort(sorted.begin(), sorted.end());
    if (sorted != result.chain) {
      return absl::InvalidArgumentError(
          absl::StrCat("the chain order of Concat '", concat.name(), "' is no permutation of its ", k, " inputs"));
    }
    result.chain = chain;
  }
  result.concat = concat.name();
  result.assumptions = site.assumptions;
  result.inputs.assign(concat.input().begin(), concat.input().end());
  result.channels = channels;
  UnusedNames mint(*graph);
  std::vector<onnx::TensorProto> slices;
  std::string owner;  // the op whose weights are being sliced, for their names
  // One slice per (weight, axis, range) in a site: Convs or ops sharing a
  // weight share its slices.
  absl::flat_hash_map<std::string, std::string> sliced_before;
  const SliceWeight slice = [&](const onnx::TensorProto& source, int axis, int64_t begin,
                                int64_t end) -> absl::StatusOr<std::string> {
    const std::string key = absl::StrCat(source.name(), "\n", axis, "\n", begin, "\n", end);
    if (auto it = sliced_before.find(key); it != sliced_before.end()) return it->second;
    std::string name = mint.Take(absl::StrCat(source.name(), "/", owner));
    sliced_before[key] = name;
    absl::StatusOr<onnx::TensorProto> sliced = SliceInitializer(source, axis, begin, end, name);
    if (!sliced.ok()) return absl::FailedPreconditionError(sliced.status().message());
    slices.push_back(*std::move(sliced));
    result.weight_slices.push_back({source.name(), axis, begin, end, name});
    return name;
  };

  // The parts of each tensor between the Concat and the Convs.
  absl::flat_hash_map<std::string, std::vector<std::string>> parts;
  parts[concat.output(0)] = result.inputs;
  std::map<int, std::vector<onnx::NodeProto>> inserted;  // before node index
  absl::flat_hash_set<std::string> gone = {concat.output(0)};
  // The shapes the model states for the pushed ops' outputs are stated for
  // their parts too (a Slice whose constants were stripped needs them).
  std::vector<onnx::ValueInfoProto> infos;
  const auto stated = [&](const std::string& tensor) -> const onnx::ValueInfoProto* {
    if (auto it = index.shapes.find(tensor); it == index.shapes.end() || it->second.size() < 2) return nullptr;
    for (const onnx::ValueInfoProto& v : graph->value_info()) {
      if (v.name() == tensor) return &v;
    }
    return nullptr;
  };
  for (int p : site.pushed) {
    const onnx::NodeProto& op = graph->node(p);
    std::string data;
    for (const std::string& in : op.input()) {
      if (parts.contains(in)) data = in;
    }
    if (data.empty()) return absl::InvalidArgumentError(absl::StrCat("'", op.name(), "' is not on the site"));
    std::vector<std::string>& out = parts[op.output(0)];
    int64_t begin = 0;
    for (int i = 0; i < k; ++i) {
      const std::string name = mint.Take(absl::StrCat(op.name(), "/part", i));
      const std::string tensor = mint.Take(absl::StrCat(op.output(0), "/part", i));
      owner = name;
      absl::StatusOr<onnx::NodeProto> node =
          PartOfPerChannelOp(op, *graph, index, data, rank == 0 ? 4 : rank, total, begin, begin + channels[i],
                             parts[data][i], name, tensor, slice);
      if (!node.ok()) return Skip(first_conv, node.status().message());
      begin += channels[i];
      inserted[p].push_back(*std::move(node));  // where the op was: after its constants
      result.new_ops.push_back(name);
      out.push_back(tensor);
      if (const onnx::ValueInfoProto* info = stated(op.output(0)); info != nullptr) {
        onnx::ValueInfoProto part = *info;  // the same shape with this input's channels
        part.set_name(tensor);
        part.mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(1)->set_dim_value(channels[i]);
        infos.push_back(std::move(part));
      }
    }
    result.pushed.push_back(op.name());
    gone.insert(op.output(0));
  }
  for (int c : site.convs) {
    const onnx::NodeProto& conv = graph->node(c);
    auto it = parts.find(conv.input(0));
    if (it == parts.end()) return absl::InvalidArgumentError(absl::StrCat("'", conv.name(), "' is not on the site"));
    std::vector<onnx::NodeProto> nodes;
    const SliceForPart named = [&](const onnx::TensorProto& source, int axis, int64_t begin, int64_t end,
                                   int part) -> absl::StatusOr<std::string> {
      owner = absl::StrCat(conv.name(), "/part", part);
      return slice(source, axis, begin, end);
    };
    RETURN_IF_ERROR(SplitConv(conv, *graph, index, it->second, channels, &mint, named, form == RewriteForm::kAccumulate,
                              result.chain, &nodes, &result));
    inserted[c] = std::move(nodes);
  }
  result.conv = result.splits[0].conv;
  result.form = result.splits[0].form;

  absl::flat_hash_set<int> removed(site.pushed.begin(), site.pushed.end());
  removed.insert(site.convs.begin(), site.convs.end());
  removed.insert(site.concat);
  // A Constant node whose value was sliced goes too when only removed nodes
  // read it (its copies read the slices).
  absl::flat_hash_set<std::string> read_by_new;
  for (const auto& [at, nodes] : inserted) {
    for (const onnx::NodeProto& node : nodes) read_by_new.insert(node.input().begin(), node.input().end());
  }
  for (int p : site.pushed) {
    for (const std::string& in : graph->node(p).input()) {
      auto producer = index.producer.find(in);
      if (producer == index.producer.end() || graph->node(producer->second).op_type() != "Constant") continue;
      if (read_by_new.contains(in) || index.graph_outputs.contains(in)) continue;
      bool only_removed = true;
      for (int reader : index.ConsumersOf(in)) only_removed = only_removed && removed.contains(reader);
      if (!only_removed) continue;
      removed.insert(producer->second);
      gone.insert(in);
    }
  }
  Commit(graph, index, removed, std::move(inserted), std::move(slices), gone, std::move(infos),
         model->ir_version() < 4);
  bool uses_serenity_ops = false;
  for (const ConvSplit& split : result.splits) uses_serenity_ops |= split.form == "conv_accumulate";
  bool imported = false;
  for (const onnx::OperatorSetIdProto& opset : model->opset_import()) imported |= opset.domain() == "serenity";
  if (uses_serenity_ops && !imported) {
    onnx::OperatorSetIdProto* opset = model->add_opset_import();
    opset->set_domain("serenity");
    opset->set_version(1);
  }
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
    if (want.form == "add_order") {
      RETURN_IF_ERROR(ApplyAddOrderSite(&model, want).status());
      continue;
    }
    const int concat = FindNode(model.graph(), want.concat);
    const ModelIndex index = ModelIndex::Build(model.graph());
    std::optional<ConcatConvSite> found = MatchConcatConvSite(model.graph(), index, concat);
    const auto mismatch = [&](absl::string_view what) {
      return absl::InvalidArgumentError(absl::StrCat("the recipe does not match this model at Concat '", want.concat,
                                                     "' -> Conv '", want.conv, "': ", what));
    };
    if (!found.has_value()) return mismatch("no such Concat reaching only Convs");
    std::vector<std::string> want_convs, got_convs, got_pushed;
    for (const ConvSplit& split : want.splits) want_convs.push_back(split.conv);
    for (int c : found->convs) got_convs.push_back(model.graph().node(c).name());
    for (int p : found->pushed) got_pushed.push_back(model.graph().node(p).name());
    if (got_convs != want_convs || got_pushed != want.pushed) return mismatch("other ops between Concat and Convs");
    const onnx::NodeProto& node = model.graph().node(concat);
    if (std::vector<std::string>(node.input().begin(), node.input().end()) != want.inputs) {
      return mismatch("other Concat inputs");
    }
    bool accumulate = false;
    for (const ConvSplit& split : want.splits) accumulate |= split.form == "conv_accumulate";
    absl::StatusOr<RewriteSite> done = ApplyConcatConv(
        &model, *found, want.channels, accumulate ? RewriteForm::kAccumulate : RewriteForm::kStandard, want.chain);
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
