// Orders that today's compilers would pick, implemented here from the public
// descriptions of their memory-aware schedulers (not from their code), as
// extra yardsticks. Details of tie-breaking may differ from the originals.
#ifndef SERENITY_CORE_SCHEDULE_COMPILER_BASELINES_H_
#define SERENITY_CORE_SCHEDULE_COMPILER_BASELINES_H_

#include <vector>

#include "core/memory/buffer_model.h"
#include "core/schedule/baselines.h"

namespace serenity {

// PyTorch Inductor's reorder-for-peak-memory: the best (lowest peak; ties
// keep the earlier) of the input order and three sorts:
//  - LPMF, least peak memory first: run the ready op that keeps the running
//    peak lowest, then the one with the smallest net allocation, then the
//    earliest in the file;
//  - BFS: by depth from the sources, then file position;
//  - DFS: post-order from the graph's outputs, visiting the inputs that
//    carry more bytes first.
// Its LPMF list schedule stops choosing within `limits` (list_schedule.h).
std::vector<OpId> InductorOrder(const BufferModel& buffers, const ListScheduleLimits& limits = {});

// XLA's default memory scheduler: the best of
//  - the list scheduler: run the ready op that frees the most bytes net
//    (bytes of inputs it is the last reader of, less bytes it defines), then
//    the earliest in the file;
//  - the DFS scheduler: post-order from the outputs, visiting first the
//    operands with more extra readers, then those whose ancestors define more
//    bytes;
//  - the plain post-order from the outputs, operands in input order.
// Its list schedule stops choosing within `limits` (list_schedule.h).
std::vector<OpId> XlaOrder(const BufferModel& buffers, const ListScheduleLimits& limits = {});

}  // namespace serenity

#endif  // SERENITY_CORE_SCHEDULE_COMPILER_BASELINES_H_
