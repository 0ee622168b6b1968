#include "core/graph/canonical_graph.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <numeric>
#include <set>
#include <tuple>
#include <utility>

#include "absl/container/flat_hash_map.h"

namespace serenity {
namespace {

// splitmix64's finalizer: a stable 64-bit mix.
uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

uint64_t Combine(uint64_t seed, uint64_t value) { return Mix(seed ^ Mix(value)); }

constexpr uint64_t kFnvBasis = 0xcbf29ce484222325ULL;
constexpr uint64_t kFnvPrime = 0x100000001b3ULL;

// FNV-1a over the bytes from a seeded basis, then mixed with the length.
uint64_t HashBytes(absl::string_view bytes, uint64_t seed) {
  uint64_t h = seed ^ kFnvBasis;
  for (unsigned char c : bytes) h = (h ^ c) * kFnvPrime;
  return Mix(h ^ bytes.size());
}

uint64_t Flags(const Tensor& t) {
  return (t.is_weight ? 1u : 0u) | (t.is_graph_input ? 2u : 0u) | (t.is_graph_output ? 4u : 0u);
}

// Everything about a tensor but its name and its edges.
uint64_t TensorLabel(const Tensor& t) {
  uint64_t h = Combine(0x7465, static_cast<uint64_t>(t.dtype));
  h = Combine(h, static_cast<uint64_t>(t.bytes));
  h = Combine(h, t.shape.size());
  for (int64_t d : t.shape) h = Combine(h, static_cast<uint64_t>(d));
  return Combine(h, Flags(t));
}

// Appends `value` to `out` as 8 little-endian bytes.
void Put(std::string* out, uint64_t value) {
  char bytes[8];
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>((value >> (8 * i)) & 0xff);
  out->append(bytes, 8);
}

void PutString(std::string* out, const std::string& s) {
  Put(out, s.size());
  out->append(s);
}

// Salts that keep the parts of a colour or signature apart.
constexpr uint64_t kOpSalt = 0x6f70;
constexpr uint64_t kTensorSalt = 0x7465;
constexpr uint64_t kProducedSalt = 0x70726f64;
constexpr uint64_t kSourceSalt = 0x737263;
constexpr uint64_t kOpSignatureSalt = 0x726566;
constexpr uint64_t kIndividualSalt = 0x696e646976ULL;

// Colour refinement on the bipartite graph of ops and tensors. A tensor's
// signature is its producer's (colour, output slot) and the multiset of its
// readers' (colour, input slot); an op's is its input tensors' colours in
// slot order and its output tensors' colours in slot order. A cell (the
// nodes of one colour) whose members' signatures differ splits: members
// whose signature differs from the cell's get colour
// hash(old colour, signature, step number). Only neighbours of recoloured
// nodes are looked at again, so a step costs what it changes, and a cell
// that does not split keeps its colour.
//
// Every colour is a hash of names-free facts, and every decision (which
// nodes to look at, whether a cell splits, which op to individualize)
// depends only on colours, signatures and cell sizes, never on ids or list
// order: the colours of two isomorphic graphs correspond.
class Canonicalizer {
 public:
  explicit Canonicalizer(const Graph& graph) : graph_(graph), n_(graph.num_ops()), m_(graph.num_tensors()) {
    output_slot_.assign(m_, -1);
    for (OpId u = 0; u < n_; ++u) {
      const Op& op = graph.op(u);
      for (size_t k = 0; k < op.outputs.size(); ++k) output_slot_[op.outputs[k]] = static_cast<int>(k);
    }
    // Every (reader, input slot) of each tensor, as one flat array.
    reader_begin_.assign(m_ + 1, 0);
    for (const Op& op : graph.ops()) {
      for (TensorId t : op.inputs) ++reader_begin_[t + 1];
    }
    std::partial_sum(reader_begin_.begin(), reader_begin_.end(), reader_begin_.begin());
    readers_.resize(reader_begin_[m_]);
    std::vector<int> fill(reader_begin_.begin(), reader_begin_.end() - 1);
    for (OpId u = 0; u < n_; ++u) {
      const Op& op = graph.op(u);
      for (size_t k = 0; k < op.inputs.size(); ++k) readers_[fill[op.inputs[k]]++] = {u, static_cast<int>(k)};
    }
    seen_.assign(n_ + m_, 0);
  }

