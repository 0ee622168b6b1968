#include "core/graph/canonical_graph.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <tuple>

#include "absl/container/flat_hash_set.h"

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

uint64_t HashBytes(absl::string_view bytes, uint64_t seed) {
  uint64_t h = seed ^ 0xcbf29ce484222325ULL;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return Mix(h ^ bytes.size());
}

uint64_t TensorLabel(const Tensor& t) {
  uint64_t h = Combine(0x7465, static_cast<uint64_t>(t.dtype));
  h = Combine(h, static_cast<uint64_t>(t.bytes));
  h = Combine(h, t.shape.size());
  for (int64_t d : t.shape) h = Combine(h, static_cast<uint64_t>(d));
  h = Combine(h, (t.is_weight ? 1u : 0u) | (t.is_graph_input ? 2u : 0u) | (t.is_graph_output ? 4u : 0u));
  return h;
}

// Appends `value` to `out` as 8 little-endian bytes.
void Put(std::string* out, uint64_t value) {
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

void PutString(std::string* out, const std::string& s) {
  Put(out, s.size());
  out->append(s);
}

class Canonicalizer {
 public:
  explicit Canonicalizer(const Graph& graph) : graph_(graph), n_(graph.num_ops()) {
    tensor_label_.resize(graph.num_tensors());
    for (TensorId t = 0; t < graph.num_tensors(); ++t) tensor_label_[t] = TensorLabel(graph.tensor(t));
    // Which output slot of its producer each tensor is.
    output_slot_.assign(graph.num_tensors(), -1);
    for (OpId u = 0; u < n_; ++u) {
      const Op& op = graph.op(u);
      for (size_t k = 0; k < op.outputs.size(); ++k) output_slot_[op.outputs[k]] = static_cast<int>(k);
    }
    // Every (consumer, input slot) of each tensor.
    readers_.resize(graph.num_tensors());
    for (OpId u = 0; u < n_; ++u) {
      const Op& op = graph.op(u);
      for (size_t k = 0; k < op.inputs.size(); ++k) readers_[op.inputs[k]].push_back({u, static_cast<int>(k)});
    }
    colour_.resize(n_);
    for (OpId u = 0; u < n_; ++u) {
      const Op& op = graph.op(u);
      uint64_t h = HashBytes(op.type, 0x6f70);
      h = Combine(h, static_cast<uint64_t>(op.workspace_bytes));
      h = Combine(h, static_cast<uint64_t>(op.macs));
      h = Combine(h, op.inputs.size());
      for (TensorId t : op.inputs) h = Combine(h, tensor_label_[t]);
      h = Combine(h, op.outputs.size());
      for (TensorId t : op.outputs) h = Combine(h, tensor_label_[t]);
      colour_[u] = h;
    }
  }

  CanonicalGraph Run() {
    Refine();
    // Individualize until every op has a colour of its own.
    while (true) {
      std::vector<OpId> by_colour(n_);
      std::iota(by_colour.begin(), by_colour.end(), 0);
      std::sort(by_colour.begin(), by_colour.end(), [&](OpId a, OpId b) {
        return std::tie(colour_[a], a) < std::tie(colour_[b], b);
      });
      OpId tied = kNoOp;
      for (int i = 0; i + 1 < n_; ++i) {
        if (colour_[by_colour[i]] == colour_[by_colour[i + 1]]) {
          tied = by_colour[i];
          break;
        }
      }
      if (tied == kNoOp) {
        order_ = std::move(by_colour);
        break;
      }
      colour_[tied] = Combine(colour_[tied], 0x696e646976ULL);
      Refine();
    }
    return Serialize();
  }

 private:
  int DistinctColours() const {
    absl::flat_hash_set<uint64_t> seen(colour_.begin(), colour_.end());
    return static_cast<int>(seen.size());
  }

  // Colour refinement until the partition stops splitting.
  void Refine() {
    int classes = DistinctColours();
    std::vector<uint64_t> next(n_);
    std::vector<uint64_t> around;
    for (int round = 0; round <= n_; ++round) {
      for (OpId u = 0; u < n_; ++u) {
        const Op& op = graph_.op(u);
        uint64_t h = Combine(colour_[u], 0x726566);
        // Inputs, in slot order: the producer's colour and output slot, or
        // the tensor's own label for graph inputs and weights.
        for (size_t k = 0; k < op.inputs.size(); ++k) {
          const TensorId t = op.inputs[k];
          const OpId p = graph_.tensor(t).producer;
          h = Combine(h, p == kNoOp ? tensor_label_[t] : Combine(colour_[p], static_cast<uint64_t>(output_slot_[t])));
        }
        // Readers of each output, as a multiset of (colour, slot).
        for (size_t k = 0; k < op.outputs.size(); ++k) {
          around.clear();
          for (const auto& [v, slot] : readers_[op.outputs[k]]) {
            around.push_back(Combine(colour_[v], static_cast<uint64_t>(slot)));
          }
          std::sort(around.begin(), around.end());
          h = Combine(h, around.size());
          for (uint64_t a : around) h = Combine(h, a);
        }
        next[u] = h;
      }
      // Readers of graph inputs and weights shared with other ops are
      // covered through those ops' colours at the next round.
      colour_.swap(next);
      const int now = DistinctColours();
      if (now == classes) break;
      classes = now;
    }
  }

  CanonicalGraph Serialize() {
    CanonicalGraph out;
    out.op_at = order_;
    std::vector<int> position(n_);
    for (int p = 0; p < n_; ++p) position[order_[p]] = p;

    // Tensors: produced ones by (producer position, slot); sources by their
    // first reader (position, slot); tensors nobody touches by label.
    const int64_t kUntouched = INT64_MAX;
    std::vector<std::tuple<int, int64_t, int64_t, uint64_t, TensorId>> keys;
    for (TensorId t = 0; t < graph_.num_tensors(); ++t) {
      const Tensor& tensor = graph_.tensor(t);
      if (tensor.producer != kNoOp) {
        keys.emplace_back(0, position[tensor.producer], output_slot_[t], tensor_label_[t], t);
        continue;
      }
      int64_t first = kUntouched, slot = 0;
      for (const auto& [v, s] : readers_[t]) {
        if (position[v] < first || (position[v] == first && s < slot)) {
          first = position[v];
          slot = s;
        }
      }
      keys.emplace_back(first == kUntouched ? 2 : 1, first, slot, tensor_label_[t], t);
    }
    std::sort(keys.begin(), keys.end(), [](const auto& a, const auto& b) {
      // The tensor id only breaks ties between indistinguishable tensors.
      return std::tie(std::get<0>(a), std::get<1>(a), std::get<2>(a), std::get<3>(a)) <
             std::tie(std::get<0>(b), std::get<1>(b), std::get<2>(b), std::get<3>(b)) ||
             (std::tie(std::get<0>(a), std::get<1>(a), std::get<2>(a), std::get<3>(a)) ==
                  std::tie(std::get<0>(b), std::get<1>(b), std::get<2>(b), std::get<3>(b)) &&
              std::get<4>(a) < std::get<4>(b));
    });
    std::vector<int> tensor_position(graph_.num_tensors());
    for (size_t p = 0; p < keys.size(); ++p) {
      out.tensor_at.push_back(std::get<4>(keys[p]));
      tensor_position[std::get<4>(keys[p])] = static_cast<int>(p);
    }

    std::string& s = out.serialization;
    s.append("serenity-canonical-graph-v1");
    Put(&s, static_cast<uint64_t>(graph_.num_tensors()));
    for (TensorId t : out.tensor_at) {
      const Tensor& tensor = graph_.tensor(t);
      Put(&s, tensor.shape.size());
      for (int64_t d : tensor.shape) Put(&s, static_cast<uint64_t>(d));
      Put(&s, static_cast<uint64_t>(tensor.dtype));
      Put(&s, static_cast<uint64_t>(tensor.bytes));
      Put(&s, (tensor.is_weight ? 1u : 0u) | (tensor.is_graph_input ? 2u : 0u) | (tensor.is_graph_output ? 4u : 0u));
    }
    Put(&s, static_cast<uint64_t>(n_));
    for (OpId u : order_) {
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
  const int n_;
  std::vector<uint64_t> tensor_label_;
  std::vector<int> output_slot_;
  std::vector<std::vector<std::pair<OpId, int>>> readers_;
  std::vector<uint64_t> colour_;
  std::vector<OpId> order_;
};

}  // namespace

CanonicalGraph Canonicalize(const Graph& graph) { return Canonicalizer(graph).Run(); }

std::string StableHash128(absl::string_view bytes) {
  char out[33];
  std::snprintf(out, sizeof(out), "%016llx%016llx", static_cast<unsigned long long>(HashBytes(bytes, 0x5eed1)),
                static_cast<unsigned long long>(HashBytes(bytes, 0x5eed2)));
  return out;
}

}  // namespace serenity
