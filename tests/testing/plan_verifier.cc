#include "tests/testing/plan_verifier.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"

namespace serenity::testing {
namespace {

bool IsView(const std::string& type) {
  return type == "Reshape" || type == "Flatten" || type == "Squeeze" || type == "Unsqueeze" || type == "Identity";
}

// Root tensor owning each tensor's memory (itself unless it is an aliasing
// view, or the output of a serenity::ConvAccumulate (X, W, ACC), which is
// written into ACC whatever the switches), by following producers.
TensorId Root(const Graph& g, TensorId t, bool alias_views) {
  while (true) {
    const Tensor& tensor = g.tensor(t);
    if (tensor.is_weight || tensor.producer == kNoOp) break;
    const Op& p = g.op(tensor.producer);
    const bool accumulates = p.type == "serenity::ConvAccumulate" && p.inputs.size() >= 3;
    if (!(accumulates || (alias_views && IsView(p.type))) || p.inputs.empty() || p.outputs.size() != 1) break;
    const TensorId next = accumulates ? p.inputs[2] : p.inputs[0];
    const Tensor& data = g.tensor(next);
    if (data.is_weight || data.bytes != tensor.bytes) break;
    t = next;
  }
  return t;
}

bool IsElementwise(const std::string& type) {
  static const char* const kTypes[] = {
      "Relu",      "LeakyRelu", "PRelu", "Elu", "Selu", "Sigmoid",  "HardSigmoid",
      "HardSwish", "Tanh",      "Clip",  "Add", "Sub",  "Mul",      "Div",
      "Neg",       "Abs",       "Exp",   "Log", "Sqrt", "Softplus", "BatchNormalization",
      "Dropout",   "Erf",       "Gelu"};
  for (const char* t : kTypes) {
    if (type == t) return true;
  }
  return false;
}

// Concats laid out in place under concat_in_place, as op -> inputs: checked
// from the graph alone, in op order, a tensor a slice of one Concat at most.
std::map<OpId, std::vector<TensorId>> InPlaceConcats(const Graph& g, bool alias_views) {
  std::map<OpId, std::vector<TensorId>> concats;
  std::vector<bool> sliced(g.num_tensors(), false);
  for (OpId u = 0; u < g.num_ops(); ++u) {
    const Op& op = g.op(u);
    if (op.type != "Concat" || op.outputs.size() != 1 || op.inputs.empty()) continue;
    const Tensor& out = g.tensor(op.outputs[0]);
    if (out.is_weight || out.shape.empty()) continue;
    bool ok = true;
    int64_t sum = 0;
    std::vector<int> differing;  // dims where some input differs from the output
    for (size_t i = 0; i < op.inputs.size() && ok; ++i) {
      const TensorId x = op.inputs[i];
      const Tensor& in = g.tensor(x);
      ok = !in.is_weight && in.producer != kNoOp && !in.is_graph_output && in.dtype == out.dtype &&
           g.op(in.producer).type != "Concat" && !sliced[x] && Root(g, x, alias_views) == x &&
           in.shape.size() == out.shape.size();
      for (size_t j = 0; j < i && ok; ++j) ok = op.inputs[j] != x;
      for (size_t d = 0; ok && d < out.shape.size(); ++d) {
        if (in.shape[d] != out.shape[d] &&
            std::find(differing.begin(), differing.end(), static_cast<int>(d)) == differing.end()) {
          differing.push_back(static_cast<int>(d));
        }
      }
      sum += in.bytes;
    }
    if (!ok || sum != out.bytes || differing.size() > 1) continue;
    if (!differing.empty()) {  // else each input is the whole output
      const int axis = differing[0];
      for (int d = 0; d < axis && ok; ++d) ok = out.shape[d] == 1;
      int64_t extent = 0;
      for (TensorId x : op.inputs) {
        if (g.tensor(x).shape[axis] > out.shape[axis] - extent) ok = false;
        if (ok) extent += g.tensor(x).shape[axis];
      }
      ok = ok && extent == out.shape[axis];
    }
    if (!ok) continue;
    for (TensorId x : op.inputs) sliced[x] = true;
    concats[u] = op.inputs;
  }
  return concats;
}

struct Lifetime {
  int64_t bytes = 0;
  int first = 0;
  int last = 0;
  bool output = false;  // some tensor sharing it is a graph output
};

// Lifetimes of every root activation tensor, by name; with in_place, an
// element-wise op's output joins the first same-sized input it reads last
// (not a graph input or output), and the pair keeps the input's name.
std::map<std::string, Lifetime> Lifetimes(const Graph& g, const std::vector<OpId>& order, bool alias_views,
                                          bool in_place, bool concat_in_place) {
  const int n = static_cast<int>(order.size());
  std::vector<int> step(g.num_ops());
  for (int t = 0; t < n; ++t) step[order[t]] = t;
  std::map<TensorId, std::vector<TensorId>> slices_of;  // in-place Concat output -> its inputs
  std::vector<bool> is_slice(g.num_tensors(), false);
  if (concat_in_place) {
    for (const auto& [u, inputs] : InPlaceConcats(g, alias_views)) {
      slices_of[g.op(u).outputs[0]] = inputs;
      for (TensorId x : inputs) is_slice[x] = true;
    }
  }
  std::map<std::string, Lifetime> out;
  for (TensorId t = 0; t < g.num_tensors(); ++t) {
    const Tensor& tensor = g.tensor(t);
    if (tensor.is_weight) continue;
    if (tensor.producer == kNoOp && !tensor.is_graph_input) continue;  // declared, unused
    TensorId root = Root(g, t, alias_views);
    if (auto it = slices_of.find(root); it != slices_of.end()) {
      // Reading the Concat's output (or a view of it) reads every slice.
      for (TensorId x : it->second) {
        Lifetime& life = out[g.tensor(x).name];
        for (OpId c : tensor.consumers) life.last = std::max(life.last, step[c]);
        if (tensor.is_graph_output) {
          life.last = n - 1;
          life.output = true;
        }
      }
      continue;
    }
    const Tensor& r = g.tensor(root);
    Lifetime& life = out[r.name];
    if (root == t) {
      life.bytes = r.bytes;
      life.first = r.producer == kNoOp ? 0 : step[r.producer];
      life.last = std::max(life.last, life.first);
    }
    for (OpId c : tensor.consumers) life.last = std::max(life.last, step[c]);
    if (tensor.is_graph_output) {
      life.last = n - 1;
      life.output = true;
    }
  }
  // A view may be visited before its root: recompute first from the root.
  for (auto& [name, life] : out) {
    const Tensor& r = g.tensor(*g.FindTensor(name));
    life.first = r.producer == kNoOp ? 0 : step[r.producer];
    life.last = std::max(life.last, life.first);
  }
  if (!in_place) return out;
  std::map<std::string, std::string> joined;  // member -> the name it joined
  auto find = [&joined](std::string name) {
    while (joined.count(name)) name = joined[name];
    return name;
  };
  for (int t = 0; t < n; ++t) {
    const Op& op = g.op(order[t]);
    if (!IsElementwise(op.type)) continue;
    std::vector<TensorId> own;
    for (TensorId o : op.outputs) {
      if (!g.tensor(o).is_weight && Root(g, o, alias_views) == o) own.push_back(o);
    }
    if (own.size() != 1 || g.tensor(own[0]).bytes == 0 || is_slice[own[0]]) continue;
    const Tensor& result = g.tensor(own[0]);
    std::vector<TensorId> seen;
    for (TensorId in : op.inputs) {
      if (g.tensor(in).is_weight) continue;
      const TensorId r = Root(g, in, alias_views);
      if (std::find(seen.begin(), seen.end(), r) != seen.end() || slices_of.count(r) > 0) continue;
      seen.push_back(r);
      const Tensor& base = g.tensor(r);
      const Lifetime& life = out.at(base.name);
      if (base.bytes != result.bytes || base.producer == kNoOp || life.output || life.last != t || is_slice[r]) {
        continue;
      }
      joined[result.name] = base.name;
      break;
    }
  }
  std::map<std::string, Lifetime> merged;
  for (const auto& [name, life] : out) {
    const std::string group = find(name);
    auto [it, fresh] = merged.emplace(group, out.at(group));
    it->second.first = std::min(it->second.first, life.first);
    it->second.last = std::max(it->second.last, life.last);
  }
  return merged;
}

}  // namespace

int64_t NaivePeak(const Graph& graph, const std::vector<OpId>& order, bool alias_views, bool count_weights,
                  bool in_place, bool concat_in_place) {
  std::map<std::string, Lifetime> lifetimes = Lifetimes(graph, order, alias_views, in_place, concat_in_place);
  int64_t peak = 0;
  for (int t = 0; t < static_cast<int>(order.size()); ++t) {
    int64_t live = graph.op(order[t]).workspace_bytes + (count_weights ? graph.weight_bytes() : 0);
    for (const auto& [name, life] : lifetimes) {
      if (life.first <= t && t <= life.last) live += life.bytes;
    }
    peak = std::max(peak, live);
  }
  return peak;
}

absl::Status VerifyPlan(const Graph& graph, const v1::Plan& plan) {
  const int n = graph.num_ops();
  if (plan.order_size() != n || plan.nodes() != n) {
    return absl::FailedPreconditionError(absl::StrCat("order has ", plan.order_size(), " ops, graph ", n));
  }
  std::vector<OpId> order(plan.order().begin(), plan.order().end());
  std::vector<bool> done(n, false);
  for (int t = 0; t < n; ++t) {
    OpId u = order[t];
    if (u < 0 || u >= n || done[u]) return absl::FailedPreconditionError(absl::StrCat("bad op index at step ", t));
    for (TensorId in : graph.op(u).inputs) {
      OpId p = graph.tensor(in).producer;
      if (p != kNoOp && !done[p]) {
        return absl::FailedPreconditionError(
            absl::StrCat("op '", graph.op(u).name, "' runs before its input's producer '", graph.op(p).name, "'"));
      }
    }
    if (plan.order_names(t) != graph.op(u).name) {
      return absl::FailedPreconditionError(absl::StrCat("order_names[", t, "] does not match order"));
    }
    done[u] = true;
  }

  const bool alias = plan.memory_model().alias_views();
  const bool weights = plan.memory_model().count_weights();
  const bool in_place = plan.memory_model().in_place();
  const bool concat_in_place = plan.memory_model().concat_in_place();
  const int64_t peak = NaivePeak(graph, order, alias, weights, in_place, concat_in_place);
  if (plan.peak_bytes() != peak) {
    return absl::FailedPreconditionError(
        absl::StrCat("reported peak ", plan.peak_bytes(), " but re-simulation gives ", peak));
  }
  if (plan.lower_bound_bytes() > peak) {
    return absl::FailedPreconditionError(
        absl::StrCat("lower bound ", plan.lower_bound_bytes(), " exceeds peak ", peak));
  }
  // A plan that skipped or cut short the baselines' arenas (for time or
  // memory) says so; the skipped ones are 0.
  bool baseline_arenas_skipped = false;
  for (const v1::PhaseFallback& fallback : plan.fallbacks()) {
    baseline_arenas_skipped |= fallback.phase() == "baseline_arenas";
  }
  for (const v1::OrderSummary* s :
       {&plan.baselines().file_order(), &plan.baselines().kahn(), &plan.baselines().greedy(),
        &plan.baselines().inductor(), &plan.baselines().xla()}) {
    if (s->peak_bytes() < plan.lower_bound_bytes()) {
      return absl::FailedPreconditionError("a baseline beats the lower bound");
    }
    if (baseline_arenas_skipped && s->arena_bytes() == 0 && s->arena_bytes_ours() == 0) continue;
    // Ours is at most TFLite's unless the fallback cut our placements short.
    if (s->arena_bytes() < s->peak_bytes() || s->arena_bytes_ours() < s->peak_bytes() ||
        (!baseline_arenas_skipped && s->arena_bytes_ours() > s->arena_bytes())) {
      return absl::FailedPreconditionError(
          "a baseline beats the lower bound, an arena is below its peak, or ours exceeds TFLite's");
    }
  }

  // Every live activation, workspace and counted weight needs a buffer.
  const v1::Arena& arena = plan.arena();
  std::map<std::string, const v1::ArenaBuffer*> tensor_buffers, workspace_buffers, weight_buffers;
  for (const v1::ArenaBuffer& b : arena.buffers()) {
    auto& index = b.kind() == v1::BUFFER_KIND_WORKSPACE ? workspace_buffers
                  : b.kind() == v1::BUFFER_KIND_WEIGHT  ? weight_buffers
                                                        : tensor_buffers;
    if (!index.emplace(b.tensor(), &b).second) {
      return absl::FailedPreconditionError(absl::StrCat("two buffers for '", b.tensor(), "'"));
    }
  }
  auto covers = [](const v1::ArenaBuffer* b, int64_t bytes, int first, int last) {
    return b != nullptr && b->size() == bytes && b->first_step() <= first && b->last_step() >= last;
  };
  for (const auto& [name, life] : Lifetimes(graph, order, alias, in_place, concat_in_place)) {
    auto it = tensor_buffers.find(name);
    if (!covers(it == tensor_buffers.end() ? nullptr : it->second, life.bytes, life.first, life.last)) {
      return absl::FailedPreconditionError(
          absl::StrCat("tensor '", name, "' has no buffer covering steps ", life.first, "..", life.last));
    }
  }
  for (int t = 0; t < n; ++t) {
    const Op& op = graph.op(order[t]);
    if (op.workspace_bytes == 0) continue;
    auto it = workspace_buffers.find(op.name);
    if (!covers(it == workspace_buffers.end() ? nullptr : it->second, op.workspace_bytes, t, t)) {
      return absl::FailedPreconditionError(absl::StrCat("op '", op.name, "' has no workspace buffer"));
    }
  }
  if (weights) {
    for (const Tensor& w : graph.tensors()) {
      if (!w.is_weight) continue;
      auto it = weight_buffers.find(w.name);
      if (!covers(it == weight_buffers.end() ? nullptr : it->second, w.bytes, 0, n - 1)) {
        return absl::FailedPreconditionError(absl::StrCat("weight '", w.name, "' has no resident buffer"));
      }
    }
  }

  // In-place Concats: the output has no buffer of its own but starts at its
  // first slice, and the slices follow each other back to back (checked
  // below at every step where they are all live).
  std::set<std::string> later_slices;
  std::vector<std::vector<std::string>> slice_groups;  // slice names in order
  if (concat_in_place) {
    for (const auto& [u, inputs] : InPlaceConcats(graph, alias)) {
      const std::string& out_name = graph.tensor(graph.op(u).outputs[0]).name;
      auto first = tensor_buffers.find(graph.tensor(inputs[0]).name);
      if (tensor_buffers.count(out_name) > 0 || first == tensor_buffers.end() ||
          std::find(first->second->aliases().begin(), first->second->aliases().end(), out_name) ==
              first->second->aliases().end()) {
        return absl::FailedPreconditionError(
            absl::StrCat("the in-place Concat output '", out_name, "' is not laid out at its first slice"));
      }
      slice_groups.push_back({graph.tensor(inputs[0]).name});
      int64_t within = first->second->size();
      for (size_t j = 1; j < inputs.size(); ++j) {
        const std::string& name = graph.tensor(inputs[j]).name;
        auto it = tensor_buffers.find(name);
        if (it == tensor_buffers.end() || it->second->slice_of() != out_name || it->second->slice_offset() != within) {
          return absl::FailedPreconditionError(
              absl::StrCat("slice '", name, "' does not say it is byte ", within, " of '", out_name, "'"));
        }
        later_slices.insert(name);
        slice_groups.back().push_back(name);
        within += it->second->size();
      }
    }
  }
  auto misaligned = [&](const v1::ArenaBuffer& a, int64_t at) {
    const bool free = a.kind() != v1::BUFFER_KIND_TENSOR || later_slices.count(a.tensor()) == 0;
    return at < 0 || (free && at % arena.alignment() != 0);
  };

  // Offsets: aligned, inside the arena, no overlap among co-live buffers;
  // with defragmentation moves, at every step, with the moves applied.
  if (arena.alignment() < 1) return absl::FailedPreconditionError("alignment below 1");
  // (kind, tensor or op name) -> buffer
  std::map<std::pair<int, std::string>, int> buffer_index;
  for (int i = 0; i < arena.buffers_size(); ++i) {
    buffer_index[{arena.buffers(i).kind(), arena.buffers(i).tensor()}] = i;
  }
  std::vector<std::vector<int64_t>> offset_at(n);  // [step][buffer]
  {
    std::vector<int64_t> current;
    for (const v1::ArenaBuffer& b : arena.buffers()) current.push_back(b.offset());
    int next_move = 0;
    int64_t moved = 0;
    for (int t = 0; t < n; ++t) {
      for (; next_move < plan.moves_size() && plan.moves(next_move).before_step() == t; ++next_move) {
        const v1::Move& m = plan.moves(next_move);
        auto it = buffer_index.find({m.kind(), m.tensor()});
        if (it == buffer_index.end()) return absl::FailedPreconditionError("a move names no buffer");
        const v1::ArenaBuffer& b = arena.buffers(it->second);
        if (!(b.first_step() < t && t <= b.last_step()) || m.from_offset() != current[it->second] ||
            m.bytes() != b.size()) {
          return absl::FailedPreconditionError(absl::StrCat("the move of '", m.tensor(), "' before step ", t,
                                                            " is outside its lifetime or not where it is"));
        }
        for (int j = 0; j < arena.buffers_size(); ++j) {
          const v1::ArenaBuffer& o = arena.buffers(j);
          const bool across = o.first_step() < t && t <= o.last_step();
          if (j != it->second && across && o.size() > 0 && b.size() > 0 && m.to_offset() < current[j] + o.size() &&
              current[j] < m.to_offset() + b.size()) {
            return absl::FailedPreconditionError(
                absl::StrCat("the move of '", m.tensor(), "' lands on '", o.tensor(), "'"));
          }
        }
        current[it->second] = m.to_offset();
        moved += m.bytes();
      }
      offset_at[t] = current;
    }
    if (next_move != plan.moves_size()) return absl::FailedPreconditionError("moves out of step order");
    if (moved != plan.moved_bytes()) return absl::FailedPreconditionError("moved_bytes is not the moves' total");
  }
  for (const std::vector<std::string>& group : slice_groups) {
    std::vector<int> index;
    for (const std::string& name : group) index.push_back(buffer_index.at({v1::BUFFER_KIND_TENSOR, name}));
    for (int t = 0; t < n; ++t) {
      bool all_live = true;
      for (int i : index)
        all_live = all_live && arena.buffers(i).first_step() <= t && t <= arena.buffers(i).last_step();
      if (!all_live) continue;
      for (size_t j = 1; j < index.size(); ++j) {
        const int64_t expected = offset_at[t][index[j - 1]] + arena.buffers(index[j - 1]).size();
        if (offset_at[t][index[j]] != expected) {
          return absl::FailedPreconditionError(absl::StrCat("slice '", group[j], "' is not at ", expected, " at step ",
                                                            t, ", right after '", group[j - 1], "'"));
        }
      }
    }
  }
  for (int t = 0; t < n && plan.moves_size() > 0; ++t) {
    std::vector<int> live;
    for (int i = 0; i < arena.buffers_size(); ++i) {
      const v1::ArenaBuffer& a = arena.buffers(i);
      if (a.first_step() > t || a.last_step() < t) continue;
      const int64_t at = offset_at[t][i];
      if (misaligned(a, at) || at + a.size() > arena.size_bytes()) {
        return absl::FailedPreconditionError(
            absl::StrCat("buffer '", a.tensor(), "' is misaligned or outside the arena"));
      }
      for (int j : live) {
        const v1::ArenaBuffer& b = arena.buffers(j);
        if (a.size() > 0 && b.size() > 0 && at < offset_at[t][j] + b.size() && offset_at[t][j] < at + a.size()) {
          return absl::FailedPreconditionError(
              absl::StrCat("buffers '", a.tensor(), "' and '", b.tensor(), "' overlap at step ", t));
        }
      }
      live.push_back(i);
    }
  }
  for (int i = 0; i < arena.buffers_size() && plan.moves_size() == 0; ++i) {
    const v1::ArenaBuffer& a = arena.buffers(i);
    if (misaligned(a, a.offset()) || a.offset() + a.size() > arena.size_bytes()) {
      return absl::FailedPreconditionError(
          absl::StrCat("buffer '", a.tensor(), "' is misaligned or outside the arena"));
    }
    for (int j = 0; j < i; ++j) {
      const v1::ArenaBuffer& b = arena.buffers(j);
      bool co_live = a.first_step() <= b.last_step() && b.first_step() <= a.last_step();
      bool overlap = a.offset() < b.offset() + b.size() && b.offset() < a.offset() + a.size();
      if (co_live && overlap && a.size() > 0 && b.size() > 0) {
        return absl::FailedPreconditionError(
            absl::StrCat("buffers '", a.tensor(), "' and '", b.tensor(), "' are live together and overlap"));
      }
    }
  }
  // The per-step view names each step's op and the offsets of its buffers.
  if (plan.steps_size() > 0) {
    if (plan.steps_size() != n) return absl::FailedPreconditionError("steps do not match the order");
    for (int t = 0; t < n; ++t) {
      std::map<std::string, int64_t> offset_of;
      for (int i = 0; i < arena.buffers_size(); ++i) {
        const v1::ArenaBuffer& b = arena.buffers(i);
        if (b.kind() == v1::BUFFER_KIND_WORKSPACE) continue;
        offset_of[b.tensor()] = offset_at[t][i];
        for (const std::string& a : b.aliases()) offset_of[a] = offset_at[t][i];
      }
      const v1::Step& step = plan.steps(t);
      const Op& op = graph.op(order[t]);
      if (step.op() != op.name) return absl::FailedPreconditionError(absl::StrCat("step ", t, " names the wrong op"));
      for (const auto* list : {&step.inputs(), &step.outputs()}) {
        for (const v1::TensorPlacement& p : *list) {
          auto it = offset_of.find(p.tensor());
          if (it == offset_of.end() || it->second != p.offset()) {
            return absl::FailedPreconditionError(
                absl::StrCat("step ", t, " places '", p.tensor(), "' away from its arena buffer"));
          }
        }
      }
      size_t activations = 0;
      for (TensorId in : op.inputs) activations += graph.tensor(in).is_weight && !weights ? 0 : 1;
      if (static_cast<size_t>(step.inputs_size()) > activations || step.workspace().size() != op.workspace_bytes) {
        return absl::FailedPreconditionError(absl::StrCat("step ", t, " lists the wrong inputs or workspace"));
      }
      if (op.workspace_bytes > 0) {
        auto ws = workspace_buffers.find(op.name);
        if (ws == workspace_buffers.end() ||
            offset_at[t][buffer_index[{v1::BUFFER_KIND_WORKSPACE, op.name}]] != step.workspace().offset()) {
          return absl::FailedPreconditionError(absl::StrCat("step ", t, " has the wrong workspace offset"));
        }
      }
    }
  }
  if (arena.tflite_size_bytes() != 0 && arena.size_bytes() > arena.tflite_size_bytes()) {
    return absl::FailedPreconditionError("the plan's arena is larger than the TFLite-style planner's");
  }
  if (arena.size_bytes() < peak) {
    return absl::FailedPreconditionError(absl::StrCat("arena ", arena.size_bytes(), " below peak ", peak));
  }
  return VerifyMemories(graph, plan);
}

absl::Status VerifyMemories(const Graph& graph, const v1::Plan& plan) {
  if (plan.memories_size() == 0) return absl::OkStatus();
  // Each arena row in exactly one memory, with the same kind, size and steps.
  std::map<std::pair<int, std::string>, int> placed;  // (kind, tensor) -> memory
  for (int m = 0; m < plan.memories_size(); ++m) {
    const v1::MemoryPlacement& memory = plan.memories(m);
    if (memory.alignment() < 1 || memory.capacity_bytes() < 1) {
      return absl::FailedPreconditionError(absl::StrCat("memory '", memory.name(), "' has no capacity or alignment"));
    }
    int64_t byte_steps = 0, end = 0, access = 0;
    for (int i = 0; i < memory.buffers_size(); ++i) {
      const v1::ArenaBuffer& a = memory.buffers(i);
      // Access bytes from the graph: a workspace is written and read once;
      // a weight read by each reader; a tensor written by its producer and
      // by each non-view op writing into it, and read once by each op
      // reading it or a tensor sharing it.
      int64_t touches = 2;
      if (a.kind() != v1::BUFFER_KIND_WORKSPACE) {
        std::vector<std::string> names = {a.tensor()};
        names.insert(names.end(), a.aliases().begin(), a.aliases().end());
        std::set<OpId> readers;
        int64_t writes = a.kind() == v1::BUFFER_KIND_WEIGHT ? 0 : 1;
        for (const std::string& name : names) {
          const std::optional<TensorId> t = graph.FindTensor(name);
          if (!t.has_value()) return absl::FailedPreconditionError(absl::StrCat("no tensor '", name, "'"));
          readers.insert(graph.tensor(*t).consumers.begin(), graph.tensor(*t).consumers.end());
          const OpId producer = graph.tensor(*t).producer;
          if (name != a.tensor() && producer != kNoOp && !IsView(graph.op(producer).type)) ++writes;
        }
        touches = writes + static_cast<int64_t>(readers.size());
      }
      access += a.size() * touches;
      if (!placed.emplace(std::make_pair(static_cast<int>(a.kind()), a.tensor()), m).second) {
        return absl::FailedPreconditionError(absl::StrCat("buffer '", a.tensor(), "' is placed twice"));
      }
      if (a.offset() < 0 || a.offset() % memory.alignment() != 0 || a.offset() + a.size() > memory.capacity_bytes()) {
        return absl::FailedPreconditionError(
            absl::StrCat("buffer '", a.tensor(), "' is misaligned or outside '", memory.name(), "'"));
      }
      byte_steps += a.size() * (a.last_step() - a.first_step() + 1);
      if (a.size() > 0) end = std::max(end, a.offset() + a.size());
      for (int j = 0; j < i; ++j) {
        const v1::ArenaBuffer& b = memory.buffers(j);
        const bool co_live = a.first_step() <= b.last_step() && b.first_step() <= a.last_step();
        const bool overlap = a.offset() < b.offset() + b.size() && b.offset() < a.offset() + a.size();
        if (co_live && overlap && a.size() > 0 && b.size() > 0) {
          return absl::FailedPreconditionError(absl::StrCat("buffers '", a.tensor(), "' and '", b.tensor(),
                                                            "' are live together and overlap in '", memory.name(),
                                                            "'"));
        }
      }
    }
    if (byte_steps != memory.byte_steps() || end != memory.arena_bytes() ||
        memory.byte_steps() > memory.byte_steps_bound() || access != memory.access_bytes()) {
      return absl::FailedPreconditionError(
          absl::StrCat("memory '", memory.name(), "' states the wrong byte-steps, arena, bound or access bytes"));
    }
  }
  for (const v1::ArenaBuffer& a : plan.arena().buffers()) {
    auto it = placed.find({static_cast<int>(a.kind()), a.tensor()});
    if (it == placed.end()) {
      return absl::FailedPreconditionError(absl::StrCat("buffer '", a.tensor(), "' is in no memory"));
    }
    for (const v1::ArenaBuffer& b : plan.memories(it->second).buffers()) {
      if (b.kind() == a.kind() && b.tensor() == a.tensor() &&
          (b.size() != a.size() || b.first_step() != a.first_step() || b.last_step() != a.last_step())) {
        return absl::FailedPreconditionError(absl::StrCat("buffer '", a.tensor(), "' differs from its arena row"));
      }
    }
  }
  if (placed.size() != static_cast<size_t>(plan.arena().buffers_size())) {
    return absl::FailedPreconditionError("a memory holds a buffer the arena does not have");
  }
  return absl::OkStatus();
}

}  // namespace serenity::testing
