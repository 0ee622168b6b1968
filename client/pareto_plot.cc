#include "client/pareto_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/plan_output.h"
#include "client/svg_text.h"

namespace serenity {
namespace {

constexpr double kWidth = 820, kHeight = 480, kLeft = 100, kRight = 190, kTop = 50, kBottom = 60;
constexpr double kPlotW = kWidth - kLeft - kRight, kPlotH = kHeight - kTop - kBottom;

// An axis: its ticks (in data units: bytes, us), shown in `unit` of
// `unit_size` data units with `decimals` decimals.
struct Axis {
  std::vector<double> ticks;
  double unit_size = 1;
  std::string unit;
  int decimals = 0;
  double lo() const { return ticks.front(); }
  double hi() const { return ticks.back(); }
};

// The decimals that show every multiple of `step` (in units) exactly.
int DecimalsOf(double step) {
  int decimals = 0;
  for (double scaled = step; decimals < 9 && std::abs(scaled - std::round(scaled)) > 1e-9 * std::max(1.0, scaled);
       scaled *= 10) {
    ++decimals;
  }
  return decimals;
}

Axis MakeAxis(double lo, double hi, double unit_size, const std::string& unit, int max_intervals) {
  Axis axis;
  axis.unit_size = unit_size;
  axis.unit = unit;
  const std::vector<double> ticks = NiceTicks(lo / unit_size, hi / unit_size, max_intervals);
  axis.decimals = DecimalsOf(ticks[1] - ticks[0]);
  for (double t : ticks) axis.ticks.push_back(t * unit_size);
  return axis;
}

std::string Label(const Axis& axis, double value) {
  const double units = value / axis.unit_size;
  if (axis.decimals == 0) return WithCommas(std::llround(units));
  return absl::StrFormat("%.*f", axis.decimals, units);
}

}  // namespace

std::vector<double> NiceTicks(double lo, double hi, int max_intervals) {
  max_intervals = std::max(max_intervals, 1);
  if (!(hi > lo)) {
    const double pad = std::max(std::abs(lo) * 0.05, 1.0);
    hi = lo + pad;
    lo = lo - pad;
  }
  const double raw = (hi - lo) / max_intervals;
  double step = std::pow(10.0, std::floor(std::log10(raw)));
  for (;;) {
    bool found = false;
    for (double m : {1.0, 2.0, 5.0}) {
      const double s = m * step;
      if (std::ceil(hi / s - 1e-9) - std::floor(lo / s + 1e-9) <= max_intervals) {
        step = s;
        found = true;
        break;
      }
    }
    if (found) break;
    step *= 10;
  }
  std::vector<double> ticks;
  const int64_t first = static_cast<int64_t>(std::floor(lo / step + 1e-9));
  const int64_t last = std::max(first + 1, static_cast<int64_t>(std::ceil(hi / step - 1e-9)));
  for (int64_t k = first; k <= last; ++k) ticks.push_back(static_cast<double>(k) * step);
  return ticks;
}

std::string ParetoPlotSvg(const v1::Plan& plan) {
  const v1::TimeReport& time = plan.time();
  const bool chosen = plan.has_time();
  // The ranges: every point, the plan itself, the budget.
  std::vector<double> peaks, times;
  for (const v1::ParetoPoint& p : time.pareto()) {
    peaks.push_back(static_cast<double>(p.peak_bytes()));
    times.push_back(p.time_us());
  }
  if (chosen) {
    peaks.push_back(static_cast<double>(plan.peak_bytes()));
    times.push_back(time.time_us());
  }
  if (plan.memory_budget_bytes() > 0) peaks.push_back(static_cast<double>(plan.memory_budget_bytes()));
  if (peaks.empty()) peaks.push_back(0);
  if (times.empty()) times.push_back(0);
  const double max_peak = *std::max_element(peaks.begin(), peaks.end());
  constexpr double kKiB = 1024, kMiB = 1024 * 1024;
  const Axis x =
      max_peak >= 2 * kMiB   ? MakeAxis(*std::min_element(peaks.begin(), peaks.end()), max_peak, kMiB, "MiB", 6)
      : max_peak >= 2 * kKiB ? MakeAxis(*std::min_element(peaks.begin(), peaks.end()), max_peak, kKiB, "KiB", 6)
                             : MakeAxis(*std::min_element(peaks.begin(), peaks.end()), max_peak, 1, "bytes", 6);
  const Axis y = MakeAxis(*std::min_element(times.begin(), times.end()), *std::max_element(times.begin(), times.end()),
                          1, "us", 6);
  const auto x_of = [&](double bytes) { return kLeft + kPlotW * (bytes - x.lo()) / (x.hi() - x.lo()); };
  const auto y_of = [&](double us) { return kTop + kPlotH - kPlotH * (us - y.lo()) / (y.hi() - y.lo()); };

  std::string svg = absl::StrFormat(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" font-family=\"sans-serif\">\n"
      "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
      kWidth, kHeight);
  absl::StrAppend(&svg,
                  absl::StrFormat("<text x=\"%.1f\" y=\"26\" font-size=\"15\" font-weight=\"bold\">%s: (peak, "
                                  "time) frontier, %d plans%s%s</text>\n",
                                  kLeft, SvgEscape(plan.model()), time.pareto_size(),
                                  time.pareto_thinned() ? " (thinned)" : "", time.pareto_proven() ? " (proven)" : ""));
  // Axes, grid and ticks.
  absl::StrAppend(
      &svg,
      absl::StrFormat("<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"#444\"/>\n",
                      kLeft, kTop, kPlotW, kPlotH));
  for (double value : x.ticks) {
    absl::StrAppend(
        &svg, absl::StrFormat("<line x1=\"%.3f\" y1=\"%.1f\" x2=\"%.3f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                              "<text class=\"xtick\" data-value=\"%.17g\" x=\"%.3f\" y=\"%.1f\" font-size=\"11\" "
                              "text-anchor=\"middle\">%s</text>\n",
                              x_of(value), kTop, x_of(value), kTop + kPlotH, value, x_of(value), kTop + kPlotH + 16,
                              Label(x, value)));
  }
  for (double value : y.ticks) {
    absl::StrAppend(&svg,
                    absl::StrFormat("<line x1=\"%.1f\" y1=\"%.3f\" x2=\"%.1f\" y2=\"%.3f\" stroke=\"#ddd\"/>"
                                    "<text class=\"ytick\" data-value=\"%.17g\" x=\"%.1f\" y=\"%.3f\" font-size=\"11\" "
                                    "text-anchor=\"end\" dominant-baseline=\"middle\">%s</text>\n",
                                    kLeft, y_of(value), kLeft + kPlotW, y_of(value), value, kLeft - 6, y_of(value),
                                    Label(y, value)));
  }
  absl::StrAppend(&svg, absl::StrFormat("<text class=\"axis-label\" x=\"%.1f\" y=\"%.1f\" font-size=\"12\" "
                                        "text-anchor=\"middle\">peak (%s)</text>\n",
                                        kLeft + kPlotW / 2, kTop + kPlotH + 36, x.unit));
  absl::StrAppend(&svg, absl::StrFormat("<text class=\"axis-label\" x=\"22\" y=\"%.1f\" font-size=\"12\" "
                                        "transform=\"rotate(-90 22 %.1f)\" text-anchor=\"middle\">total time of the "
                                        "primitives (us)</text>\n",
                                        kTop + kPlotH / 2, kTop + kPlotH / 2));
  // The budget.
  if (plan.memory_budget_bytes() > 0) {
    const double bx = x_of(static_cast<double>(plan.memory_budget_bytes()));
    absl::StrAppend(
        &svg, absl::StrFormat("<line class=\"budget\" x1=\"%.3f\" y1=\"%.1f\" x2=\"%.3f\" y2=\"%.1f\" stroke=\"#000\" "
                              "stroke-dasharray=\"6 4\"/>\n",
                              bx, kTop, bx, kTop + kPlotH));
  }
  // The staircase: the least time each peak allows.
  if (time.pareto_size() > 0) {
    std::string points;
    for (int i = 0; i < time.pareto_size(); ++i) {
      const v1::ParetoPoint& p = time.pareto(i);
      const double right =
          i + 1 < time.pareto_size() ? x_of(static_cast<double>(time.pareto(i + 1).peak_bytes())) : kLeft + kPlotW;
      absl::StrAppend(&points, absl::StrFormat("%.3f,%.3f %.3f,%.3f ", x_of(static_cast<double>(p.peak_bytes())),
                                               y_of(p.time_us()), right, y_of(p.time_us())));
    }
    absl::StrAppend(&svg, absl::StrFormat("<polyline class=\"staircase\" fill=\"none\" stroke=\"#1f77b4\" "
                                          "stroke-width=\"1.5\" points=\"%s\"/>\n",
                                          points));
  }
  for (const v1::ParetoPoint& p : time.pareto()) {
    const double peak = static_cast<double>(p.peak_bytes());
    absl::StrAppend(&svg, absl::StrFormat("<circle class=\"point\" data-peak=\"%d\" data-time=\"%.17g\" cx=\"%.3f\" "
                                          "cy=\"%.3f\" r=\"4\" fill=\"#1f77b4\"><title>%s bytes, %s us</title>"
                                          "</circle>\n",
                                          p.peak_bytes(), p.time_us(), x_of(peak), y_of(p.time_us()),
                                          WithCommas(p.peak_bytes()), absl::StrFormat("%.3f", p.time_us())));
  }
  if (chosen) {
    absl::StrAppend(&svg,
                    absl::StrFormat("<circle class=\"chosen\" cx=\"%.3f\" cy=\"%.3f\" r=\"8\" fill=\"none\" "
                                    "stroke=\"#d62728\" stroke-width=\"2\"><title>this plan: %s bytes, %s us</title>"
                                    "</circle>\n",
                                    x_of(static_cast<double>(plan.peak_bytes())), y_of(time.time_us()),
                                    WithCommas(plan.peak_bytes()), absl::StrFormat("%.3f", time.time_us())));
  }
  if (time.pareto_size() == 0) {
    absl::StrAppend(&svg, absl::StrFormat("<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" text-anchor=\"middle\">no "
                                          "frontier in this plan (--pareto)</text>\n",
                                          kLeft + kPlotW / 2, kTop + kPlotH / 2));
  }
  // The legend.
  const double lx = kLeft + kPlotW + 14;
  absl::StrAppend(
      &svg,
      absl::StrFormat("<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"#1f77b4\"/>"
                      "<text class=\"legend\" x=\"%.1f\" y=\"%.1f\" font-size=\"11\">frontier plan</text>\n"
                      "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#1f77b4\"/>"
                      "<text class=\"legend\" x=\"%.1f\" y=\"%.1f\" font-size=\"11\">least time at a "
                      "peak</text>\n",
                      lx + 6, kTop + 10, lx + 16, kTop + 14, lx, kTop + 28, lx + 12, kTop + 28, lx + 16, kTop + 32));
  double legend_y = kTop + 46;
  if (chosen) {
    absl::StrAppend(&svg, absl::StrFormat("<circle cx=\"%.1f\" cy=\"%.1f\" r=\"6\" fill=\"none\" stroke=\"#d62728\" "
                                          "stroke-width=\"2\"/><text class=\"legend\" x=\"%.1f\" y=\"%.1f\" "
                                          "font-size=\"11\">this plan</text>\n",
                                          lx + 6, legend_y, lx + 16, legend_y + 4));
    legend_y += 18;
  }
  if (plan.memory_budget_bytes() > 0) {
    absl::StrAppend(&svg, absl::StrFormat("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#000\" "
                                          "stroke-dasharray=\"4 3\"/><text class=\"legend\" x=\"%.1f\" y=\"%.1f\" "
                                          "font-size=\"11\">budget %s bytes</text>\n",
                                          lx, legend_y, lx + 12, legend_y, lx + 16, legend_y + 4,
                                          WithCommas(plan.memory_budget_bytes())));
  }
  absl::StrAppend(&svg, "</svg>\n");
  return svg;
}

}  // namespace serenity
