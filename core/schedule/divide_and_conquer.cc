#include "core/schedule/divide_and_conquer.h"

#include <algorithm>
#include <chrono>

#include "core/memory/simulator.h"
#include "core/schedule/baselines.h"
#include "core/schedule/partition.h"
#include "core/schedule/signature_dp.h"

namespace serenity {
namespace {

using Clock = std::chrono::steady_clock;

void Accumulate(const SearchStats& from, SearchStats& into) {
  into.states += from.states;
  into.peak_memo_bytes = std::max(into.peak_memo_bytes, from.peak_memo_bytes);
  into.checks += 1;
  into.hit_limit = into.hit_limit || from.hit_limit;
}

}  // namespace

MinimizeResult SegmentedDp(const BufferModel& buffers, const SegmentedDpOptions& options) {
  const Clock::time_point start = Clock::now();
  const double total = options.search.time_limit_seconds;
  auto remaining = [&] {
    if (total <= 0) return 0.0;  // no limit
    double left = total - std::chrono::duration<double>(Clock::now() - start).count();
    return std::max(left, 1e-6);
  };
  const int64_t tau_max = PeakOf(buffers, KahnOrder(buffers.graph()));

  MinimizeResult result;
  Subproblem part;
  for (std::vector<OpId>& segment : SplitAtCutPoints(buffers.graph())) {
    part.ops = std::move(segment);
    MinimizeResult solved;
    if (!options.soft_budget) {
      SearchOptions search = options.search;
      search.time_limit_seconds = remaining();
      solved = SignatureDp(buffers, search, INT64_MAX, part);
      Accumulate(solved.stats, result.stats);
    } else {
      int64_t tau_old = tau_max, tau_new = tau_max;
      for (int step = 0; step < options.max_budget_steps && solved.order.empty(); ++step) {
        SearchOptions search = options.search;
        search.time_limit_seconds =
            total > 0 ? std::min(options.step_time_limit_seconds, remaining()) : options.step_time_limit_seconds;
        solved = SignatureDp(buffers, search, tau_new, part);
        Accumulate(solved.stats, result.stats);
        if (!solved.order.empty()) break;
        const int64_t old = tau_old;
        tau_old = tau_new;
        tau_new = solved.stats.hit_limit ? tau_new / 2 : (tau_new + old) / 2;
        if ((total > 0 && remaining() <= 1e-6) || Cancelled(options.search)) break;
      }
    }
    if (solved.order.empty()) {
      result.order.clear();
      result.stats.hit_limit = true;
      return result;
    }
    part.done.insert(part.done.end(), solved.order.begin(), solved.order.end());
  }
  result.order = std::move(part.done);
  result.peak_bytes = PeakOf(buffers, result.order);
  result.lower_bound_bytes = result.peak_bytes;
  result.optimal = true;
  return result;
}

}  // namespace serenity