  CanonicalGraph Run() {
    InitialColours();
    // Refine from scratch: every tensor, then every op, then whatever
    // changed.
    std::vector<int> all_tensors(m_), all_ops(n_);
    std::iota(all_tensors.begin(), all_tensors.end(), n_);
    std::iota(all_ops.begin(), all_ops.end(), 0);
    Split(all_tensors, /*ops=*/false);
    Propagate(Split(all_ops, /*ops=*/true));
    // Individualize until every op has a colour of its own: the first op
    // (lowest OpId) of the smallest tied cell (the first in colour order
    // among equally small ones) gets a fresh colour, and refinement spreads
    // the news. Which member is picked does not matter when the members are
    // automorphic; refinement seldom leaves other ties.
    for (int step = 0; !tied_ops_.empty() && step <= n_; ++step) {
      const uint64_t tied = tied_ops_.begin()->second;
      OpId pick = 0;
      while (colour_[pick] != tied) ++pick;
      Recolour(pick, Combine(Combine(tied, kIndividualSalt), ++generation_));
      Propagate({pick});
    }
    // Colours now differ (barring 64-bit collisions, where OpIds decide).
    std::vector<OpId> order(n_);
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(),
              [&](OpId a, OpId b) { return std::tie(colour_[a], a) < std::tie(colour_[b], b); });
    return Serialize(std::move(order));
  }

 private:
  struct Cell {
    int size = 0;
    bool signature_known = false;
    uint64_t signature = 0;  // of every member, when known
  };

  // Ops: type, sizes, the labels of their tensors, and the longest path from
  // a source and to a sink (refinement finds those too, but only after as
  // many steps as the graph is deep). Tensors: their labels.
  void InitialColours() {
    const std::vector<OpId> topo = TopologicalOrder();
    std::vector<uint64_t> depth(n_, 0), height(n_, 0);
    for (OpId u : topo) {
      for (OpId v : graph_.op(u).successors) depth[v] = std::max(depth[v], depth[u] + 1);
    }
    for (auto it = topo.rbegin(); it != topo.rend(); ++it) {
      for (OpId v : graph_.op(*it).successors) height[*it] = std::max(height[*it], height[v] + 1);
    }
    std::vector<uint64_t> label(m_);
    for (TensorId t = 0; t < m_; ++t) label[t] = TensorLabel(graph_.tensor(t));
    colour_.resize(n_ + m_);
    for (OpId u = 0; u < n_; ++u) {
      const Op& op = graph_.op(u);
      uint64_t h = HashBytes(op.type, kOpSalt);
      h = Combine(h, static_cast<uint64_t>(op.workspace_bytes));
      h = Combine(h, static_cast<uint64_t>(op.macs));
      h = Combine(h, op.inputs.size());
      for (TensorId t : op.inputs) h = Combine(h, label[t]);
      h = Combine(h, op.outputs.size());
      for (TensorId t : op.outputs) h = Combine(h, label[t]);
      h = Combine(h, depth[u]);
      colour_[u] = Combine(h, height[u]);
    }
    for (TensorId t = 0; t < m_; ++t) colour_[n_ + t] = Combine(label[t], kTensorSalt);
    for (OpId u = 0; u < n_; ++u) ++op_cells_[colour_[u]].size;
    for (const auto& [colour, cell] : op_cells_) {
      if (cell.size > 1) tied_ops_.insert({cell.size, colour});
    }
    for (TensorId t = 0; t < m_; ++t) ++tensor_cells_[colour_[n_ + t]].size;
    reader_sum_.assign(m_, 0);
    for (OpId u = 0; u < n_; ++u) {
      const Op& op = graph_.op(u);
      for (size_t k = 0; k < op.inputs.size(); ++k) reader_sum_[op.inputs[k]] += ReaderTerm(colour_[u], k);
    }
  }

