// List schedules: repeatedly run one of the ready ops, chosen by the memory
// state of the ops run so far. The memory-aware baselines (baselines.h,
// compiler_baselines.h) are list schedules.
#ifndef SERENITY_CORE_SCHEDULE_LIST_SCHEDULE_H_
#define SERENITY_CORE_SCHEDULE_LIST_SCHEDULE_H_

#include <chrono>
#include <cstdint>
#include <vector>

#include "core/graph/graph.h"
#include "core/memory/buffer_model.h"

namespace serenity {

// When a list schedule must stop choosing: at `deadline` (checked every 64
// steps) it runs the remaining ops in a plain topological order (the last
// op to become ready first) and sets `*cut` (when not null).
struct ListScheduleLimits {
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  bool* cut = nullptr;
};

// Which ready op a list schedule runs next, by the MemoryTracker's
// StepBytes(u) and BytesAfter(u) at that point. Every rule breaks the ties
// left by the smallest op id (file position).
enum class ListRule {
  // The least step bytes, then the least bytes after (GreedyOrder).
  kLeastStepBytes,
  // The least running peak, max(peak so far, step bytes), then the least
  // net allocation, bytes after less bytes live (Inductor's LPMF): every
  // op that stays under the peak ties on the first.
  kLeastPeakFirst,
  // The least net allocation, bytes after less bytes live (XLA's list
  // scheduler: the most bytes freed net).
  kLeastNetAllocation,
};

// The list schedule of `rule` over all ops of `buffers`' graph, within
// `limits`: a valid topological order. The ready ops are kept sorted by
// their step bytes with the least net allocation below each point, and an
// op's memory figures (O(k) for an op reading k buffers) are recomputed
// only when one of its buffers gets down to one reader left: a graph of n
// ops reading r buffers in all takes O((n + r) log n) time when ops read
// few buffers, and at most the sum of k^2 over the ops more. Sets
// `*peak_bytes` (when not null) to the order's peak, PeakOf's.
std::vector<OpId> ListSchedule(const BufferModel& buffers, ListRule rule, const ListScheduleLimits& limits = {},
                               int64_t* peak_bytes = nullptr);

}  // namespace serenity

#endif  // SERENITY_CORE_SCHEDULE_LIST_SCHEDULE_H_
