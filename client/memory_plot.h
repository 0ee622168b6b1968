// The memory picture of a plan as SVG (the Serenity paper's Figure 12): live
// bytes per step for Serenity's order and every baseline, and the arena as
// rectangles over time and address, with the budget and on-chip sizes drawn
// as lines.
#ifndef SERENITY_CLIENT_MEMORY_PLOT_H_
#define SERENITY_CLIENT_MEMORY_PLOT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "serenity/v1/scheduler.pb.h"

namespace serenity {

// Tick marks of an axis from 0 to `top`: `values` are 0, step, 2 step, ...,
// top (top = the data's maximum rounded up to a step), labelled in `unit`
// ("B", "KiB", "MiB" for bytes; "" for steps) of `unit_size`.
struct AxisTicks {
  std::vector<int64_t> values;
  int64_t top = 1;
  std::string unit;
  int64_t unit_size = 1;
};

// Round ticks for a byte axis up to `max_bytes`: in MiB from 2 MiB up, in
// KiB from 2 KiB up, else in bytes; the step is 1, 2 or 5 x 10^k units
// (k >= 0), the smallest that needs at most 6 intervals. max_bytes below 1
// counts as 1.
AxisTicks ByteTicks(int64_t max_bytes);

// Round ticks for a step axis up to `steps` (>= 1): 1, 2 or 5 x 10^k steps,
// at most 8 intervals.
AxisTicks StepTicks(int64_t steps);

// The label of tick `value`: "0", "512 KiB", "2,048 KiB", "3 MiB", "40".
std::string TickLabel(const AxisTicks& ticks, int64_t value);

// A standalone SVG document. Each order's curve is a <polyline> with
// class="order" and a data-order attribute naming it. Tick labels are
// <text class="ytick"> and <text class="xtick">, legend entries <text
// class="legend">, and the labels of the budget and on-chip lines <text
// class="level-label">; labels of one kind never overlap (level labels are
// pushed apart where their lines are close).
std::string MemoryPlotSvg(const v1::Plan& plan);

}  // namespace serenity

#endif  // SERENITY_CLIENT_MEMORY_PLOT_H_
