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
// `path` "-" reads the model from standard input (model_name "stdin"), its
// format told from the bytes as ModelFromBytes does. NotFound when the file
// cannot be opened; InvalidArgument when its bytes are not a model of the
// format chosen (or, for "-", when standard input is empty or no format fits).
absl::StatusOr<v1::PlanRequest> ReadModelFile(const std::string& path);

enum class ModelFormat { kOnnx, kGraphBinary, kGraphText };

// The bytes of the file at `path`: NotFound "cannot open '<path>'" when it
// cannot be opened, DataLoss when reading it fails.
absl::StatusOr<std::string> ReadFileBytes(const std::string& path);

// Tells a model's format from its bytes alone (no file name to go by):
//  - a serenity.v1.Graph in text format when the bytes parse as one (text
//    holds no binary wire format: its first byte is a letter, a space or '#');
//  - else, the bytes parsed as protobuf wire format: a binary
//    serenity.v1.Graph when every top-level field is a length-delimited
//    field 1-5 (name, ops, tensors, inputs, outputs); otherwise an ONNX
//    ModelProto when a top-level field is its `graph` (field 7,
//    length-delimited; a Graph has no field 7).
// InvalidArgument naming the expected formats for empty (or all-blank)
// bytes, or bytes none of them fits.
absl::StatusOr<ModelFormat> DetectModelFormat(const std::string& bytes);

// The request for a model in `bytes` of `format` (stripped of weight
// payloads when ONNX, as ReadModelFile does), named `model_name`; errors
// name `source`.
absl::StatusOr<v1::PlanRequest> ModelFromBytes(std::string bytes, ModelFormat format, const std::string& model_name,
                                               const std::string& source);

// Reads a JSON object {"op name": bytes, ...} of per-op workspace bytes into
// `options.workspace_bytes`.
absl::Status ReadWorkspaceFile(const std::string& path, v1::PlanOptions& options);

// Reads a JSON serenity.v1.PrimitiveSet, {"ops": [{"op": NAME,
// "alternatives": [{"name": ..., "time_us": ..., "workspace_bytes": ...},
// ...]}, ...]}, into `options.primitives` (docs/primitives.md);
// InvalidArgument naming the file and the problem.
absl::Status ReadPrimitivesFile(const std::string& path, v1::PlanOptions& options);

// Reads a JSON list of op indices or of op names into `order`.
absl::Status ReadOrderFile(const std::string& path, v1::GivenOrder& order);

}  // namespace serenity

#endif  // SERENITY_CLIENT_MODEL_FILE_H_
