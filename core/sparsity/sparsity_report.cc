#include "core/sparsity/sparsity_report.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "core/planner.h"
#include "core/sparsity/nested_sparsity.h"
#include "core/util/saturating.h"

namespace serenity {
namespace {

// Whether `bytes` fit `budget` (not positive: none), by the planner's rule.
bool Fits(int64_t budget, int64_t bytes) { return ApplyBudget(budget, bytes, /*arena_bytes=*/0).feasible; }

// Live activation bytes of each step: step_bytes without the counted weights.
std::vector<int64_t> ActivationBytes(const v1::Plan& plan) {
  std::vector<int64_t> bytes(plan.step_bytes().begin(), plan.step_bytes().end());
  for (const v1::ArenaBuffer& b : plan.arena().buffers()) {
    if (b.kind() != v1::BUFFER_KIND_WEIGHT) continue;
    for (int32_t s = std::max(0, b.first_step()); s <= b.last_step() && s < static_cast<int32_t>(bytes.size()); ++s) {
      bytes[s] -= b.size();
    }
  }
  return bytes;
}

// Each step's share of one inference's time: its op's MACs over all, or
// 1 / ops when the graph has no MACs.
std::vector<double> TimeShares(const Graph& graph, const v1::Plan& plan) {
  std::vector<double> shares;
  const double total = static_cast<double>(graph.total_macs());
  for (const std::string& name : plan.order_names()) {
    const std::optional<OpId> u = graph.FindOp(name);
    const double macs = u.has_value() ? static_cast<double>(graph.op(*u).macs) : 0;
    shares.push_back(total > 0 ? macs / total : 1.0 / plan.order_names_size());
  }
  return shares;
}

// The activation buffers live across a switch after step k, at their offsets
// at step k.
void AddLiveTensors(const v1::Plan& plan, int32_t k, v1::SparsitySwitchPoint* point) {
  int64_t live_bytes = 0;
  for (const v1::ArenaBuffer& b : plan.arena().buffers()) {
    if (b.kind() != v1::BUFFER_KIND_TENSOR || b.first_step() > k || b.last_step() <= k) continue;
    int64_t offset = b.offset();
    for (const v1::Move& m : plan.moves()) {
      if (m.tensor() == b.tensor() && m.kind() == b.kind() && m.before_step() <= k) offset = m.to_offset();
    }
    v1::TensorPlacement* live = point->add_live();
    live->set_tensor(b.tensor());
    live->set_offset(offset);
    live->set_size(b.size());
    live_bytes += b.size();
  }
  point->set_live_bytes(live_bytes);
}

}  // namespace

void AddSparsityReport(const Graph& graph, const PlanOptions& options, v1::Plan* plan) {
  plan->clear_sparsity();
  if (options.levels.empty() || options.score_only) return;
  const int64_t budget = options.memory_budget_bytes;
  v1::SparsityReport* report = plan->mutable_sparsity();
  report->set_one_plan_for_all_levels(true);

  const std::vector<int64_t> activations = ActivationBytes(*plan);
  int64_t activation_peak = 0;
  for (int64_t bytes : activations) activation_peak = std::max(activation_peak, bytes);
  report->set_activation_peak_bytes(activation_peak);

  const SparseWeightBytes weights = CountWeightBytes(options.levels, WeightMatricesOf(graph));
  for (size_t l = 0; l < options.levels.size(); ++l) {
    v1::SparsityLevelReport* level = report->add_levels();
    level->set_name(options.levels[l].name);
    level->set_time_us(options.levels[l].time_us);
    level->set_dense_weight_bytes(weights.levels[l].dense_bytes);
    level->set_csr_weight_bytes(weights.levels[l].csr_bytes);
    level->set_peak_bytes(SaturatingAdd(activation_peak, weights.levels[l].csr_bytes));
    level->set_fits_budget(Fits(budget, level->peak_bytes()));
    if (budget > 0 && level->fits_budget() && report->densest_fitting_level().empty()) {
      report->set_densest_fitting_level(level->name());
    }
  }
  report->set_separate_weight_bytes(weights.separate_bytes);
  report->set_nested_weight_bytes(weights.nested_bytes);
  report->set_nested_saving_bytes(weights.separate_bytes - weights.nested_bytes);

  const std::vector<double> shares = TimeShares(graph, *plan);
  const int32_t steps = plan->order_names_size();
  for (const std::string& op : options.switch_points) {
    v1::SparsitySwitchPoint* point = report->add_switch_points();
    point->set_op(op);
    const int32_t k = static_cast<int32_t>(std::find(plan->order_names().begin(), plan->order_names().end(), op) -
                                           plan->order_names().begin());
    point->set_step(k);
    AddLiveTensors(*plan, k, point);
    // Activation peaks and time shares before (0..k) and after (k+1..) the switch.
    int64_t before_peak = 0;
    int64_t after_peak = 0;
    double before_share = 0;
    double after_share = 0;
    for (int32_t s = 0; s < steps; ++s) {
      const int64_t bytes = s < static_cast<int32_t>(activations.size()) ? activations[s] : 0;
      if (s <= k) {
        before_peak = std::max(before_peak, bytes);
        before_share += shares[s];
      } else {
        after_peak = std::max(after_peak, bytes);
        after_share += shares[s];
      }
    }
    for (size_t d = 0; d + 1 < options.levels.size(); ++d) {
      v1::SparsitySwitch* change = point->add_switches();
      change->set_from_level(options.levels[d].name);
      change->set_to_level(options.levels[d + 1].name);
      const int64_t after = k + 1 < steps ? SaturatingAdd(after_peak, weights.levels[d + 1].csr_bytes) : 0;
      change->set_peak_bytes(std::max(SaturatingAdd(before_peak, weights.levels[d].csr_bytes), after));
      change->set_time_us(options.levels[d].time_us * before_share + options.levels[d + 1].time_us * after_share);
      change->set_fits_budget(Fits(budget, change->peak_bytes()));
    }
  }
}

}  // namespace serenity
