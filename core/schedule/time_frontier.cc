#include "core/schedule/time_frontier.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "core/memory/simulator.h"
#include "core/schedule/layout_conversions.h"
#include "core/schedule/primitive_weights.h"
#include "core/schedule/time_search.h"
#include "core/util/deadline.h"

namespace serenity {
namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

TimeFrontier SweepTimeFrontier(const BufferModel& buffers, const std::vector<OpId>& start_order,
                               const SearchOptions& limits, double max_time_us) {
  const Clock::time_point deadline = DeadlineIn(limits.time_limit_seconds);
  TimeFrontier frontier;
  // The estimates' bound is the same at every budget: computed once, in a
  // tenth of the time.
  const std::vector<int64_t> surely_live = SurelyLiveBytes(
      buffers,
      deadline == Clock::time_point::max() ? deadline : TimeAfter(Clock::now(), 0.1 * limits.time_limit_seconds));
  bool all_proven = true;
  // Above every peak (every buffer and every op's largest workspace and
  // layout conversions at once, and every op's largest transformed
  // weights, which Graph::Build keeps within 64 bits): the fastest plans.
  int64_t budget = buffers.resident_bytes();
  for (const ActivationBuffer& b : buffers.buffers()) budget += b.bytes;
  const LayoutConversions conversions(buffers.graph());
  const PrimitiveWeights weights(buffers.graph(), buffers.model().count_weights);
  for (OpId u = 0; u < buffers.graph().num_ops(); ++u) {
    const Op& op = buffers.graph().op(u);
    int64_t workspace = op.workspace_bytes;
    int64_t extra = 0;
    for (int a = 0; a < static_cast<int>(op.alternatives.size()); ++a) {
      workspace = std::max(workspace, op.alternatives[a].workspace_bytes);
      extra = std::max(extra, weights.Extra(u, a));
    }
    budget += workspace + conversions.MostConversionBytes(u) + extra;
  }
  while (true) {
    SearchOptions step = limits;
    if (deadline != Clock::time_point::max()) {
      const double left = std::chrono::duration<double>(deadline - Clock::now()).count();
      if (left <= 0) break;
      step.time_limit_seconds = left;
    }
    if (Cancelled(limits)) break;
    TimeSearchResult result = MinimizeTime(buffers, start_order, budget, step, &surely_live);
    frontier.states += result.states;
    if (!result.feasible) {
      // Nothing fits this budget: the sweep is done (when proven).
      frontier.proven = all_proven && result.proven;
      break;
    }
    all_proven = all_proven && result.proven;
    if (result.selection.time_us > max_time_us) {
      frontier.proven = all_proven;
      break;
    }
    FrontierPoint point;
    const Graph chosen = ChosenGraph(buffers.graph(), result.selection.choice);
    point.peak_bytes = PeakOf(BufferModel(chosen, buffers.model()), result.selection.order);
    point.selection = std::move(result.selection);
    budget = point.peak_bytes - 1;
    // Points no faster than this one, at larger peaks, are dominated (after
    // a step cut short by a limit, several may be).
    while (!frontier.points.empty() && frontier.points.back().selection.time_us >= point.selection.time_us) {
      frontier.points.pop_back();
    }
    frontier.points.push_back(std::move(point));
    if (budget < 0) {
      frontier.proven = all_proven;
      break;
    }
  }
  // (Stopped on a limit: proven stays false.) Found by decreasing peak.
  std::reverse(frontier.points.begin(), frontier.points.end());
  return frontier;
}

std::vector<FrontierPoint> ThinFrontier(std::vector<FrontierPoint> points, int max_points) {
  if (max_points < 2 || static_cast<int>(points.size()) <= max_points) {
    if (max_points == 1 && !points.empty()) points.erase(points.begin() + 1, points.end());
    return points;
  }
  std::vector<FrontierPoint> out;
  const double stride = static_cast<double>(points.size() - 1) / (max_points - 1);
  for (int k = 0; k < max_points; ++k) {
    out.push_back(std::move(points[static_cast<size_t>(k * stride + 0.5)]));
  }
  return out;
}

}  // namespace serenity
