#include "core/schedule/signature.h"

namespace serenity {

bool IsReady(const Graph& graph, const std::string& signature, OpId u) {
  if (Contains(signature, u)) return false;
  for (OpId p : graph.op(u).predecessors) {
    if (!Contains(signature, p)) return false;
  }
  return true;
}

StepCost CostOfRunning(const BufferModel& buffers, const std::string& signature, int64_t live, OpId u, bool first) {
  StepCost cost{live + buffers.graph().op(u).workspace_bytes, live - (first ? buffers.unused_input_bytes() : 0)};
  for (BufferId b : buffers.allocates(u)) {
    const ActivationBuffer& buffer = buffers.buffers()[b];
    cost.step += buffer.bytes;
    if (!buffer.users.empty() || buffer.live_to_end) cost.after += buffer.bytes;
  }
  auto last_reader = [&](BufferId b) {
    for (OpId user : buffers.buffers()[b].users) {
      if (user != u && !Contains(signature, user)) return false;
    }
    return true;
  };
  for (BufferId b : buffers.reads(u)) {
    if (!buffers.buffers()[b].live_to_end && last_reader(b)) cost.after -= buffers.buffers()[b].bytes;
  }
  for (BufferId b : buffers.in_place_inputs(u)) {
    if (last_reader(b)) {
      cost.step -= buffers.in_place_bytes(u);
      break;
    }
  }
  return cost;
}

}  // namespace serenity
