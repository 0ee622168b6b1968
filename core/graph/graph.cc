#include "core/graph/graph.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/graph/dtype.h"
#include "core/util/status_macros.h"

namespace serenity {
namespace {

void SortUnique(std::vector<int32_t>& ids) {
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
}

// Finds one cycle among the ops that Kahn's algorithm could not schedule
// (`stuck[u]` true) and returns it as "a -> b -> ... -> a".
std::string DescribeCycle(const std::vector<Op>& ops, const std::vector<bool>& stuck) {
  // Every stuck op has a stuck predecessor; walk predecessors until an op
  // repeats, then the ops from its first visit on form a cycle.
  OpId start = 0;
  while (!stuck[start]) ++start;
  std::vector<int> visited_at(ops.size(), -1);
  std::vector<OpId> walk;
  OpId u = start;
  while (visited_at[u] < 0) {
    visited_at[u] = static_cast<int>(walk.size());
    walk.push_back(u);
    for (OpId p : ops[u].predecessors) {
      if (stuck[p]) {
        u = p;
        break;
      }
    }
  }
  std::vector<std::string> names;
  // The walk follows edges backwards; reverse it to read in edge direction.
  for (size_t i = walk.size(); i-- > static_cast<size_t>(visited_at[u]);) {
    names.push_back(ops[walk[i]].name);
  }
  names.push_back(ops[walk.back()].name);
  return absl::StrJoin(names, " -> ");
}

}  // namespace

std::vector<TensorId> OwnWeights(const Graph& graph, OpId u) {
  std::vector<TensorId> out;
  for (TensorId t : graph.op(u).inputs) {
    const Tensor& tensor = graph.tensor(t);
    if (!tensor.is_weight || tensor.is_graph_output || tensor.consumers.size() != 1) continue;
    if (std::find(out.begin(), out.end(), t) == out.end()) out.push_back(t);
  }
  return out;
}

int64_t OwnWeightBytes(const Graph& graph, OpId u) {
  int64_t bytes = 0;
  for (TensorId t : OwnWeights(graph, u)) bytes += graph.tensor(t).bytes;
  return bytes;
}

namespace {

// An alternative that states weight_bytes replaces its op's own weights:
// the op must have some (primitive_weights.h).
absl::Status CheckPrimitiveWeights(const Graph& g) {
  for (OpId u = 0; u < g.num_ops(); ++u) {
    for (const Primitive& p : g.op(u).alternatives) {
      if (p.weight_bytes > 0 && OwnWeightBytes(g, u) == 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("op '", g.op(u).name, "' alternative '", p.name, "' has weight_bytes ", p.weight_bytes,
                         ", but the op has no weight bytes of its own for them to replace (its own weights: the weight "
                         "tensors it reads that no other op reads and that are not graph outputs)"));
      }
    }
  }
  return absl::OkStatus();
}

// The layout transforms (issue 19): named, distinct pairs, rates within
// kMaxTransformTimeUsPerMb and kMaxTransformBytesPerMb, and one for every
// conversion some choice of alternatives needs (a producer's stated layout
// to a consumer's). Adds each op's largest conversion workspace to
// `*all_bytes` (OutOfRange past 64 bits).
absl::Status CheckLayoutTransforms(const Graph& g, int64_t* all_bytes) {
  absl::flat_hash_set<std::pair<absl::string_view, absl::string_view>> pairs;
  for (const LayoutTransform& t : g.layout_transforms()) {
    const std::string what = absl::StrCat("layout transform from '", t.from, "' to '", t.to, "'");
    if (t.from.empty() || t.to.empty() || t.from == t.to) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": both layouts must be named and differ"));
    }
    if (!pairs.emplace(t.from, t.to).second) return absl::InvalidArgumentError(absl::StrCat(what, " is given twice"));
    if (!(t.time_us_per_mb >= 0 && t.time_us_per_mb <= kMaxTransformTimeUsPerMb)) {
      return absl::InvalidArgumentError(absl::StrCat(what, " has time_us_per_mb ", t.time_us_per_mb,
                                                     ": it must be a number from 0 to ", kMaxTransformTimeUsPerMb));
    }
    if (!(t.workspace_bytes_per_mb >= 0 && t.workspace_bytes_per_mb <= kMaxTransformBytesPerMb)) {
      return absl::InvalidArgumentError(absl::StrCat(what, " has workspace_bytes_per_mb ", t.workspace_bytes_per_mb,
                                                     ": it must be a number from 0 to ", kMaxTransformBytesPerMb));
    }
  }
  double rate = 0;
  for (const LayoutTransform& t : g.layout_transforms()) rate = std::max(rate, t.workspace_bytes_per_mb);
  const int64_t most = static_cast<int64_t>(std::ceil(rate / 1048576));
  const auto stated = [&](OpId u) {
    std::vector<absl::string_view> out;
    for (const Primitive& p : g.op(u).alternatives) {
      if (!p.layout.empty() && std::find(out.begin(), out.end(), p.layout) == out.end()) out.push_back(p.layout);
    }
    return out;
  };
  for (OpId v = 0; v < g.num_ops(); ++v) {
    const std::vector<absl::string_view> to = stated(v);
    if (to.empty()) continue;
    int64_t converted = 0;  // the bytes of v's inputs that may convert
    absl::flat_hash_set<TensorId> seen;
    for (TensorId t : g.op(v).inputs) {
      const OpId p = g.tensor(t).producer;
      if (p == kNoOp || !seen.insert(t).second) continue;
      const std::vector<absl::string_view> from = stated(p);
      for (absl::string_view a : from) {
        for (absl::string_view b : to) {
          if (a != b && !pairs.contains(std::make_pair(a, b))) {
            return absl::InvalidArgumentError(
                absl::StrCat("op '", g.op(v).name, "' may read in layout '", b, "' tensor '", g.tensor(t).name,
                             "', which op '", g.op(p).name, "' may write in layout '", a,
                             "', and layout_transforms has no transform from '", a, "' to '", b, "'"));
          }
        }
      }
      if (!from.empty()) converted += g.tensor(t).bytes;
    }
    // A conversion's copy is at most `most` bytes per byte, plus a margin
    // per input for rounding (up, and in doubles).
    int64_t workspace = 0;
    if (__builtin_mul_overflow(converted, most, &workspace) ||
        __builtin_add_overflow(workspace, 4096 * static_cast<int64_t>(g.op(v).inputs.size()), &workspace) ||
        __builtin_add_overflow(*all_bytes, workspace, all_bytes)) {
      return absl::OutOfRangeError(
          "the total size of all tensors, workspaces and layout conversions overflows 64 bits");
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Graph> Graph::Build(GraphSpec spec) {
  if (spec.ops.empty()) {
    return absl::InvalidArgumentError("graph has no ops");
  }
  Graph g;
  g.name_ = std::move(spec.name);

  // Tensors.
  g.tensors_.reserve(spec.tensors.size());
  for (TensorSpec& ts : spec.tensors) {
    if (ts.name.empty()) return absl::InvalidArgumentError("a tensor has an empty name");
    if (g.tensor_index_.contains(ts.name)) {
      return absl::InvalidArgumentError(absl::StrCat("tensor '", ts.name, "' is described twice"));
    }
    for (size_t i = 0; i < ts.shape.size(); ++i) {
      if (ts.shape[i] < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("tensor '", ts.name, "' has negative dimension ", ts.shape[i], " (dim ", i, ")"));
      }
    }
    if (ts.has_bytes && ts.bytes < 0) {
      return absl::InvalidArgumentError(absl::StrCat("tensor '", ts.name, "' has negative bytes ", ts.bytes));
    }
    Tensor t;
    if (ts.has_bytes || ts.bytes >= 0) {
      t.bytes = ts.bytes;
    } else {
      absl::StatusOr<int64_t> bytes = TensorBytes(ts.shape, ts.dtype);
      if (!bytes.ok()) {
        return absl::Status(bytes.status().code(), absl::StrCat("tensor '", ts.name, "': ", bytes.status().message()));
      }
      t.bytes = *bytes;
    }
    t.name = std::move(ts.name);
    t.shape = std::move(ts.shape);
    t.dtype = ts.dtype;
    t.is_weight = ts.is_weight;
    TensorId id = static_cast<TensorId>(g.tensors_.size());
    g.tensor_index_.emplace(t.name, id);
    g.tensors_.push_back(std::move(t));
  }
  // `role` names what the tensor is to the op named `of` (none: to the
  // graph), for the error only: no string is built on the way.
  auto lookup = [&g](const std::string& name, absl::string_view role,
                     absl::string_view of = {}) -> absl::StatusOr<TensorId> {
    auto it = g.tensor_index_.find(name);
    if (it == g.tensor_index_.end()) {
      return absl::InvalidArgumentError(absl::StrCat("tensor '", name, "' (", role,
                                                     of.empty() ? "" : absl::StrCat(" of op '", of, "'"),
                                                     ") has no size: it is not described"));
    }
    return it->second;
  };

  for (const std::string& name : spec.inputs) {
    absl::StatusOr<TensorId> id = lookup(name, "graph input");
    if (!id.ok()) return id.status();
    Tensor& t = g.tensors_[*id];
    if (t.is_weight) continue;  // initializers listed as inputs (old ONNX style)
    if (!t.is_graph_input) g.inputs_.push_back(*id);
    t.is_graph_input = true;
  }

  // Ops.
  g.ops_.reserve(spec.ops.size());
  for (OpSpec& os : spec.ops) {
    OpId id = static_cast<OpId>(g.ops_.size());
    if (os.name.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("op #", id, " has an empty name"));
    }
    if (g.op_index_.contains(os.name)) {
      return absl::InvalidArgumentError(absl::StrCat("two ops are named '", os.name, "'"));
    }
    if (os.workspace_bytes < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("op '", os.name, "' has negative workspace bytes ", os.workspace_bytes));
    }
    if (os.macs < 0) {
      return absl::InvalidArgumentError(absl::StrCat("op '", os.name, "' has negative macs ", os.macs));
    }
    if (os.alternatives.size() > kMaxAlternatives) {
      return absl::InvalidArgumentError(absl::StrCat("op '", os.name, "' has ", os.alternatives.size(),
                                                     " alternatives; an op takes at most ", kMaxAlternatives));
    }
    absl::flat_hash_set<absl::string_view> alternative_names;
    for (const Primitive& alternative : os.alternatives) {
      if (alternative.name.empty()) {
        return absl::InvalidArgumentError(absl::StrCat("op '", os.name, "' has an alternative without a name"));
      }
      if (!alternative_names.insert(alternative.name).second) {
        return absl::InvalidArgumentError(
            absl::StrCat("op '", os.name, "' has two alternatives named '", alternative.name, "'"));
      }
      if (!(alternative.time_us >= 0 && alternative.time_us <= kMaxPrimitiveTimeUs)) {
        return absl::InvalidArgumentError(absl::StrCat("op '", os.name, "' alternative '", alternative.name,
                                                       "' has time_us ", alternative.time_us,
                                                       ": it must be a number from 0 to ", kMaxPrimitiveTimeUs));
      }
      if (alternative.workspace_bytes < 0 || alternative.weight_bytes < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("op '", os.name, "' alternative '", alternative.name, "' has negative bytes"));
      }
    }
    Op op;
    op.alternatives = std::move(os.alternatives);
    op.name = std::move(os.name);
    op.type = std::move(os.type);
    op.workspace_bytes = os.workspace_bytes;
    op.macs = os.macs;
    for (const std::string& in : os.inputs) {
      if (in.empty()) continue;
      absl::StatusOr<TensorId> t = lookup(in, "input", op.name);
      if (!t.ok()) return t.status();
      op.inputs.push_back(*t);
    }
    for (const std::string& out : os.outputs) {
      if (out.empty()) continue;
      absl::StatusOr<TensorId> t = lookup(out, "output", op.name);
      if (!t.ok()) return t.status();
      Tensor& tensor = g.tensors_[*t];
      // Before the producer check: this op is not in ops_ yet, so a repeated
      // output must not reach g.ops_[tensor.producer].
      if (std::find(op.outputs.begin(), op.outputs.end(), *t) != op.outputs.end()) {
        return absl::InvalidArgumentError(absl::StrCat("op '", op.name, "' lists output '", tensor.name, "' twice"));
      }
      if (tensor.producer != kNoOp) {
        return absl::InvalidArgumentError(absl::StrCat("tensor '", tensor.name, "' is produced by both op '",
                                                       g.ops_[tensor.producer].name, "' and op '", op.name, "'"));
      }
      if (tensor.is_graph_input) {
        return absl::InvalidArgumentError(
            absl::StrCat("graph input '", tensor.name, "' is also produced by op '", op.name, "'"));
      }
      tensor.producer = id;
      op.outputs.push_back(*t);
    }
    g.op_index_.emplace(op.name, id);
    g.ops_.push_back(std::move(op));
  }

  // Consumers and edges.
  for (OpId id = 0; id < g.num_ops(); ++id) {
    Op& op = g.ops_[id];
    for (TensorId t : op.inputs) {
      Tensor& tensor = g.tensors_[t];
      if (tensor.producer == kNoOp && !tensor.is_graph_input && !tensor.is_weight) {
        return absl::InvalidArgumentError(absl::StrCat("tensor '", tensor.name, "' consumed by op '", op.name,
                                                       "' is never produced and is neither a graph input "
                                                       "nor a weight"));
      }
      tensor.consumers.push_back(id);
      if (tensor.producer != kNoOp) {
        op.predecessors.push_back(tensor.producer);
        g.ops_[tensor.producer].successors.push_back(id);
      }
    }
  }
  for (Tensor& t : g.tensors_) SortUnique(t.consumers);
  for (Op& op : g.ops_) {
    SortUnique(op.predecessors);
    SortUnique(op.successors);
  }

  for (const std::string& name : spec.outputs) {
    absl::StatusOr<TensorId> id = lookup(name, "graph output");
    if (!id.ok()) return id.status();
    Tensor& t = g.tensors_[*id];
    if (t.producer == kNoOp && !t.is_graph_input && !t.is_weight) {
      return absl::InvalidArgumentError(
          absl::StrCat("graph output '", name, "' is never produced and is not a graph input"));
    }
    if (!t.is_graph_output) g.outputs_.push_back(*id);
    t.is_graph_output = true;
  }
  g.layout_transforms_ = std::move(spec.layout_transforms);

  // Cycle check (Kahn).
  std::vector<int> indegree(g.ops_.size());
  std::vector<OpId> ready;
  for (OpId id = 0; id < g.num_ops(); ++id) {
    indegree[id] = static_cast<int>(g.ops_[id].predecessors.size());
    if (indegree[id] == 0) ready.push_back(id);
  }
  size_t done = 0;
  while (!ready.empty()) {
    OpId u = ready.back();
    ready.pop_back();
    ++done;
    for (OpId v : g.ops_[u].successors) {
      if (--indegree[v] == 0) ready.push_back(v);
    }
  }
  if (done != g.ops_.size()) {
    std::vector<bool> stuck(g.ops_.size());
    for (OpId id = 0; id < g.num_ops(); ++id) stuck[id] = indegree[id] > 0;
    return absl::InvalidArgumentError(absl::StrCat("graph has a cycle: ", DescribeCycle(g.ops_, stuck)));
  }

  // Totals, with overflow checks so later sums of live bytes cannot overflow.
  int64_t all_bytes = 0;
  for (const Tensor& t : g.tensors_) {
    if (__builtin_add_overflow(all_bytes, t.bytes, &all_bytes)) {
      return absl::OutOfRangeError("the total size of all tensors overflows 64 bits");
    }
    if (t.is_weight) g.weight_bytes_ += t.bytes;
  }
  for (const Op& op : g.ops_) {
    // Each op's largest workspace, its own or an alternative's: any choice
    // of alternatives keeps the sums of live bytes within 64 bits.
    // (And its largest transformed weights: they replace its own.)
    int64_t workspace = op.workspace_bytes;
    int64_t weights = 0;
    for (const Primitive& p : op.alternatives) {
      workspace = std::max(workspace, p.workspace_bytes);
      weights = std::max(weights, p.weight_bytes);
    }
    if (__builtin_add_overflow(all_bytes, workspace, &all_bytes) ||
        __builtin_add_overflow(all_bytes, weights, &all_bytes)) {
      return absl::OutOfRangeError("the total size of all tensors, workspaces and weights overflows 64 bits");
    }
    if (__builtin_add_overflow(g.total_macs_, op.macs, &g.total_macs_)) {
      return absl::OutOfRangeError("the total MAC count overflows 64 bits");
    }
  }
  RETURN_IF_ERROR(CheckLayoutTransforms(g, &all_bytes));
  RETURN_IF_ERROR(CheckPrimitiveWeights(g));
  return g;
}

