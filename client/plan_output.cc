#include "client/plan_output.h"

#include <algorithm>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "client/json_format.h"
#include "core/baseline_table.h"
#include "core/plan_proto.h"

namespace serenity {

namespace {

// Ratio of `value` to `reference` as "1.23x".
std::string Ratio(int64_t value, int64_t reference) {
  if (reference <= 0) return "-";
  return absl::StrFormat("%.2fx", static_cast<double>(value) / static_cast<double>(reference));
}

// The SparsityReport (issue 20), compactly: one row per level, the nested
// saving, and each switch point's live tensors and level pairs.
void AppendSparsity(const v1::SparsityReport& r, bool budget, std::string* out) {
  absl::StrAppend(out,
                  "\nsparsity     one order and one arena serve every level (sparsity keeps shapes); activation peak ",
                  WithCommas(r.activation_peak_bytes()), " bytes\n");
  absl::StrAppend(out, absl::StrFormat("  %-12s %10s %14s %14s %16s%s\n", "level", "time us", "weights", "CSR",
                                       "act + CSR", budget ? "  budget" : ""));
  for (const v1::SparsityLevelReport& l : r.levels()) {
    absl::StrAppend(out,
                    absl::StrFormat("  %-12s %10.1f %14s %14s %16s%s\n", l.name(), l.time_us(),
                                    WithCommas(l.dense_weight_bytes()), WithCommas(l.csr_weight_bytes()),
                                    WithCommas(l.peak_bytes()), budget ? (l.fits_budget() ? "  fits" : "  over") : ""));
  }
  const double saving = r.separate_weight_bytes() > 0 ? 100.0 * static_cast<double>(r.nested_saving_bytes()) /
                                                            static_cast<double>(r.separate_weight_bytes())
                                                      : 0;
  absl::StrAppend(out, "  nested CSR ", WithCommas(r.nested_weight_bytes()), " bytes vs separate copies ",
                  WithCommas(r.separate_weight_bytes()), absl::StrFormat(": %.1f%% less\n", saving));
  if (budget) {
    absl::StrAppend(out, "  densest level within the budget: ",
                    r.densest_fitting_level().empty() ? "none" : r.densest_fitting_level(), "\n");
  }
  for (const v1::SparsitySwitchPoint& p : r.switch_points()) {
    absl::StrAppend(out, "  switch after ", p.op(), " (step ", p.step(), "): ", p.live_size(), " live tensors, ",
                    WithCommas(p.live_bytes()), " bytes, offsets kept:");
    constexpr int kShown = 4;
    for (int i = 0; i < p.live_size() && i < kShown; ++i) {
      absl::StrAppend(out, " ", p.live(i).tensor(), "@", WithCommas(p.live(i).offset()));
    }
    if (p.live_size() > kShown) absl::StrAppend(out, " +", p.live_size() - kShown, " more");
    absl::StrAppend(out, "\n");
    for (const v1::SparsitySwitch& s : p.switches()) {
      absl::StrAppend(out,
                      absl::StrFormat("    %-24s peak %14s  time %10.1f us%s\n",
                                      absl::StrCat(s.from_level(), " -> ", s.to_level()), WithCommas(s.peak_bytes()),
                                      s.time_us(), budget ? (s.fits_budget() ? "  fits" : "  over") : ""));
    }
  }
}

}  // namespace

std::string BaselineDisplayName(Baseline baseline) { return absl::StrReplaceAll(BaselineName(baseline), {{"_", " "}}); }

std::string WithCommas(int64_t value) {
  std::string digits = absl::StrCat(value < 0 ? -value : value);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return value < 0 ? "-" + out : out;
}

nlohmann::ordered_json PlanJsonLine(absl::string_view source, const v1::Plan& plan) {
  nlohmann::ordered_json line = JsonLineHeader(source);
  nlohmann::ordered_json fields = MessageToJson(plan);
  for (auto it = fields.begin(); it != fields.end(); ++it) line[it.key()] = std::move(it.value());
  return line;
}

std::string PlanSummary(const v1::Plan& plan) {
  std::string out;
  absl::StrAppend(&out, "model        ", plan.model(), " (", plan.nodes(), " ops, ", WithCommas(plan.weight_bytes()),
                  " weight bytes, ", WithCommas(plan.macs()), " MACs)\n");
  int64_t lb = plan.lower_bound_bytes();
  double gap = lb > 0 ? 100.0 * static_cast<double>(plan.peak_bytes() - lb) / static_cast<double>(lb) : 0;
  absl::StrAppend(&out, "order        ", plan.stats().algorithm(), ", certificate ", EnumShortName(plan.certificate()),
                  "\n");
  absl::StrAppend(&out, "peak         ", WithCommas(plan.peak_bytes()), " bytes (lower bound ", WithCommas(lb),
                  absl::StrFormat(", gap %.1f%%)\n", gap));
  absl::StrAppend(&out, "arena        ", WithCommas(plan.arena().size_bytes()), " bytes, ", plan.arena().buffers_size(),
                  " buffers, alignment ", plan.arena().alignment(), "\n");
  if (plan.has_rewrite()) {  // identity graph rewriting (issue 17)
    const v1::RewriteReport& r = plan.rewrite();
    absl::StrAppend(&out, "rewrite      ", r.sites_applied(), " of ", r.sites_found(),
                    " rewrite sites applied (chosen ", r.choice(), "), ", r.ops_before(), " -> ", r.ops_after(),
                    " ops; peak without ", WithCommas(r.peak_bytes_without()), " bytes (",
                    EnumShortName(r.certificate_without()), ")\n");
    if (r.sites_found() == 0 && r.notes_size() > 0) absl::StrAppend(&out, "             ", r.notes(0), "\n");
  }
  if (plan.has_time()) {  // primitive selection (issue 19)
    const v1::TimeReport& t = plan.time();
    absl::StrAppend(
        &out, absl::StrFormat("time         %.3f us (%s, lower bound %.3f us) of %d ops' primitives; "
                              "fastest everywhere %.3f us, least workspace everywhere %.3f us\n",
                              t.time_us(), EnumShortName(t.certificate()), t.lower_bound_us(), t.primitives_size(),
                              t.fastest_everywhere_us(), t.least_workspace_everywhere_us()));
    constexpr int kShown = 8;
    for (int i = 0; i < t.primitives_size() && i < kShown; ++i) {
      const v1::ChosenPrimitive& c = t.primitives(i);
      // (Transformed weights: the bytes its weights take in its form.)
      const std::string weights =
          c.weight_bytes() == 0 ? "" : absl::StrCat(", ", WithCommas(c.weight_bytes()), " bytes of weights");
      absl::StrAppend(&out, absl::StrFormat("             %s: %s%s (%.3f us, %s bytes of workspace%s)\n", c.op(),
                                            c.name(), c.layout().empty() ? "" : absl::StrCat(", ", c.layout()),
                                            c.time_us(), WithCommas(c.workspace_bytes()), weights));
      for (const v1::ChosenTransform& x : c.transforms()) {
        absl::StrAppend(&out, absl::StrFormat("               converts %s from %s (%.3f us, %s bytes)\n", x.tensor(),
                                              x.from_layout(), x.time_us(), WithCommas(x.workspace_bytes())));
      }
    }
    if (t.primitives_size() > kShown) {
      absl::StrAppend(&out, "             ... ", t.primitives_size() - kShown, " more (--json lists them all)\n");
    }
    if (t.transform_time_us() > 0) {
      absl::StrAppend(&out,
                      absl::StrFormat("             of which %.3f us converting layouts\n", t.transform_time_us()));
    }
    if (t.max_time_us() > 0) absl::StrAppend(&out, absl::StrFormat("             within %.3f us\n", t.max_time_us()));
    if (t.catalogue_ops() > 0) {
      absl::StrAppend(&out, "             catalogue ", t.catalogue_ops(),
                      " ops (alternatives from the built-in cost model; --no-catalogue: none)\n");
    }
    if (t.pareto_size() > 0) {
      absl::StrAppend(&out, "pareto       ", t.pareto_size(), " plans of the (peak, time) frontier",
                      t.pareto_proven() ? " (proven)" : " (not proven: a limit stopped the sweep)",
                      t.pareto_thinned() ? ", thinned" : "", "\n");
      absl::StrAppend(&out, absl::StrFormat("  %14s %14s %14s\n", "peak bytes", "time us", "arena bytes"));
      for (const v1::ParetoPoint& p : t.pareto()) {
        absl::StrAppend(&out, absl::StrFormat("  %14s %14.3f %14s\n", WithCommas(p.peak_bytes()), p.time_us(),
                                              WithCommas(p.arena().size_bytes())));
      }
    }
    if (t.levels_size() > 0) {  // several budgets
      absl::StrAppend(&out, "levels       ", t.levels_size(),
                      " budgets (the plan above is the first's); moved: tensors at another offset than the "
                      "level before\n");
      absl::StrAppend(&out, absl::StrFormat("  %14s %8s %14s %14s %14s %8s\n", "budget bytes", "feasible", "peak bytes",
                                            "time us", "arena bytes", "moved"));
      for (const v1::BudgetLevel& l : t.levels()) {
        absl::StrAppend(&out, absl::StrFormat("  %14s %8s %14s %14.3f %14s %8d\n", WithCommas(l.budget_bytes()),
                                              l.feasible() ? "yes" : "NO", WithCommas(l.peak_bytes()), l.time_us(),
                                              WithCommas(l.arena().size_bytes()), l.moved_tensors_size()));
      }
    }
    if (t.baselines_size() > 0) {  // --primitive-baselines
      absl::StrAppend(&out,
                      "baselines    other ways to choose (peak: the least found in Serenity's model; summed: "
                      "the summed-footprint model)\n");
      absl::StrAppend(&out, absl::StrFormat("  %-24s %14s %14s %-10s %-5s %16s %s\n", "choice", "time us", "peak bytes",
                                            "peak cert", "fits", "summed bytes", "summed fits"));
      const int64_t budget = plan.memory_budget_bytes();
      const auto row = [&out, budget](const std::string& name, double time_us, int64_t peak,
                                      v1::Certificate certificate, bool fits, int64_t summed) {
        absl::StrAppend(&out, absl::StrFormat("  %-24s %14.3f %14s %-10s %-5s %16s %s\n", name, time_us,
                                              WithCommas(peak), EnumShortName(certificate), fits ? "yes" : "no",
                                              WithCommas(summed), budget <= 0 || summed <= budget ? "yes" : "no"));
      };
      row("together (this plan)", t.time_us(), plan.peak_bytes(), plan.certificate(), plan.feasible(),
          t.summed_footprint_bytes());
      for (const v1::PrimitiveBaseline& b : t.baselines()) {
        row(b.name(), b.time_us(), b.peak_bytes(), b.certificate(), b.fits(), b.summed_footprint_bytes());
      }
    }
  }
  if (plan.memory_budget_bytes() > 0) {
    absl::StrAppend(&out, "budget       ", WithCommas(plan.memory_budget_bytes()),
                    " bytes: ", plan.feasible() ? "fits, " : "DOES NOT FIT, ", WithCommas(plan.headroom_bytes()),
                    " bytes of headroom\n");
    if (plan.moves_size() > 0) {
      absl::StrAppend(&out, "moves        ", plan.moves_size(), " defragmentation moves copy ",
                      WithCommas(plan.moved_bytes()), " bytes so the arena fits the budget\n");
    } else if (plan.feasible() && !plan.arena_fits_budget()) {
      absl::StrAppend(&out, "moves        the arena does not fit the budget even with moves (alignment)\n");
    }
  }
  absl::StrAppend(&out, "memory model alias_views=", plan.memory_model().alias_views() ? "on" : "off",
                  " count_weights=", plan.memory_model().count_weights() ? "on" : "off",
                  " in_place=", plan.memory_model().in_place() ? "on" : "off",
                  " concat_in_place=", plan.memory_model().concat_in_place() ? "on" : "off", "\n\n");
  absl::StrAppend(&out, absl::StrFormat("  %-12s %14s %14s %14s %10s\n", "order", "peak bytes", "arena TFLite",
                                        "arena ours", "vs serenity"));
  const bool given = plan.stats().algorithm() == "given";
  const int64_t reference =
      given && plan.baselines().has_serenity() ? plan.baselines().serenity().peak_bytes() : plan.peak_bytes();
  auto row = [&](const std::string& name, int64_t peak, int64_t tflite, int64_t ours) {
    absl::StrAppend(&out, absl::StrFormat("  %-12s %14s %14s %14s %10s\n", name, WithCommas(peak), WithCommas(tflite),
                                          WithCommas(ours), Ratio(peak, reference)));
  };
  auto summary_row = [&](const std::string& name, const v1::OrderSummary& s) {
    row(name, s.peak_bytes(), s.arena_bytes(), s.arena_bytes_ours());
  };
  row(given ? "given order" : "serenity", plan.peak_bytes(), plan.arena().tflite_size_bytes(),
      plan.arena().size_bytes());
  if (given && plan.baselines().has_serenity()) summary_row("serenity", plan.baselines().serenity());
  for (const BaselineInfo& b : BaselineTable()) {
    summary_row(BaselineDisplayName(b.baseline), BaselineProto(b.baseline, plan.baselines()));
  }
  if (plan.traffic_size() > 0) {
    absl::StrAppend(&out, "\noff-chip traffic (bytes read + written; Belady eviction)\n");
    absl::StrAppend(&out, absl::StrFormat("  %-12s", "on-chip"));
    for (const v1::TrafficPoint& p : plan.traffic(0).points()) {
      absl::StrAppend(&out, absl::StrFormat(" %14s", WithCommas(p.onchip_bytes())));
    }
    absl::StrAppend(&out, "\n");
    for (const v1::OrderTraffic& t : plan.traffic()) {
      absl::StrAppend(&out, absl::StrFormat("  %-12s", t.order()));
      for (const v1::TrafficPoint& p : t.points()) {
        const std::string cell = !p.feasible()                           ? "op too big"
                                 : p.read_bytes() + p.write_bytes() == 0 ? "none"
                                                                         : WithCommas(p.read_bytes() + p.write_bytes());
        absl::StrAppend(&out, absl::StrFormat(" %14s", cell));
      }
      absl::StrAppend(&out, "\n");
    }
  }
  if (plan.memories_size() > 0) {  // several memories (issue 18)
    absl::StrAppend(&out, "\nmemories (fastest first; byte-steps held of the most any placement could)\n");
    absl::StrAppend(&out, absl::StrFormat("  %-12s %14s %14s %8s %18s %7s %16s\n", "memory", "capacity", "arena",
                                          "buffers", "byte-steps", "of max", "access bytes"));
    for (const v1::MemoryPlacement& m : plan.memories()) {
      const std::string share =
          m.byte_steps_bound() > 0
              ? absl::StrFormat("%.1f%%", 100.0 * static_cast<double>(m.byte_steps()) / m.byte_steps_bound())
              : "-";
      absl::StrAppend(&out,
                      absl::StrFormat("  %-12s %14s %14s %8d %18s %7s %16s\n", m.name(), WithCommas(m.capacity_bytes()),
                                      WithCommas(m.arena_bytes()), m.buffers_size(), WithCommas(m.byte_steps()), share,
                                      WithCommas(m.access_bytes())));
    }
  }
  if (plan.has_sparsity()) AppendSparsity(plan.sparsity(), plan.memory_budget_bytes() > 0, &out);
  const std::string& cache = plan.stats().cache();
  if (cache == "local" || cache == "shared") {
    // solve_ms is from the call that computed the plan; total_ms is this one.
    absl::StrAppend(
        &out,
        absl::StrFormat("\ntime         %.2f ms from the %s cache (solved in %.2f ms when first planned)\n",
                        plan.stats().total_ms(), cache == "local" ? "server's" : "shared", plan.stats().solve_ms()));
  } else {
    absl::StrAppend(&out, absl::StrFormat("\ntime         solve %.2f ms, total %.2f ms\n", plan.stats().solve_ms(),
                                          plan.stats().total_ms()));
  }
  if (plan.stats().states_explored() > 0) {
    absl::StrAppend(&out, "search       ", WithCommas(plan.stats().states_explored()), " states, ",
                    WithCommas(plan.stats().search_memory_bytes()), " bytes of memo\n");
  }
  for (const v1::PhaseFallback& f : plan.fallbacks()) {
    absl::StrAppend(&out, "fell back    ", f.phase(), " (", f.reason(), "): ", f.used(), "\n");
  }
  return out;
}

std::string PlanTable(const std::vector<v1::Plan>& plans) {
  std::vector<std::string> header = {"model", "ops", "serenity"};
  for (const BaselineInfo& b : BaselineTable()) header.push_back(BaselineDisplayName(b.baseline));
  header.insert(header.end(), {"arena", "lower bound", "cert", "total ms"});
  std::vector<std::vector<std::string>> rows = {header};
  for (const v1::Plan& p : plans) {
    std::vector<std::string> row = {p.model(), absl::StrCat(p.nodes()), WithCommas(p.peak_bytes())};
    for (const BaselineInfo& b : BaselineTable()) {
      row.push_back(WithCommas(BaselineProto(b.baseline, p.baselines()).peak_bytes()));
    }
    row.insert(row.end(), {WithCommas(p.arena().size_bytes()), WithCommas(p.lower_bound_bytes()),
                           EnumShortName(p.certificate()), absl::StrFormat("%.1f", p.stats().total_ms())});
    rows.push_back(std::move(row));
  }
  std::vector<size_t> width(rows[0].size(), 0);
  for (const auto& row : rows) {
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  }
  std::string out;
  for (const auto& row : rows) {
    for (size_t c = 0; c < row.size(); ++c) {
      // Text columns (model, certificate) align left, numbers right.
      const bool left = c == 0 || rows[0][c] == "cert";
      const std::string pad(width[c] - row[c].size(), ' ');
      absl::StrAppend(&out, c == 0 ? "" : "  ", left ? row[c] + pad : pad + row[c]);
    }
    out += "\n";
  }
  return out;
}

void PlanPrinter::Fail(absl::string_view source, const absl::Status& status) {
  ++failures_;
  if (json_) {
    std::cout << FormatJsonLine(ErrorLine(source, status), pretty_) << std::endl;
  } else {
    std::cerr << source << ": " << status.message() << "\n";
  }
}

void PlanPrinter::Print(absl::string_view source, v1::Plan plan) {
  if (json_) {
    std::cout << FormatJsonLine(PlanJsonLine(source, plan), pretty_) << std::endl;
  } else if (!several_) {
    std::cout << PlanSummary(plan);
  }
  if (several_ && !json_) plans_.push_back(std::move(plan));  // for Finish's table
}

int PlanPrinter::Finish() {
  if (several_ && !json_ && !plans_.empty()) std::cout << PlanTable(plans_);
  return failures_ == 0 ? 0 : 1;
}

}  // namespace serenity
