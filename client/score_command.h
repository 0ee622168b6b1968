// `serenity-client score MODEL...`: many models in one Score stream.
#ifndef SERENITY_CLIENT_SCORE_COMMAND_H_
#define SERENITY_CLIENT_SCORE_COMMAND_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"
#include "serenity/v1/scheduler.pb.h"

namespace serenity {

// Runs the command with its arguments (after "score"); returns the exit
// status: 0 when every model was scored, 1 when one failed, 2 on usage
// errors.
int RunScore(const std::vector<std::string>& args);

// The model paths of a --from-file list: one per line, surrounding spaces
// trimmed; blank lines and lines starting with '#' skipped.
std::vector<std::string> ParseModelList(absl::string_view text);

// The JSON line of one result (docs/json-format.md): schema_version, source
// (the model argument), then the result's fields as MessageToJson writes
// them except `code` and `error`; a failed candidate instead gives
// schema_version, source, model, id, index and error {code, message}.
nlohmann::ordered_json ScoreResultJsonLine(absl::string_view source, const v1::ScoreResult& result);

// The same as one text line: "model: OK peak 1,234 B, fits (slack -56 B), optimal, cache miss".
std::string ScoreResultLine(absl::string_view model, const v1::ScoreResult& result);

}  // namespace serenity

#endif  // SERENITY_CLIENT_SCORE_COMMAND_H_
