#include "client/memory_plot.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/plan_output.h"

namespace serenity {
namespace {

constexpr double kWidth = 1060, kLeft = 90, kRight = 230, kPanel = 280, kTop = 40, kGap = 70;

std::string Escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

struct Series {
  std::string name;
  std::string color;
  const google::protobuf::RepeatedField<int64_t>* steps;
};

// Axes with five ticks on y (bytes) and x (steps), and labels.
void Axes(std::string& svg, double top, int64_t max_y, int steps, const std::string& y_label) {
  const double plot_w = kWidth - kLeft - kRight;
  absl::StrAppend(&svg, absl::StrFormat(
      "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"#444\"/>\n", kLeft, top,
      plot_w, kPanel));
  for (int i = 0; i <= 4; ++i) {
    const double y = top + kPanel - kPanel * i / 4.0;
    const int64_t value = max_y * i / 4;
    absl::StrAppend(&svg, absl::StrFormat(
        "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
        "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"end\">%s</text>\n",
        kLeft, y, kLeft + plot_w, y, kLeft - 6, y + 4, WithCommas(value)));
    const double x = kLeft + plot_w * i / 4.0;
    absl::StrAppend(&svg, absl::StrFormat(
        "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"middle\">%d</text>\n", x, top + kPanel + 16,
        steps * i / 4));
  }
  absl::StrAppend(&svg, absl::StrFormat(
      "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" text-anchor=\"middle\">step</text>\n", kLeft + plot_w / 2,
      top + kPanel + 34));
  absl::StrAppend(&svg, absl::StrFormat(
      "<text x=\"18\" y=\"%.1f\" font-size=\"12\" transform=\"rotate(-90 18 %.1f)\" text-anchor=\"middle\">%s</text>\n",
      top + kPanel / 2, top + kPanel / 2, y_label));
}

}  // namespace

std::string MemoryPlotSvg(const v1::Plan& plan) {
  const int steps = std::max(1, plan.step_bytes_size());
  const double plot_w = kWidth - kLeft - kRight;
  const std::vector<Series> series = {
      {"serenity", "#d62728", &plan.step_bytes()},
      {"file order", "#1f77b4", &plan.baselines().file_order().step_bytes()},
      {"kahn", "#9467bd", &plan.baselines().kahn().step_bytes()},
      {"greedy", "#2ca02c", &plan.baselines().greedy().step_bytes()},
      {"inductor", "#ff7f0e", &plan.baselines().inductor().step_bytes()},
      {"xla", "#8c564b", &plan.baselines().xla().step_bytes()},
  };
  int64_t max_y = std::max<int64_t>(1, plan.memory_budget_bytes());
  for (const Series& s : series) {
    for (int64_t v : *s.steps) max_y = std::max(max_y, v);
  }
  for (const v1::OrderTraffic& t : plan.traffic()) {
    for (const v1::TrafficPoint& p : t.points()) max_y = std::max(max_y, p.onchip_bytes());
  }
  max_y = std::max(max_y, plan.arena().size_bytes());
  const double height = kTop + 2 * kPanel + kGap + 60;
  auto x_of = [&](double step) { return kLeft + plot_w * step / steps; };
  auto y_of = [&](double top, int64_t bytes) { return top + kPanel - kPanel * static_cast<double>(bytes) / max_y; };

  std::string svg = absl::StrFormat(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" font-family=\"sans-serif\">\n"
      "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
      kWidth, height);
  absl::StrAppend(&svg, absl::StrFormat(
      "<text x=\"%.1f\" y=\"24\" font-size=\"15\" font-weight=\"bold\">%s: live activation bytes per step</text>\n",
      kLeft, Escape(plan.model())));

  // Top panel: one curve per order.
  double top = kTop;
  Axes(svg, top, max_y, steps, "live bytes");
  for (size_t i = 0; i < series.size(); ++i) {
    const Series& s = series[i];
    if (s.steps->empty()) continue;
    std::string points;
    for (int t = 0; t < s.steps->size(); ++t) {
      // Steps as plateaus: each step spans [t, t + 1).
      absl::StrAppend(&points, absl::StrFormat("%.1f,%.1f %.1f,%.1f ", x_of(t), y_of(top, s.steps->Get(t)),
                                               x_of(t + 1), y_of(top, s.steps->Get(t))));
    }
    absl::StrAppend(&svg, absl::StrFormat(
        "<polyline class=\"order\" data-order=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"%s\" "
        "points=\"%s\"/>\n",
        s.name, s.color, i == 0 ? "2.2" : "1.2", points));
    const double legend_y = top + 14 + 16 * static_cast<double>(i);
    absl::StrAppend(&svg, absl::StrFormat(
        "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"2\"/>"
        "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\">%s (peak %s)</text>\n",
        kLeft + plot_w + 10, legend_y, kLeft + plot_w + 28, legend_y, s.color, kLeft + plot_w + 32, legend_y + 4,
        s.name, WithCommas(*std::max_element(s.steps->begin(), s.steps->end()))));
  }
  auto level = [&](double panel_top, int64_t bytes, const std::string& label, const char* color) {
    const double y = y_of(panel_top, bytes);
    absl::StrAppend(&svg, absl::StrFormat(
        "<line class=\"level\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-dasharray=\"6 4\"/>"
        "<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\" fill=\"%s\">%s</text>\n",
        kLeft, y, kLeft + plot_w, y, color, kLeft + 4, y - 3, color, Escape(label)));
  };
  auto levels = [&](double panel_top) {
    if (plan.memory_budget_bytes() > 0) {
      level(panel_top, plan.memory_budget_bytes(), "budget " + WithCommas(plan.memory_budget_bytes()), "#000");
    }
    if (plan.traffic_size() > 0) {
      for (const v1::TrafficPoint& p : plan.traffic(0).points()) {
        level(panel_top, p.onchip_bytes(), "on-chip " + WithCommas(p.onchip_bytes()), "#777");
      }
    }
  };
  levels(top);

  // Bottom panel: the arena of Serenity's order.
  top = kTop + kPanel + kGap;
  absl::StrAppend(&svg, absl::StrFormat(
      "<text x=\"%.1f\" y=\"%.1f\" font-size=\"13\" font-weight=\"bold\">arena: %s bytes, one rectangle per buffer "
      "(steps x offsets)</text>\n",
      kLeft, top - 10, WithCommas(plan.arena().size_bytes())));
  Axes(svg, top, max_y, steps, "arena offset (bytes)");
  for (const v1::ArenaBuffer& b : plan.arena().buffers()) {
    if (b.size() == 0) continue;
    const char* fill = b.kind() == v1::BUFFER_KIND_WORKSPACE ? "#ffbb78"
                       : b.kind() == v1::BUFFER_KIND_WEIGHT  ? "#c7c7c7"
                                                              : "#aec7e8";
    const double y_hi = y_of(top, b.offset() + b.size()), y_lo = y_of(top, b.offset());
    absl::StrAppend(&svg, absl::StrFormat(
        "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\" stroke=\"#1f4e79\" "
        "stroke-width=\"0.4\"><title>%s: %s bytes at %s, steps %d-%d</title></rect>\n",
        x_of(b.first_step()), y_hi, std::max(0.5, x_of(b.last_step() + 1) - x_of(b.first_step())),
        std::max(0.5, y_lo - y_hi), fill, Escape(b.tensor()), WithCommas(b.size()), WithCommas(b.offset()),
        b.first_step(), b.last_step()));
  }
  levels(top);
  absl::StrAppend(&svg, "</svg>\n");
  return svg;
}

}  // namespace serenity
