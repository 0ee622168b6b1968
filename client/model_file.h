// Reading model files into PlanRequests.
#ifndef SERENITY_CLIENT_MODEL_FILE_H_
#define SERENITY_CLIENT_MODEL_FILE_H_

#include <string>

#include "absl/status/statusor.h"
#include "serenity/v1/scheduler.pb.h"

namespace serenity {

// Reads `path` into a request's model: files ending in .pbtxt or .textproto
// are a serenity.v1.Graph in protobuf text format, files ending in .pb a
// binary serenity.v1.Graph, anything else an ONNX model, whose initializer
// payloads above 1 KiB are stripped (names, types and dims are kept) so the
// request stays small. model_name is the file's base name without extension.
absl::StatusOr<v1::PlanRequest> ReadModelFile(const std::string& path);

// Reads a JSON object {"op name": bytes, ...} of per-op workspace bytes into
// `options.workspace_bytes`.
absl::Status ReadWorkspaceFile(const std::string& path, v1::PlanOptions& options);

// Reads a JSON list of op indices or of op names into `order`.
absl::Status ReadOrderFile(const std::string& path, v1::GivenOrder& order);

}  // namespace serenity

#endif  // SERENITY_CLIENT_MODEL_FILE_H_
