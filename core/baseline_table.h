// The baseline orders every plan is compared with, in one table: a baseline
// is one row here (its name and how its order is made) and one field of the
// proto's Baselines message (MutableBaselineProto in plan_proto.h).
#ifndef SERENITY_CORE_BASELINE_TABLE_H_
#define SERENITY_CORE_BASELINE_TABLE_H_

#include <array>
#include <cstddef>
#include <vector>

#include "absl/types/span.h"
#include "core/graph/graph.h"
#include "core/memory/buffer_model.h"
#include "core/schedule/baselines.h"

namespace serenity {

// The baselines, in the order they are computed, reported and break ties.
enum class Baseline { kFileOrder, kKahn, kGreedy, kInductor, kXla };
inline constexpr size_t kNumBaselines = 5;

// One baseline: its name (as an algorithm, a field of the proto's Baselines
// and a traffic entry) and its order of `buffers`' graph; the list
// schedules stop choosing at `limits.deadline` (list_schedule.h).
struct BaselineInfo {
  Baseline baseline;
  const char* name;
  std::vector<OpId> (*order)(const BufferModel& buffers, const ListScheduleLimits& limits);
};

// Every baseline, one row each, in the order of the enum.
absl::Span<const BaselineInfo> BaselineTable();

// "file_order", "kahn", "greedy", "inductor" or "xla".
const char* BaselineName(Baseline baseline);

// One T per baseline, indexed by Baseline.
template <typename T>
class PerBaseline {
 public:
  T& operator[](Baseline baseline) { return values_[static_cast<size_t>(baseline)]; }
  const T& operator[](Baseline baseline) const { return values_[static_cast<size_t>(baseline)]; }

 private:
  std::array<T, kNumBaselines> values_{};
};

}  // namespace serenity

#endif  // SERENITY_CORE_BASELINE_TABLE_H_