std::optional<TensorId> Graph::FindTensor(absl::string_view name) const {
  auto it = tensor_index_.find(name);
  if (it == tensor_index_.end()) return std::nullopt;
  return it->second;
}

std::optional<OpId> Graph::FindOp(absl::string_view name) const {
  auto it = op_index_.find(name);
  if (it == op_index_.end()) return std::nullopt;
  return it->second;
}

Graph Graph::WithWorkspaces(const std::vector<int64_t>& workspace_bytes) const {
  Graph out = *this;
  for (size_t u = 0; u < out.ops_.size() && u < workspace_bytes.size(); ++u) {
    out.ops_[u].workspace_bytes = workspace_bytes[u];
  }
  return out;
}

Graph Graph::WithWeightTensorBytes(const std::vector<int64_t>& tensor_bytes) const {
  Graph out = *this;
  out.weight_bytes_ = 0;
  for (size_t t = 0; t < out.tensors_.size(); ++t) {
    Tensor& tensor = out.tensors_[t];
    if (!tensor.is_weight) continue;
    if (t < tensor_bytes.size()) tensor.bytes = tensor_bytes[t];
    out.weight_bytes_ += tensor.bytes;
  }
  return out;
}

absl::Status CheckOrder(const Graph& graph, const std::vector<OpId>& order) {
  if (static_cast<int>(order.size()) != graph.num_ops()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the order lists ", order.size(), " ops but the graph has ", graph.num_ops()));
  }
  std::vector<bool> done(graph.num_ops(), false);
  for (size_t t = 0; t < order.size(); ++t) {
    const OpId u = order[t];
    if (u < 0 || u >= graph.num_ops()) {
      return absl::InvalidArgumentError(
          absl::StrCat("position ", t, " of the order holds op index ", u, ", outside 0..", graph.num_ops() - 1));
    }
    if (done[u]) {
      return absl::InvalidArgumentError(absl::StrCat("op '", graph.op(u).name, "' appears twice in the order"));
    }
    for (OpId p : graph.op(u).predecessors) {
      if (!done[p]) {
        return absl::InvalidArgumentError(absl::StrCat("op '", graph.op(u).name, "' at position ", t, " runs before '",
                                                       graph.op(p).name, "', which produces its input"));
      }
    }
    done[u] = true;
  }
  return absl::OkStatus();
}

bool IsTopologicalOrder(const Graph& graph, const std::vector<OpId>& order) {
  if (static_cast<int>(order.size()) != graph.num_ops()) return false;
  std::vector<bool> done(graph.num_ops(), false);
  for (OpId u : order) {
    if (u < 0 || u >= graph.num_ops() || done[u]) return false;
    for (OpId p : graph.op(u).predecessors) {
      if (!done[p]) return false;
    }
    done[u] = true;
  }
  return true;
}

}  // namespace serenity