  // Kahn's algorithm; the graph is a validated DAG.
  std::vector<OpId> TopologicalOrder() const {
    std::vector<int> pending(n_);
    std::vector<OpId> order;
    order.reserve(n_);
    for (OpId u = 0; u < n_; ++u) {
      pending[u] = static_cast<int>(graph_.op(u).predecessors.size());
      if (pending[u] == 0) order.push_back(u);
    }
    for (size_t i = 0; i < order.size(); ++i) {
      for (OpId v : graph_.op(order[i]).successors) {
        if (--pending[v] == 0) order.push_back(v);
      }
    }
    return order;
  }

  // A tensor's readers enter its signature as a sum of these, a multiset
  // hash that is updated in O(1) when one reader is recoloured.
  static uint64_t ReaderTerm(uint64_t reader_colour, size_t slot) { return Combine(reader_colour, slot); }

  uint64_t Signature(int node) const {
    if (node < n_) {
      const Op& op = graph_.op(node);
      uint64_t h = kOpSignatureSalt;
      for (TensorId t : op.inputs) h = Combine(h, colour_[n_ + t]);
      h = Combine(h, op.outputs.size());
      for (TensorId t : op.outputs) h = Combine(h, colour_[n_ + t]);
      return h;
    }
    const TensorId t = node - n_;
    const OpId p = graph_.tensor(t).producer;
    const uint64_t h =
        p == kNoOp ? kSourceSalt : Combine(Combine(kProducedSalt, colour_[p]), static_cast<uint64_t>(output_slot_[t]));
    return Combine(h, reader_sum_[t]);
  }

  // Moves `node` to the cell of `colour`, keeping cell sizes, the tied op
  // cells and the reader sums of an op's inputs up to date.
  void Recolour(int node, uint64_t colour) {
    const uint64_t old = colour_[node];
    colour_[node] = colour;
    if (node >= n_) {
      if (--tensor_cells_[old].size == 0) tensor_cells_.erase(old);
      ++tensor_cells_[colour].size;
      return;
    }
    const Op& op = graph_.op(node);
    for (size_t k = 0; k < op.inputs.size(); ++k) {
      reader_sum_[op.inputs[k]] += ReaderTerm(colour, k) - ReaderTerm(old, k);
    }
    for (auto [c, delta] : {std::pair<uint64_t, int>{old, -1}, {colour, 1}}) {
      Cell& cell = op_cells_[c];
      if (cell.size > 1) tied_ops_.erase({cell.size, c});
      cell.size += delta;
      if (cell.size > 1) tied_ops_.insert({cell.size, c});
      if (cell.size == 0) op_cells_.erase(c);
    }
  }

