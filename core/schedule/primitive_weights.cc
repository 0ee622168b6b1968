#include "core/schedule/primitive_weights.h"

#include <algorithm>
#include <limits>

#include "absl/numeric/int128.h"
#include "core/schedule/layout_conversions.h"

namespace serenity {

PrimitiveWeights::PrimitiveWeights(const Graph& graph, bool count_weights)
    : graph_(graph), own_(graph.num_ops(), 0), least_(graph.num_ops(), 0) {
  if (!count_weights) return;
  for (OpId u = 0; u < graph.num_ops(); ++u) {
    const std::vector<Primitive>& alternatives = graph.op(u).alternatives;
    bool states = false;
    for (const Primitive& p : alternatives) states = states || p.weight_bytes > 0;
    if (!states) continue;
    own_[u] = OwnWeightBytes(graph, u);
    int64_t least = Extra(u, 0);
    for (int a = 1; a < static_cast<int>(alternatives.size()); ++a) least = std::min(least, Extra(u, a));
    least_[u] = least;
    least_total_ += least;
    for (int a = 0; a < static_cast<int>(alternatives.size()); ++a) active_ = active_ || Extra(u, a) != least;
  }
}

int64_t PrimitiveWeights::Extra(OpId u, int choice) const {
  if (choice < 0 || own_[u] == 0) return 0;
  const int64_t bytes = graph_.op(u).alternatives[choice].weight_bytes;
  return bytes == 0 ? 0 : bytes - own_[u];
}

int64_t PrimitiveWeights::RoomFor(int64_t budget) const {
  int64_t room = 0;
  if (__builtin_sub_overflow(budget, least_total_, &room)) {
    return least_total_ < 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
  }
  return room;
}

int64_t PrimitiveWeights::ExtraOf(const std::vector<int>& choice) const {
  int64_t bytes = 0;
  for (OpId u = 0; u < graph_.num_ops(); ++u) bytes += Extra(u, choice[u]);
  return bytes;
}

Graph ChosenGraph(const Graph& graph, const std::vector<int>& choice) {
  const Graph with_workspaces = graph.WithWorkspaces(StepWorkspaces(graph, choice));
  std::vector<int64_t> tensor_bytes(graph.num_tensors());
  for (TensorId t = 0; t < graph.num_tensors(); ++t) tensor_bytes[t] = graph.tensor(t).bytes;
  bool changed = false;
  for (OpId u = 0; u < graph.num_ops(); ++u) {
    if (choice[u] < 0) continue;
    const int64_t target = graph.op(u).alternatives[choice[u]].weight_bytes;
    const int64_t own = target > 0 ? OwnWeightBytes(graph, u) : 0;
    if (own == 0) continue;
    // The own weights in input order, each scaled (rounded down), the last
    // taking what rounding left.
    const std::vector<TensorId> mine = OwnWeights(graph, u);
    int64_t given = 0;
    for (size_t i = 0; i < mine.size(); ++i) {
      const int64_t bytes = graph.tensor(mine[i]).bytes;
      const int64_t scaled =
          i + 1 == mine.size() ? target - given : static_cast<int64_t>(absl::int128(bytes) * target / own);
      tensor_bytes[mine[i]] = scaled;
      given += scaled;
    }
    changed = true;
  }
  return changed ? with_workspaces.WithWeightTensorBytes(tensor_bytes) : with_workspaces;
}

}  // namespace serenity
