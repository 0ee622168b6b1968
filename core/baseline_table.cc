#include "core/baseline_table.h"

#include <iterator>

#include "core/schedule/compiler_baselines.h"

namespace serenity {
namespace {

std::vector<OpId> FileOrderOf(const BufferModel& buffers, const ListScheduleLimits&) {
  return FileOrder(buffers.graph());
}

std::vector<OpId> KahnOrderOf(const BufferModel& buffers, const ListScheduleLimits&) {
  return KahnOrder(buffers.graph());
}

constexpr BaselineInfo kBaselines[] = {
    {Baseline::kFileOrder, "file_order", FileOrderOf},
    {Baseline::kKahn, "kahn", KahnOrderOf},
    {Baseline::kGreedy, "greedy", GreedyOrder},
    {Baseline::kInductor, "inductor", InductorOrder},
    {Baseline::kXla, "xla", XlaOrder},
};
static_assert(std::size(kBaselines) == kNumBaselines, "one row per Baseline");

}  // namespace

absl::Span<const BaselineInfo> BaselineTable() { return kBaselines; }

const char* BaselineName(Baseline baseline) { return kBaselines[static_cast<size_t>(baseline)].name; }

}  // namespace serenity