  // Recomputes the signatures of `nodes` (all ops or all tensors) and splits
  // their cells. Returns the recoloured nodes.
  std::vector<int> Split(const std::vector<int>& nodes, bool ops) {
    absl::flat_hash_map<uint64_t, Cell>& cells = ops ? op_cells_ : tensor_cells_;
    ++generation_;
    std::vector<std::tuple<uint64_t, uint64_t, int>> entries;  // (colour, signature, node)
    entries.reserve(nodes.size());
    for (int node : nodes) entries.emplace_back(colour_[node], Signature(node), node);
    std::sort(entries.begin(), entries.end());
    std::vector<int> changed;
    for (size_t i = 0; i < entries.size();) {
      const uint64_t colour = std::get<0>(entries[i]);
      size_t j = i;
      while (j < entries.size() && std::get<0>(entries[j]) == colour) ++j;
      const Cell cell = cells[colour];
      // Movers: members whose signature is not the cell's. Members not in
      // `nodes` still have the cell's signature.
      int movers = 0;
      for (size_t k = i; k < j; ++k) {
        movers += !cell.signature_known || std::get<1>(entries[k]) != cell.signature;
      }
      const bool one_signature = std::get<1>(entries[i]) == std::get<1>(entries[j - 1]);
      if (movers == cell.size && one_signature) {
        // Every member moved the same way: no split.
        cells[colour].signature_known = true;
        cells[colour].signature = std::get<1>(entries[i]);
      } else if (movers > 0) {
        for (size_t k = i; k < j; ++k) {
          const auto [old, signature, node] = entries[k];
          if (cell.signature_known && signature == cell.signature) continue;
          const uint64_t colour_now = Combine(Combine(old, signature), generation_);
          Recolour(node, colour_now);
          Cell& moved = (ops ? op_cells_ : tensor_cells_)[colour_now];
          moved.signature_known = true;
          moved.signature = signature;
          changed.push_back(node);
        }
      }
      i = j;
    }
    return changed;
  }

  // Splits until stable, starting from the recoloured ops `changed`.
  void Propagate(std::vector<int> changed) {
    std::vector<int> next;
    bool ops = true;  // what `changed` holds
    while (!changed.empty()) {
      // Each step with changes makes more cells (barring 64-bit collisions),
      // so this bound is never reached; it only guarantees termination.
      if (++steps_ > 2 * static_cast<int64_t>(n_ + m_) + 2 * n_ + 8) break;
      ++epoch_;
      next.clear();
      auto touch = [&](int node) {
        if (seen_[node] != epoch_) {
          seen_[node] = epoch_;
          next.push_back(node);
        }
      };
      for (int node : changed) {
        if (ops) {
          const Op& op = graph_.op(node);
          for (TensorId t : op.inputs) touch(n_ + t);
          for (TensorId t : op.outputs) touch(n_ + t);
        } else {
          const TensorId t = node - n_;
          if (graph_.tensor(t).producer != kNoOp) touch(graph_.tensor(t).producer);
          for (int r = reader_begin_[t]; r < reader_begin_[t + 1]; ++r) touch(readers_[r].first);
        }
      }
      ops = !ops;
      changed = Split(next, ops);
    }
  }

