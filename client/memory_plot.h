// The memory picture of a plan as SVG (the Serenity paper's Figure 12): live
// bytes per step for Serenity's order and every baseline, and the arena as
// rectangles over time and address, with the budget and on-chip sizes drawn
// as lines.
#ifndef SERENITY_CLIENT_MEMORY_PLOT_H_
#define SERENITY_CLIENT_MEMORY_PLOT_H_

#include <string>

#include "serenity/v1/scheduler.pb.h"

namespace serenity {

// A standalone SVG document. Each order's curve is a <polyline> with
// class="order" and a data-order attribute naming it.
std::string MemoryPlotSvg(const v1::Plan& plan);

}  // namespace serenity

#endif  // SERENITY_CLIENT_MEMORY_PLOT_H_
