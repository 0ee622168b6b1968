// `serenity-client score MODEL...`: many models in one Score stream.
#ifndef SERENITY_CLIENT_SCORE_COMMAND_H_
#define SERENITY_CLIENT_SCORE_COMMAND_H_

#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "serenity/v1/scheduler.pb.h"

namespace serenity {

// Runs the command with its arguments (after "score"); returns the exit
// status: 0 when every model was scored, 1 when one failed, 2 on usage
// errors.
int RunScore(const std::vector<std::string>& args);

// The JSON line of one result: {"model", "status", "peak_bytes", "feasible",
// "slack_bytes", "certificate", "cache", "lower_bound_bytes", "plan_id",
// "ms"}, or {"model", "status", "error"} for a failure. `status` is "OK" or
// the gRPC code name.
nlohmann::ordered_json ScoreResultToJson(const std::string& model, const v1::ScoreResult& result);

// The same as one text line: "model: OK peak 1,234 B, fits (slack -56 B), optimal, cache miss".
std::string ScoreResultLine(const std::string& model, const v1::ScoreResult& result);

}  // namespace serenity

#endif  // SERENITY_CLIENT_SCORE_COMMAND_H_
