// Rendering plans for people (summaries, comparison tables) and for tools
// (the JSON line format of docs/json-format.md).
#ifndef SERENITY_CLIENT_PLAN_OUTPUT_H_
#define SERENITY_CLIENT_PLAN_OUTPUT_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/baseline_table.h"
#include "nlohmann/json.hpp"
#include "serenity/v1/scheduler.pb.h"

namespace serenity {

// The JSON line of a plan: schema_version, source (the argument the plan
// answers: a model path, "-", a plan id), then every field of `plan` as
// MessageToJson writes it.
nlohmann::ordered_json PlanJsonLine(absl::string_view source, const v1::Plan& plan);

// A multi-line human summary of one plan.
std::string PlanSummary(const v1::Plan& plan);

// A comparison table, one row per plan: Serenity's peak against the file,
// Kahn and greedy orders, the arena, the lower bound and the time.
std::string PlanTable(const std::vector<v1::Plan>& plans);

// 1234567 -> "1,234,567".
std::string WithCommas(int64_t value);

// Prints the plans of one command (`plan`, `get`), one argument at a time:
// with --json a line per argument (a plan line, or an error line); without,
// a summary for one argument and a comparison table of the plans for
// several (written by Finish), failures on standard error.
class PlanPrinter {
 public:
  PlanPrinter(bool json, bool pretty, bool several) : json_(json), pretty_(pretty), several_(several) {}
  // The argument `source` failed with `status`.
  void Fail(absl::string_view source, const absl::Status& status);
  // The argument `source` gave `plan`.
  void Print(absl::string_view source, v1::Plan plan);
  // Writes the table (several arguments, no --json); returns the exit
  // status: 0 when nothing failed, else 1.
  int Finish();

 private:
  bool json_, pretty_, several_;
  int failures_ = 0;
  std::vector<v1::Plan> plans_;
};

// A baseline's name as the tables and the plot print it ("file order").
std::string BaselineDisplayName(Baseline baseline);

}  // namespace serenity

#endif  // SERENITY_CLIENT_PLAN_OUTPUT_H_
