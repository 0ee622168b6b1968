// The (peak, time) frontier of primitive selection (issue 19; `plan
// --pareto --pareto-svg FILE`) as a standalone SVG: peak bytes across, total
// time down the side, one dot per plan of the frontier, the staircase of the
// least time each peak allows, the plan itself marked and the budget drawn.
#ifndef SERENITY_CLIENT_PARETO_PLOT_H_
#define SERENITY_CLIENT_PARETO_PLOT_H_

#include <string>
#include <vector>

#include "serenity/v1/scheduler.pb.h"

namespace serenity {

// Round ticks covering [lo, hi]: multiples of one step (1, 2 or 5 x 10^k, k
// any integer), the smallest that needs at most `max_intervals` intervals,
// from the largest multiple <= lo to the smallest >= hi; at least two ticks
// (hi <= lo widens the range around lo).
std::vector<double> NiceTicks(double lo, double hi, int max_intervals);

// A standalone SVG document of plan.time's frontier (Plan.time.pareto; none:
// the axes and a note). Each frontier plan is a <circle class="point"> with
// data-peak and data-time; the staircase a <polyline class="staircase">
// (from each point across at its time to the next point's peak, then down;
// after the last, across to the axis' end); the plan itself, when it has a
// time, a <circle class="chosen"> at (plan.peak_bytes, plan.time.time_us); a
// budget > 0 a dashed <line class="budget">. Tick labels are <text
// class="xtick"> and <text class="ytick"> with data-value (bytes, us); the
// axes say their units ("peak (KiB)", "time (us)").
std::string ParetoPlotSvg(const v1::Plan& plan);

}  // namespace serenity

#endif  // SERENITY_CLIENT_PARETO_PLOT_H_
