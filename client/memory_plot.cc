#include "client/memory_plot.h"

#include <algorithm>
#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/plan_output.h"
#include "client/svg_text.h"
#include "core/baseline_table.h"
#include "core/plan_proto.h"

namespace serenity {
namespace {

constexpr double kWidth = 1060, kLeft = 90, kRight = 230, kPanel = 280, kTop = 40, kGap = 70;

struct Series {
  std::string name;
  std::string color;
  const google::protobuf::RepeatedField<int64_t>* steps;
};

// The smallest 1, 2 or 5 x 10^k (k >= 0) that covers `units` in at most
// `max_intervals` steps.
int64_t NiceStep(int64_t units, int64_t max_intervals) {
  for (int64_t scale = 1;; scale *= 10) {
    for (int64_t m : {1, 2, 5}) {
      if ((units + m * scale - 1) / (m * scale) <= max_intervals) return m * scale;
    }
  }
}

AxisTicks Ticks(int64_t max, int64_t unit_size, const char* unit, int64_t max_intervals) {
  AxisTicks ticks;
  ticks.unit = unit;
  ticks.unit_size = unit_size;
  const int64_t units = std::max<int64_t>(1, (max - 1) / unit_size + 1);
  const int64_t step = NiceStep(units, max_intervals);
  const int64_t intervals = (units + step - 1) / step;
  for (int64_t i = 0; i <= intervals; ++i) ticks.values.push_back(i * step * unit_size);
  ticks.top = ticks.values.back();
  return ticks;
}

constexpr double kTickFont = 11, kLevelFont = 10;

// Axes with round ticks on y (bytes, up to y.top) and x (steps), and labels.
void Axes(std::string& svg, double top, const AxisTicks& y_ticks, int steps, const std::string& y_label) {
  const double plot_w = kWidth - kLeft - kRight;
  absl::StrAppend(
      &svg,
      absl::StrFormat("<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"#444\"/>\n",
                      kLeft, top, plot_w, kPanel));
  for (int64_t value : y_ticks.values) {
    const double y = top + kPanel - kPanel * static_cast<double>(value) / static_cast<double>(y_ticks.top);
    absl::StrAppend(
        &svg, absl::StrFormat(
                  "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                  "<text class=\"ytick\" x=\"%.1f\" y=\"%.1f\" font-size=\"%.0f\" text-anchor=\"end\">%s</text>\n",
                  kLeft, y, kLeft + plot_w, y, kLeft - 6, y + 4, kTickFont, TickLabel(y_ticks, value)));
  }
  const AxisTicks x_ticks = StepTicks(steps);
  for (int64_t value : x_ticks.values) {
    if (value > steps) break;
    const double x = kLeft + plot_w * static_cast<double>(value) / steps;
    absl::StrAppend(
        &svg, absl::StrFormat(
                  "<text class=\"xtick\" x=\"%.1f\" y=\"%.1f\" font-size=\"%.0f\" text-anchor=\"middle\">%s</text>\n",
                  x, top + kPanel + 16, kTickFont, TickLabel(x_ticks, value)));
  }
  absl::StrAppend(&svg,
                  absl::StrFormat("<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" text-anchor=\"middle\">step</text>\n",
                                  kLeft + plot_w / 2, top + kPanel + 34));
  absl::StrAppend(&svg, absl::StrFormat("<text x=\"18\" y=\"%.1f\" font-size=\"12\" transform=\"rotate(-90 18 %.1f)\" "
                                        "text-anchor=\"middle\">%s</text>\n",
                                        top + kPanel / 2, top + kPanel / 2, y_label));
}

}  // namespace

AxisTicks ByteTicks(int64_t max_bytes) {
  constexpr int64_t kKiB = 1024, kMiB = 1024 * 1024;
  if (max_bytes >= 2 * kMiB) return Ticks(max_bytes, kMiB, "MiB", 6);
  if (max_bytes >= 2 * kKiB) return Ticks(max_bytes, kKiB, "KiB", 6);
  return Ticks(max_bytes, 1, "B", 6);
}

AxisTicks StepTicks(int64_t steps) { return Ticks(steps, 1, "", 8); }

std::string TickLabel(const AxisTicks& ticks, int64_t value) {
  if (value == 0 || ticks.unit.empty()) return WithCommas(value);
  return absl::StrCat(WithCommas(value / ticks.unit_size), " ", ticks.unit);
}

std::string MemoryPlotSvg(const v1::Plan& plan) {
  const int steps = std::max(1, plan.step_bytes_size());
  const double plot_w = kWidth - kLeft - kRight;
  // One colour per baseline.
  static const PerBaseline<const char*> kBaselineColors = [] {
    PerBaseline<const char*> colors;
    colors[Baseline::kFileOrder] = "#1f77b4";
    colors[Baseline::kKahn] = "#9467bd";
    colors[Baseline::kGreedy] = "#2ca02c";
    colors[Baseline::kInductor] = "#ff7f0e";
    colors[Baseline::kXla] = "#8c564b";
    return colors;
  }();
  std::vector<Series> series = {{"serenity", "#d62728", &plan.step_bytes()}};
  for (const BaselineInfo& b : BaselineTable()) {
    series.push_back({BaselineDisplayName(b.baseline), kBaselineColors[b.baseline],
                      &BaselineProto(b.baseline, plan.baselines()).step_bytes()});
  }
  int64_t max_y = std::max<int64_t>(1, plan.memory_budget_bytes());
  for (const Series& s : series) {
    for (int64_t v : *s.steps) max_y = std::max(max_y, v);
  }
  for (const v1::OrderTraffic& t : plan.traffic()) {
    for (const v1::TrafficPoint& p : t.points()) max_y = std::max(max_y, p.onchip_bytes());
  }
  max_y = std::max(max_y, plan.arena().size_bytes());
  const AxisTicks y_ticks = ByteTicks(max_y);
  max_y = y_ticks.top;
  const double height = kTop + 2 * kPanel + kGap + 60;
  auto x_of = [&](double step) { return kLeft + plot_w * step / steps; };
  auto y_of = [&](double top, int64_t bytes) { return top + kPanel - kPanel * static_cast<double>(bytes) / max_y; };

  std::string svg = absl::StrFormat(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" font-family=\"sans-serif\">\n"
      "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
      kWidth, height);
  absl::StrAppend(
      &svg,
      absl::StrFormat(
          "<text x=\"%.1f\" y=\"24\" font-size=\"15\" font-weight=\"bold\">%s: live activation bytes per step</text>\n",
          kLeft, SvgEscape(plan.model())));

  // Top panel: one curve per order.
  double top = kTop;
  Axes(svg, top, y_ticks, steps, "live bytes");
  for (size_t i = 0; i < series.size(); ++i) {
    const Series& s = series[i];
    if (s.steps->empty()) continue;
    std::string points;
    for (int t = 0; t < s.steps->size(); ++t) {
      // Steps as plateaus: each step spans [t, t + 1).
      absl::StrAppend(&points, absl::StrFormat("%.1f,%.1f %.1f,%.1f ", x_of(t), y_of(top, s.steps->Get(t)), x_of(t + 1),
                                               y_of(top, s.steps->Get(t))));
    }
    absl::StrAppend(
        &svg,
        absl::StrFormat("<polyline class=\"order\" data-order=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"%s\" "
                        "points=\"%s\"/>\n",
                        s.name, s.color, i == 0 ? "2.2" : "1.2", points));
    const double legend_y = top + 14 + 16 * static_cast<double>(i);
    absl::StrAppend(
        &svg,
        absl::StrFormat("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"2\"/>"
                        "<text class=\"legend\" x=\"%.1f\" y=\"%.1f\" font-size=\"11\">%s (peak %s)</text>\n",
                        kLeft + plot_w + 10, legend_y, kLeft + plot_w + 28, legend_y, s.color, kLeft + plot_w + 32,
                        legend_y + 4, s.name, WithCommas(*std::max_element(s.steps->begin(), s.steps->end()))));
  }
  // The budget and on-chip sizes as dashed lines, each labelled just above
  // its line; labels of close lines are pushed up so that none overlaps the
  // one below it.
  struct Level {
    int64_t bytes;
    std::string label;
    const char* color;
  };
  std::vector<Level> level_list;
  if (plan.memory_budget_bytes() > 0) {
    level_list.push_back({plan.memory_budget_bytes(), "budget " + WithCommas(plan.memory_budget_bytes()), "#000"});
  }
  if (plan.traffic_size() > 0) {
    for (const v1::TrafficPoint& p : plan.traffic(0).points()) {
      level_list.push_back({p.onchip_bytes(), "on-chip " + WithCommas(p.onchip_bytes()), "#777"});
    }
  }
  std::sort(level_list.begin(), level_list.end(), [](const Level& a, const Level& b) { return a.bytes < b.bytes; });
  auto levels = [&](double panel_top) {
    double label_y = std::numeric_limits<double>::infinity();  // baseline of the label below
    for (const Level& l : level_list) {
      const double y = y_of(panel_top, l.bytes);
      label_y = std::min(y - 3, label_y - (kLevelFont + 2));
      absl::StrAppend(
          &svg, absl::StrFormat(
                    "<line class=\"level\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
                    "stroke-dasharray=\"6 4\"/>"
                    "<text class=\"level-label\" x=\"%.1f\" y=\"%.1f\" font-size=\"%.0f\" fill=\"%s\">%s</text>\n",
                    kLeft, y, kLeft + plot_w, y, l.color, kLeft + 4, label_y, kLevelFont, l.color, SvgEscape(l.label)));
    }
  };
  levels(top);

  // Bottom panel: the arena of Serenity's order.
  top = kTop + kPanel + kGap;
  absl::StrAppend(
      &svg,
      absl::StrFormat(
          "<text x=\"%.1f\" y=\"%.1f\" font-size=\"13\" font-weight=\"bold\">arena: %s bytes, one rectangle per buffer "
          "(steps x offsets)</text>\n",
          kLeft, top - 10, WithCommas(plan.arena().size_bytes())));
  Axes(svg, top, y_ticks, steps, "arena offset (bytes)");
  for (const v1::ArenaBuffer& b : plan.arena().buffers()) {
    if (b.size() == 0) continue;
    const char* fill = b.kind() == v1::BUFFER_KIND_WORKSPACE ? "#ffbb78"
                       : b.kind() == v1::BUFFER_KIND_WEIGHT  ? "#c7c7c7"
                                                             : "#aec7e8";
    const double y_hi = y_of(top, b.offset() + b.size()), y_lo = y_of(top, b.offset());
    absl::StrAppend(
        &svg,
        absl::StrFormat("<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\" stroke=\"#1f4e79\" "
                        "stroke-width=\"0.4\"><title>%s: %s bytes at %s, steps %d-%d</title></rect>\n",
                        x_of(b.first_step()), y_hi, std::max(0.5, x_of(b.last_step() + 1) - x_of(b.first_step())),
                        std::max(0.5, y_lo - y_hi), fill, SvgEscape(b.tensor()), WithCommas(b.size()),
                        WithCommas(b.offset()), b.first_step(), b.last_step()));
  }
  levels(top);
  absl::StrAppend(&svg, "</svg>\n");
  return svg;
}

}  // namespace serenity
