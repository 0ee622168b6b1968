#include "client/plan_output.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace serenity {

const char* CertificateText(v1::Certificate certificate) {
  switch (certificate) {
    case v1::CERTIFICATE_OPTIMAL:
      return "optimal";
    case v1::CERTIFICATE_BEST_FOUND:
      return "best_found";
    default:
      return "baseline";
  }
}

namespace {

const char* KindText(v1::BufferKind kind) {
  switch (kind) {
    case v1::BUFFER_KIND_WORKSPACE:
      return "workspace";
    case v1::BUFFER_KIND_WEIGHT:
      return "weight";
    default:
      return "tensor";
  }
}

nlohmann::ordered_json SummaryJson(const v1::OrderSummary& s) {
  nlohmann::ordered_json j;
  j["peak_bytes"] = s.peak_bytes();
  j["arena_bytes"] = s.arena_bytes();
  j["arena_bytes_ours"] = s.arena_bytes_ours();
  return j;
}

// Ratio of `value` to `reference` as "1.23x".
std::string Ratio(int64_t value, int64_t reference) {
  if (reference <= 0) return "-";
  return absl::StrFormat("%.2fx", static_cast<double>(value) / static_cast<double>(reference));
}

}  // namespace

std::string WithCommas(int64_t value) {
  std::string digits = absl::StrCat(value < 0 ? -value : value);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return value < 0 ? "-" + out : out;
}

nlohmann::ordered_json PlanToJson(const v1::Plan& plan) {
  nlohmann::ordered_json j;
  j["model"] = plan.model();
  j["nodes"] = plan.nodes();
  j["order"] = std::vector<int32_t>(plan.order().begin(), plan.order().end());
  j["order_names"] = std::vector<std::string>(plan.order_names().begin(), plan.order_names().end());
  j["peak_bytes"] = plan.peak_bytes();
  j["lower_bound_bytes"] = plan.lower_bound_bytes();
  j["weight_bytes"] = plan.weight_bytes();
  j["macs"] = plan.macs();
  j["certificate"] = CertificateText(plan.certificate());
  j["memory_model"] = {{"alias_views", plan.memory_model().alias_views()},
                       {"count_weights", plan.memory_model().count_weights()},
                       {"in_place", plan.memory_model().in_place()},
                       {"concat_in_place", plan.memory_model().concat_in_place()}};
  nlohmann::ordered_json buffers = nlohmann::ordered_json::array();
  for (const v1::ArenaBuffer& b : plan.arena().buffers()) {
    nlohmann::ordered_json jb;
    jb["tensor"] = b.tensor();
    jb["kind"] = KindText(b.kind());
    jb["offset"] = b.offset();
    jb["size"] = b.size();
    jb["first_step"] = b.first_step();
    jb["last_step"] = b.last_step();
    jb["aliases"] = std::vector<std::string>(b.aliases().begin(), b.aliases().end());
    if (!b.slice_of().empty()) {
      jb["slice_of"] = b.slice_of();
      jb["slice_offset"] = b.slice_offset();
    }
    buffers.push_back(std::move(jb));
  }
  j["arena"] = {{"size_bytes", plan.arena().size_bytes()},
                {"tflite_size_bytes", plan.arena().tflite_size_bytes()},
                {"alignment", plan.arena().alignment()},
                {"buffers", std::move(buffers)}};
  j["baselines"] = {{"file_order", SummaryJson(plan.baselines().file_order())},
                    {"kahn", SummaryJson(plan.baselines().kahn())},
                    {"greedy", SummaryJson(plan.baselines().greedy())},
                    {"inductor", SummaryJson(plan.baselines().inductor())},
                    {"xla", SummaryJson(plan.baselines().xla())}};
  if (plan.baselines().has_serenity()) j["baselines"]["serenity"] = SummaryJson(plan.baselines().serenity());
  j["memory_budget_bytes"] = plan.memory_budget_bytes();
  j["feasible"] = plan.feasible();
  j["headroom_bytes"] = plan.headroom_bytes();
  j["arena_fits_budget"] = plan.arena_fits_budget();
  nlohmann::ordered_json moves = nlohmann::ordered_json::array();
  for (const v1::Move& m : plan.moves()) {
    moves.push_back({{"tensor", m.tensor()},
                     {"kind", KindText(m.kind())},
                     {"before_step", m.before_step()},
                     {"from_offset", m.from_offset()},
                     {"to_offset", m.to_offset()},
                     {"bytes", m.bytes()}});
  }
  j["moves"] = std::move(moves);
  j["moved_bytes"] = plan.moved_bytes();
  nlohmann::ordered_json steps = nlohmann::ordered_json::array();
  auto placements = [](const google::protobuf::RepeatedPtrField<v1::TensorPlacement>& list) {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (const v1::TensorPlacement& p : list) out.push_back({{"tensor", p.tensor()}, {"offset", p.offset()}});
    return out;
  };
  for (const v1::Step& s : plan.steps()) {
    steps.push_back({{"op", s.op()},
                     {"inputs", placements(s.inputs())},
                     {"outputs", placements(s.outputs())},
                     {"workspace", {{"offset", s.workspace().offset()}, {"size", s.workspace().size()}}}});
  }
  j["steps"] = std::move(steps);
  nlohmann::ordered_json traffic = nlohmann::ordered_json::array();
  for (const v1::OrderTraffic& t : plan.traffic()) {
    nlohmann::ordered_json points = nlohmann::ordered_json::array();
    for (const v1::TrafficPoint& p : t.points()) {
      points.push_back({{"onchip_bytes", p.onchip_bytes()},
                        {"read_bytes", p.read_bytes()},
                        {"write_bytes", p.write_bytes()},
                        {"feasible", p.feasible()},
                        {"infeasible_op", p.infeasible_op()}});
    }
    traffic.push_back({{"order", t.order()}, {"points", std::move(points)}});
  }
  j["traffic"] = std::move(traffic);
  nlohmann::ordered_json fallbacks = nlohmann::ordered_json::array();
  for (const v1::PhaseFallback& f : plan.fallbacks()) {
    fallbacks.push_back({{"phase", f.phase()}, {"reason", f.reason()}, {"used", f.used()}});
  }
  j["fallbacks"] = std::move(fallbacks);
  nlohmann::ordered_json phase_ms = nlohmann::ordered_json::object();
  for (const auto& [phase, ms] : plan.stats().phase_ms()) phase_ms[phase] = ms;
  j["stats"] = {{"solve_ms", plan.stats().solve_ms()},
                {"total_ms", plan.stats().total_ms()},
                {"algorithm", plan.stats().algorithm()},
                {"states_explored", plan.stats().states_explored()},
                {"search_memory_bytes", plan.stats().search_memory_bytes()},
                {"cache", plan.stats().cache()},
                {"phase_ms", std::move(phase_ms)}};
  j["plan_id"] = plan.plan_id();
  return j;
}

