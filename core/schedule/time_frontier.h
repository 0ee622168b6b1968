// The (peak, time) frontier of primitive selection (issue 19): for every
// total time some plan reaches, the least peak that reaches it, keeping only
// the undominated points (each faster than every point of smaller peak).
//
// Found by a sweep of MinimizeTime (time_search.h) down the budget: at a
// budget B the least time T(B) is found with a plan of peak p <= B; T is
// the same for every budget in [p, B], so the next budget is p - 1, until
// no plan fits. Among the plans of one time, the last found has the least
// peak. The frontier is exact when every step was proven.
#ifndef SERENITY_CORE_SCHEDULE_TIME_FRONTIER_H_
#define SERENITY_CORE_SCHEDULE_TIME_FRONTIER_H_

#include <cstdint>
#include <limits>
#include <vector>

#include "core/memory/buffer_model.h"
#include "core/schedule/budget_search.h"
#include "core/schedule/time_search.h"

namespace serenity {

struct FrontierPoint {
  PrimitiveSelection selection;
  int64_t peak_bytes = 0;  // of selection.order with its workspaces
};

struct TimeFrontier {
  // By increasing peak, so by strictly decreasing time.
  std::vector<FrontierPoint> points;
  // Every step was proven and the sweep reached a budget no plan fits (or,
  // with a time cap, a time above it): the points are the frontier.
  bool proven = false;
  int64_t states = 0;
};

// The frontier of `buffers`' graph, swept from the fastest plans down to
// the least peak; with `max_time_us` finite, only the points whose time is at
// most it (the first point is then the least peak within that time; none
// when even the fastest primitives everywhere take longer). Each step
// starts from `start_order` (a valid order, e.g. of least peak). Within
// `limits` for the whole sweep (time_limit_seconds, max_states per step,
// cancelled, memory).
TimeFrontier SweepTimeFrontier(const BufferModel& buffers, const std::vector<OpId>& start_order,
                               const SearchOptions& limits,
                               double max_time_us = std::numeric_limits<double>::infinity());

// At most `max_points` of `points`, the first and the last kept and the
// others evenly spaced between them (all when there are few enough).
std::vector<FrontierPoint> ThinFrontier(std::vector<FrontierPoint> points, int max_points);

}  // namespace serenity

#endif  // SERENITY_CORE_SCHEDULE_TIME_FRONTIER_H_
