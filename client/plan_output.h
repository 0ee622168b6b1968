// Rendering plans for people (summaries, comparison tables) and for tools
// (the stable JSON plan format documented in README.md).
#ifndef SERENITY_CLIENT_PLAN_OUTPUT_H_
#define SERENITY_CLIENT_PLAN_OUTPUT_H_

#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "serenity/v1/scheduler.pb.h"

namespace serenity {

// The JSON plan, keys in the documented order.
nlohmann::ordered_json PlanToJson(const v1::Plan& plan);

// A multi-line human summary of one plan.
std::string PlanSummary(const v1::Plan& plan);

// A comparison table, one row per plan: Serenity's peak against the file,
// Kahn and greedy orders, the arena, the lower bound and the time.
std::string PlanTable(const std::vector<v1::Plan>& plans);

// "optimal", "best_found" or "baseline".
const char* CertificateText(v1::Certificate certificate);

// 1234567 -> "1,234,567".
std::string WithCommas(int64_t value);

}  // namespace serenity

#endif  // SERENITY_CLIENT_PLAN_OUTPUT_H_