std::string PlanSummary(const v1::Plan& plan) {
  std::string out;
  absl::StrAppend(&out, "model        ", plan.model(), " (", plan.nodes(), " ops, ",
                  WithCommas(plan.weight_bytes()), " weight bytes, ", WithCommas(plan.macs()), " MACs)\n");
  int64_t lb = plan.lower_bound_bytes();
  double gap = lb > 0 ? 100.0 * static_cast<double>(plan.peak_bytes() - lb) / static_cast<double>(lb) : 0;
  absl::StrAppend(&out, "order        ", plan.stats().algorithm(), ", certificate ",
                  CertificateText(plan.certificate()), "\n");
  absl::StrAppend(&out, "peak         ", WithCommas(plan.peak_bytes()), " bytes (lower bound ",
                  WithCommas(lb), absl::StrFormat(", gap %.1f%%)\n", gap));
  absl::StrAppend(&out, "arena        ", WithCommas(plan.arena().size_bytes()), " bytes, ",
                  plan.arena().buffers_size(), " buffers, alignment ", plan.arena().alignment(), "\n");
  if (plan.memory_budget_bytes() > 0) {
    absl::StrAppend(&out, "budget       ", WithCommas(plan.memory_budget_bytes()), " bytes: ",
                    plan.feasible() ? "fits, " : "DOES NOT FIT, ", WithCommas(plan.headroom_bytes()),
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
  summary_row("file order", plan.baselines().file_order());
  summary_row("kahn", plan.baselines().kahn());
  summary_row("greedy", plan.baselines().greedy());
  summary_row("inductor", plan.baselines().inductor());
  summary_row("xla", plan.baselines().xla());
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
        const std::string cell = !p.feasible()                                ? "op too big"
                                 : p.read_bytes() + p.write_bytes() == 0 ? "none"
                                                                          : WithCommas(p.read_bytes() + p.write_bytes());
        absl::StrAppend(&out, absl::StrFormat(" %14s", cell));
      }
      absl::StrAppend(&out, "\n");
    }
  }
  const std::string& cache = plan.stats().cache();
  if (cache == "local" || cache == "shared") {
    // solve_ms is from the call that computed the plan; total_ms is this one.
    absl::StrAppend(&out, absl::StrFormat("\ntime         %.2f ms from the %s cache (solved in %.2f ms when first planned)\n",
                                          plan.stats().total_ms(), cache == "local" ? "server's" : "shared",
                                          plan.stats().solve_ms()));
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
  std::vector<std::vector<std::string>> rows = {
      {"model", "ops", "serenity", "file order", "kahn", "greedy", "inductor", "xla", "arena", "lower bound", "cert",
       "total ms"}};
  for (const v1::Plan& p : plans) {
    rows.push_back({p.model(), absl::StrCat(p.nodes()), WithCommas(p.peak_bytes()),
                    WithCommas(p.baselines().file_order().peak_bytes()),
                    WithCommas(p.baselines().kahn().peak_bytes()), WithCommas(p.baselines().greedy().peak_bytes()),
                    WithCommas(p.baselines().inductor().peak_bytes()), WithCommas(p.baselines().xla().peak_bytes()),
                    WithCommas(p.arena().size_bytes()), WithCommas(p.lower_bound_bytes()),
                    CertificateText(p.certificate()), absl::StrFormat("%.1f", p.stats().total_ms())});
  }
  std::vector<size_t> width(rows[0].size(), 0);
  for (const auto& row : rows) {
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  }
  std::string out;
  for (const auto& row : rows) {
    for (size_t c = 0; c < row.size(); ++c) {
      // Text columns (model, certificate) align left, numbers right.
      const bool left = c == 0 || c == 10;
      const std::string pad(width[c] - row[c].size(), ' ');
      absl::StrAppend(&out, c == 0 ? "" : "  ", left ? row[c] + pad : pad + row[c]);
    }
    out += "\n";
  }
  return out;
}

}  // namespace serenity
