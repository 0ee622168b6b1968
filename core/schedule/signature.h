// Scheduled-op sets ("signatures" in the Serenity paper) as byte strings,
// bit u set when op u has run, and what running one more op costs from one.
// The key of the DP-style searches (signature_dp.h, reference_search.h).
#ifndef SERENITY_CORE_SCHEDULE_SIGNATURE_H_
#define SERENITY_CORE_SCHEDULE_SIGNATURE_H_

#include <cstdint>
#include <string>

#include "core/memory/buffer_model.h"

namespace serenity {

inline std::string EmptySignature(int num_ops) { return std::string((static_cast<size_t>(num_ops) + 7) / 8, '\0'); }

inline bool Contains(const std::string& signature, OpId u) {
  return (static_cast<unsigned char>(signature[u / 8]) >> (u % 8)) & 1;
}

inline void Insert(std::string& signature, OpId u) {
  signature[u / 8] = static_cast<char>(signature[u / 8] | (1 << (u % 8)));
}

// True when u has not run and all its predecessors have.
bool IsReady(const Graph& graph, const std::string& signature, OpId u);

struct StepCost {
  int64_t step = 0;   // bytes live while u runs
  int64_t after = 0;  // bytes live after it
};

// The cost of running `u` next after `signature`, with `live` bytes live;
// `first` when nothing has run yet (graph inputs nobody reads die then).
StepCost CostOfRunning(const BufferModel& buffers, const std::string& signature, int64_t live, OpId u, bool first);

}  // namespace serenity

#endif  // SERENITY_CORE_SCHEDULE_SIGNATURE_H_
