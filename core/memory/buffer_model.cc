#include "core/memory/buffer_model.h"

#include <algorithm>

namespace serenity {

bool IsElementwiseOp(absl::string_view op_type) {
  static constexpr absl::string_view kTypes[] = {
      "Relu",      "LeakyRelu", "PRelu", "Elu", "Selu", "Sigmoid",  "HardSigmoid",
      "HardSwish", "Tanh",      "Clip",  "Add", "Sub",  "Mul",      "Div",
      "Neg",       "Abs",       "Exp",   "Log", "Sqrt", "Softplus", "BatchNormalization",
      "Dropout",   "Erf",       "Gelu"};
  for (absl::string_view type : kTypes) {
    if (op_type == type) return true;
  }
  return false;
}

bool IsViewOp(absl::string_view op_type) {
  return op_type == "Reshape" || op_type == "Flatten" || op_type == "Squeeze" || op_type == "Unsqueeze" ||
         op_type == "Identity";
}

bool IsAccumulateOp(absl::string_view op_type) { return op_type == kConvAccumulateType; }

TensorId AccumulatorOf(const Graph& graph, OpId u) {
  const Op& op = graph.op(u);
  if (!IsAccumulateOp(op.type) || op.inputs.size() <= static_cast<size_t>(kAccumulatorInput) ||
      op.outputs.size() != 1) {
    return -1;
  }
  const TensorId acc = op.inputs[kAccumulatorInput];
  const Tensor& out = graph.tensor(op.outputs[0]);
  const Tensor& in = graph.tensor(acc);
  if (in.is_weight || out.is_weight || in.bytes != out.bytes) return -1;
  return acc;
}

bool IsConcatInPlace(const Graph& graph, OpId u) {
  const Op& op = graph.op(u);
  if (op.type != "Concat" || op.outputs.size() != 1 || op.inputs.empty()) return false;
  const Tensor& out = graph.tensor(op.outputs[0]);
  if (out.is_weight || out.shape.empty()) return false;
  const size_t rank = out.shape.size();
  size_t axis = rank;  // none found yet
  int64_t total = 0;
  for (size_t i = 0; i < op.inputs.size(); ++i) {
    const TensorId t = op.inputs[i];
    const Tensor& in = graph.tensor(t);
    if (in.is_weight || in.producer == kNoOp || in.is_graph_output || in.dtype != out.dtype) return false;
    if (graph.op(in.producer).type == "Concat") return false;
    if (std::find(op.inputs.begin(), op.inputs.begin() + static_cast<ptrdiff_t>(i), t) !=
        op.inputs.begin() + static_cast<ptrdiff_t>(i)) {
      return false;  // the same tensor twice cannot be two slices
    }
    if (in.shape.size() != rank) return false;
    for (size_t d = 0; d < rank; ++d) {
      if (in.shape[d] == out.shape[d]) continue;
      if (axis != rank && axis != d) return false;
      axis = d;
    }
    total += in.bytes;  // Graph::Build bounds the sum of all tensors
  }
  if (total != out.bytes) return false;
  if (axis == rank) return true;  // every input has the output's shape
  int64_t extent = 0;
  for (TensorId t : op.inputs) {
    const int64_t part = graph.tensor(t).shape[axis];  // dims are not negative
    if (part > out.shape[axis] - extent) return false;
    extent += part;
  }
  if (extent != out.shape[axis]) return false;
  for (size_t d = 0; d < axis; ++d) {
    if (out.shape[d] != 1) return false;
  }
  return true;
}

BufferModel::BufferModel(const Graph& graph, const MemoryModel& model)
    : graph_(&graph),
      model_(model),
      buffer_of_(graph.num_tensors(), kNoBuffer),
      allocates_(graph.num_ops()),
      reads_(graph.num_ops()),
      in_place_inputs_(graph.num_ops()),
      in_place_bytes_(graph.num_ops(), 0),
      concat_slices_(graph.num_ops()),
      accumulates_into_(graph.num_ops()) {
  auto new_buffer = [this](TensorId t) {
    const Tensor& tensor = graph_->tensor(t);
    ActivationBuffer b;
    b.tensor = t;
    b.bytes = tensor.bytes;
    b.producer = tensor.producer;
    buffer_of_[t] = static_cast<BufferId>(buffers_.size());
    buffers_.push_back(std::move(b));
    return buffer_of_[t];
  };
  if (model.count_weights) resident_bytes_ = graph.weight_bytes();

  // Graph inputs first, then the op outputs that own memory; aliases are
  // attached afterwards, when every base buffer exists (file order need not
  // be topological).
  for (TensorId t : graph.inputs()) new_buffer(t);

  // Resolve each tensor's base: a view output of equal size aliases its data
  // input's base, an accumulation output its accumulator's. Memoised
  // recursion over the (acyclic) producer chain.
  std::vector<TensorId> base(graph.num_tensors(), -1);
  auto resolve = [&](TensorId t) {
    // Follow view and accumulation producers down to a tensor that owns its
    // memory.
    std::vector<TensorId> chain;
    TensorId cur = t;
    while (base[cur] < 0) {
      const Tensor& tensor = graph.tensor(cur);
      if (tensor.is_weight || tensor.producer == kNoOp) break;
      TensorId data = AccumulatorOf(graph, tensor.producer);
      if (data < 0) {
        const Op& producer = graph.op(tensor.producer);
        if (!model.alias_views || !IsViewOp(producer.type) || producer.inputs.empty() || producer.outputs.size() != 1) {
          break;
        }
        data = producer.inputs.front();
        const Tensor& data_tensor = graph.tensor(data);
        if (data_tensor.is_weight || data_tensor.bytes != tensor.bytes) break;
      }
      chain.push_back(cur);
      cur = data;
    }
    TensorId root = base[cur] >= 0 ? base[cur] : cur;
    base[cur] = root;
    for (TensorId c : chain) base[c] = root;
    return root;
  };

  // Concats laid out in place, in op order; a tensor is a slice of one
  // Concat at most (the first that takes it) and owns its memory.
  std::vector<bool> in_place_concat(graph.num_ops(), false);
  std::vector<OpId> concat_of(graph.num_tensors(), kNoOp);  // output -> its in-place Concat
  if (model.concat_in_place) {
    std::vector<bool> taken(graph.num_tensors(), false);
    for (OpId u = 0; u < graph.num_ops(); ++u) {
      if (!IsConcatInPlace(graph, u)) continue;
      const Op& op = graph.op(u);
      bool ok = true;
      for (TensorId t : op.inputs) ok = ok && !taken[t] && resolve(t) == t;
      if (!ok) continue;
      for (TensorId t : op.inputs) taken[t] = true;
      in_place_concat[u] = true;
      concat_of[op.outputs[0]] = u;
    }
  }

  for (OpId u = 0; u < graph.num_ops(); ++u) {
    if (in_place_concat[u]) continue;  // its output is its inputs' slices
    for (TensorId t : graph.op(u).outputs) {
      if (graph.tensor(t).is_weight) continue;
      if (resolve(t) == t) allocates_[u].push_back(new_buffer(t));
    }
  }
  // An in-place Concat's output (and its views) starts at its first slice.
  for (OpId u = 0; u < graph.num_ops(); ++u) {
    if (!in_place_concat[u]) continue;
    for (TensorId t : graph.op(u).inputs) concat_slices_[u].push_back(buffer_of_[t]);
    const TensorId out = graph.op(u).outputs[0];
    buffer_of_[out] = concat_slices_[u].front();
    buffers_[buffer_of_[out]].aliases.push_back(out);
  }
  for (TensorId t = 0; t < graph.num_tensors(); ++t) {
    if (graph.tensor(t).is_weight || buffer_of_[t] != kNoBuffer) continue;
    TensorId root = resolve(t);
    if (root == t || buffer_of_[root] == kNoBuffer) continue;  // unused tensor
    buffer_of_[t] = buffer_of_[root];
    buffers_[buffer_of_[root]].aliases.push_back(t);
  }

  for (OpId u = 0; u < graph.num_ops(); ++u) {
    const TensorId acc = AccumulatorOf(graph, u);
    for (TensorId t : graph.op(u).inputs) {
      if (buffer_of_[t] == kNoBuffer) continue;
      const OpId concat = concat_of[resolve(t)];
      std::vector<BufferId>& into = t == acc ? accumulates_into_[u] : reads_[u];
      if (concat != kNoOp) {
        // Reading an in-place Concat's output reads all of its slices.
        into.insert(into.end(), concat_slices_[concat].begin(), concat_slices_[concat].end());
      } else {
        into.push_back(buffer_of_[t]);
      }
    }
    std::sort(accumulates_into_[u].begin(), accumulates_into_[u].end());
    accumulates_into_[u].erase(std::unique(accumulates_into_[u].begin(), accumulates_into_[u].end()),
                               accumulates_into_[u].end());
    // The accumulator is read too.
    reads_[u].insert(reads_[u].end(), accumulates_into_[u].begin(), accumulates_into_[u].end());
    std::sort(reads_[u].begin(), reads_[u].end());
    reads_[u].erase(std::unique(reads_[u].begin(), reads_[u].end()), reads_[u].end());
    for (BufferId b : reads_[u]) buffers_[b].users.push_back(u);
  }
  for (ActivationBuffer& b : buffers_) {
    // users were appended in ascending op order, each op once.
    b.live_to_end = graph.tensor(b.tensor).is_graph_output;
    for (TensorId a : b.aliases) b.live_to_end = b.live_to_end || graph.tensor(a).is_graph_output;
    if (b.producer == kNoOp) input_bytes_ += b.bytes;
    if (b.producer == kNoOp && b.users.empty() && !b.live_to_end) unused_input_bytes_ += b.bytes;
  }
  // A Concat output that is a graph output (through its first slice's
  // aliases) keeps every slice to the end.
  std::vector<bool> output_live(graph.num_ops(), false);  // per in-place Concat
  for (TensorId t = 0; t < graph.num_tensors(); ++t) {
    if (!graph.tensor(t).is_graph_output || graph.tensor(t).is_weight) continue;
    const OpId concat = concat_of[resolve(t)];
    if (concat != kNoOp) output_live[concat] = true;
  }
  std::vector<bool> is_slice(buffers_.size(), false);
  for (OpId u = 0; u < graph.num_ops(); ++u) {
    for (BufferId b : concat_slices_[u]) {
      is_slice[b] = true;
      if (output_live[u]) buffers_[b].live_to_end = true;
    }
  }
  if (model.in_place) {
    for (OpId u = 0; u < graph.num_ops(); ++u) {
      if (!IsElementwiseOp(graph.op(u).type) || allocates_[u].size() != 1) continue;
      // A slice stays where its Concat needs it: never written over.
      if (is_slice[allocates_[u][0]]) continue;
      const ActivationBuffer& out = buffers_[allocates_[u][0]];
      if (out.bytes == 0) continue;
      for (TensorId t : graph.op(u).inputs) {
        const BufferId b = buffer_of_[t];
        if (b == kNoBuffer || is_slice[b]) continue;
        const ActivationBuffer& in = buffers_[b];
        if (in.bytes != out.bytes || in.producer == kNoOp || in.live_to_end) continue;
        if (std::find(in_place_inputs_[u].begin(), in_place_inputs_[u].end(), b) != in_place_inputs_[u].end()) continue;
        in_place_inputs_[u].push_back(b);
      }
      if (!in_place_inputs_[u].empty()) in_place_bytes_[u] = out.bytes;
    }
  }
}

MemoryTracker::MemoryTracker(const BufferModel& buffers)
    : model_(&buffers), remaining_users_(buffers.buffers().size()) {
  for (size_t b = 0; b < buffers.buffers().size(); ++b) {
    remaining_users_[b] = static_cast<int32_t>(buffers.buffers()[b].users.size());
  }
  live_ = buffers.resident_bytes() + buffers.input_bytes();
}

int64_t MemoryTracker::InPlaceSaving(OpId u) const {
  for (BufferId b : model_->in_place_inputs(u)) {
    if (remaining_users_[b] == 1) return model_->in_place_bytes(u);
  }
  return 0;
}

int64_t MemoryTracker::StepBytes(OpId u) const {
  int64_t bytes = live_ + model_->graph().op(u).workspace_bytes - InPlaceSaving(u);
  for (BufferId b : model_->allocates(u)) bytes += model_->buffers()[b].bytes;
  return bytes;
}

int64_t MemoryTracker::FreedBy(OpId u) const {
  const std::vector<ActivationBuffer>& buffers = model_->buffers();
  int64_t freed = 0;
  for (BufferId b : model_->reads(u)) {
    if (remaining_users_[b] == 1 && !buffers[b].live_to_end) freed += buffers[b].bytes;
  }
  for (BufferId b : model_->allocates(u)) {
    if (buffers[b].users.empty() && !buffers[b].live_to_end) freed += buffers[b].bytes;
  }
  if (steps_ == 0) freed += model_->unused_input_bytes();
  return freed;
}

int64_t MemoryTracker::BytesAfter(OpId u) const {
  int64_t bytes = live_ - FreedBy(u);
  for (BufferId b : model_->allocates(u)) bytes += model_->buffers()[b].bytes;
  return bytes;
}

int64_t MemoryTracker::Run(OpId u) {
  int64_t step = StepBytes(u);
  live_ = BytesAfter(u);
  for (BufferId b : model_->reads(u)) --remaining_users_[b];
  peak_ = std::max(peak_, step);
  ++steps_;
  return step;
}

}  // namespace serenity