  // `order` lists the ops in canonical order.
  CanonicalGraph Serialize(std::vector<OpId> order) {
    CanonicalGraph out;
    out.op_at = std::move(order);
    std::vector<int> position(n_);
    for (int p = 0; p < n_; ++p) position[out.op_at[p]] = p;

    // Tensors: produced ones by (producer position, output slot); sources by
    // their first reader (position, input slot); tensors nobody touches by
    // label. Only untouched tensors with equal labels can tie, and those are
    // interchangeable.
    constexpr int64_t kUntouched = INT64_MAX;
    std::vector<std::tuple<int, int64_t, int64_t, uint64_t, TensorId>> keys;
    keys.reserve(m_);
    for (TensorId t = 0; t < m_; ++t) {
      if (graph_.tensor(t).producer != kNoOp) {
        keys.emplace_back(0, position[graph_.tensor(t).producer], output_slot_[t], 0, t);
        continue;
      }
      int64_t first = kUntouched, slot = 0;
      for (int r = reader_begin_[t]; r < reader_begin_[t + 1]; ++r) {
        const auto& [v, s] = readers_[r];
        if (position[v] < first || (position[v] == first && s < slot)) {
          first = position[v];
          slot = s;
        }
      }
      keys.emplace_back(first == kUntouched ? 2 : 1, first, slot, TensorLabel(graph_.tensor(t)), t);
    }
    std::sort(keys.begin(), keys.end());
    std::vector<int> tensor_position(m_);
    out.tensor_at.reserve(m_);
    for (size_t p = 0; p < keys.size(); ++p) {
      out.tensor_at.push_back(std::get<4>(keys[p]));
      tensor_position[std::get<4>(keys[p])] = static_cast<int>(p);
    }

    // Fixed-width integers, length-prefixed strings and lists: two graphs
    // share a serialization only when isomorphic.
    std::string& s = out.serialization;
    size_t words = 2;
    for (const Tensor& tensor : graph_.tensors()) words += 4 + tensor.shape.size();
    for (const Op& op : graph_.ops()) words += 5 + op.inputs.size() + op.outputs.size() + op.type.size() / 8 + 1;
    s.reserve(32 + 8 * words);
    s.append("serenity-canonical-graph-v1");
    Put(&s, static_cast<uint64_t>(m_));
    for (TensorId t : out.tensor_at) {
      const Tensor& tensor = graph_.tensor(t);
      Put(&s, tensor.shape.size());
      for (int64_t d : tensor.shape) Put(&s, static_cast<uint64_t>(d));
      Put(&s, static_cast<uint64_t>(tensor.dtype));
      Put(&s, static_cast<uint64_t>(tensor.bytes));
      Put(&s, Flags(tensor));
    }
    Put(&s, static_cast<uint64_t>(n_));
    for (OpId u : out.op_at) {
      const Op& op = graph_.op(u);
      PutString(&s, op.type);
      Put(&s, static_cast<uint64_t>(op.workspace_bytes));
      Put(&s, static_cast<uint64_t>(op.macs));
      Put(&s, op.inputs.size());
      for (TensorId t : op.inputs) Put(&s, static_cast<uint64_t>(tensor_position[t]));
      Put(&s, op.outputs.size());
      for (TensorId t : op.outputs) Put(&s, static_cast<uint64_t>(tensor_position[t]));
    }
    out.key = StableHash128(s);
    return out;
  }

  const Graph& graph_;
  const int n_;  // ops are nodes [0, n_)
  const int m_;  // tensor t is node n_ + t
  std::vector<int> output_slot_;
  std::vector<int> reader_begin_;                                // readers_ of tensor t: [begin[t], begin[t + 1])
  std::vector<std::pair<OpId, int>> readers_;                    // (op, input slot)
  std::vector<uint64_t> colour_;                                 // per node
  std::vector<uint64_t> reader_sum_;                             // per tensor: sum of ReaderTerm over its readers
  absl::flat_hash_map<uint64_t, Cell> op_cells_, tensor_cells_;  // by colour
  std::set<std::pair<int, uint64_t>> tied_ops_;                  // (size, colour) of op cells of 2+
  std::vector<int> seen_;                                        // per node, the last epoch it was touched
  int epoch_ = 0;
  // Counts splitting steps and individualizations. New colours include it:
  // a cell keeps its colour while others split off, so hash(old colour,
  // signature) alone could meet a cell made from the same colour earlier.
  uint64_t generation_ = 0;
  int64_t steps_ = 0;  // of Propagate, over the whole run
};

}  // namespace

CanonicalGraph Canonicalize(const Graph& graph) { return Canonicalizer(graph).Run(); }

std::string StableHash128(absl::string_view bytes) {
  // HashBytes(bytes, 0x5eed1) and HashBytes(bytes, 0x5eed2), in one pass.
  uint64_t a = 0x5eed1 ^ kFnvBasis, b = 0x5eed2 ^ kFnvBasis;
  for (unsigned char c : bytes) {
    a = (a ^ c) * kFnvPrime;
    b = (b ^ c) * kFnvPrime;
  }
  char out[33];
  std::snprintf(out, sizeof(out), "%016llx%016llx", static_cast<unsigned long long>(Mix(a ^ bytes.size())),
                static_cast<unsigned long long>(Mix(b ^ bytes.size())));
  return out;
}

}  // namespace serenity
