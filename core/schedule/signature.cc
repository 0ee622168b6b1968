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
  for (BufferId b : buffers.reads(u)) {
    const ActivationBuffer& buffer = buffers.buffers()[b];
    if (buffer.live_to_end) continue;
    bool last = true;
    for (OpId user : buffer.users) last = last && (user == u || Contains(signature, user));
    if (last) cost.after -= buffer.bytes;
  }
  return cost;
}

}  // namespace serenity
