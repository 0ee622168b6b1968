// Baseline orders, each a valid topological order of all ops. They are the
// yardsticks every plan is compared with and the starting upper bounds of the
// searches.
#ifndef SERENITY_CORE_SCHEDULE_BASELINES_H_
#define SERENITY_CORE_SCHEDULE_BASELINES_H_

#include <vector>

#include "core/graph/graph.h"
#include "core/memory/buffer_model.h"
#include "core/schedule/list_schedule.h"

namespace serenity {

// The order of the input file. When the file's op list is not topological
// (our Graph message allows that), the stable topological sort that always
// runs the ready op with the smallest file position.
std::vector<OpId> FileOrder(const Graph& graph);

// Kahn's algorithm with a FIFO queue: ops run in the order they become ready;
// ops that become ready at the same time (initially, or after the same op)
// enter the queue by file position.
std::vector<OpId> KahnOrder(const Graph& graph);

// The memory-greedy order: at each step run the ready op whose step needs the
// least live memory (the bytes live while it runs); ties go to the op that
// leaves the fewest bytes live after it, then to the smallest file position
// (ListRule::kLeastStepBytes). Within `limits`.
std::vector<OpId> GreedyOrder(const BufferModel& buffers, const ListScheduleLimits& limits = {});

}  // namespace serenity

#endif  // SERENITY_CORE_SCHEDULE_BASELINES_H_
