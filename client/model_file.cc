#include "client/model_file.h"

#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/onnx/onnx_import.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/text_format.h"
#include "google/protobuf/unknown_field_set.h"
#include "google/protobuf/util/json_util.h"
#include "nlohmann/json.hpp"

namespace serenity {

absl::StatusOr<std::string> ReadFileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open '", path, "'"));
  std::ostringstream bytes;
  bytes << in.rdbuf();
  if (in.bad()) return absl::DataLossError(absl::StrCat("cannot read '", path, "'"));
  return bytes.str();
}

namespace {

// A text-format parse that reports nothing (binary bytes are expected to
// fail it).
class SilentErrors : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int, google::protobuf::io::ColumnNumber, const std::string&) override {}
};

bool ParsesAsText(const std::string& bytes, v1::Graph& graph) {
  SilentErrors errors;
  google::protobuf::TextFormat::Parser parser;
  parser.RecordErrorsTo(&errors);
  return parser.ParseFromString(bytes, &graph);
}

}  // namespace

absl::StatusOr<ModelFormat> DetectModelFormat(const std::string& bytes) {
  constexpr char kExpected[] = "expected an ONNX model or a serenity.v1.Graph (binary or text format)";
  if (absl::StripAsciiWhitespace(bytes).empty()) return absl::InvalidArgumentError(absl::StrCat("empty: ", kExpected));
  if (v1::Graph graph; ParsesAsText(bytes, graph)) return ModelFormat::kGraphText;
  google::protobuf::UnknownFieldSet fields;
  if (fields.ParseFromString(bytes) && !fields.empty()) {
    bool graph_fields = true, onnx_graph = false;
    for (int i = 0; i < fields.field_count(); ++i) {
      const google::protobuf::UnknownField& field = fields.field(i);
      const bool delimited = field.type() == google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED;
      graph_fields = graph_fields && delimited && field.number() >= 1 && field.number() <= 5;
      onnx_graph = onnx_graph || (delimited && field.number() == 7);
    }
    if (graph_fields) return ModelFormat::kGraphBinary;
    if (onnx_graph) return ModelFormat::kOnnx;
  }
  return absl::InvalidArgumentError(absl::StrCat("not a model the client can read: ", kExpected));
}

absl::StatusOr<v1::PlanRequest> ModelFromBytes(std::string bytes, ModelFormat format, const std::string& model_name,
                                               const std::string& source) {
  v1::PlanRequest request;
  request.set_model_name(model_name);
  switch (format) {
    case ModelFormat::kGraphText:
      if (!google::protobuf::TextFormat::ParseFromString(bytes, request.mutable_graph())) {
        return absl::InvalidArgumentError(absl::StrCat("'", source, "' is not a serenity.v1.Graph in text format"));
      }
      break;
    case ModelFormat::kGraphBinary:
      if (!request.mutable_graph()->ParseFromString(bytes)) {
        return absl::InvalidArgumentError(absl::StrCat("'", source, "' is not a binary serenity.v1.Graph"));
      }
      break;
    case ModelFormat::kOnnx: {
      absl::StatusOr<std::string> stripped = StripWeightData(bytes);
      if (!stripped.ok()) {
        return absl::InvalidArgumentError(absl::StrCat("'", source, "': ", stripped.status().message()));
      }
      request.set_onnx_model(std::move(stripped).value());
      break;
    }
  }
  return request;
}

absl::StatusOr<v1::PlanRequest> ReadModelFile(const std::string& path) {
  if (path == "-") {
    std::ostringstream stream;
    stream << std::cin.rdbuf();
    std::string bytes = stream.str();
    absl::StatusOr<ModelFormat> format = DetectModelFormat(bytes);
    if (!format.ok()) return absl::InvalidArgumentError(absl::StrCat("standard input: ", format.status().message()));
    return ModelFromBytes(std::move(bytes), *format, "stdin", "standard input");
  }
  absl::StatusOr<std::string> bytes = ReadFileBytes(path);
  if (!bytes.ok()) return bytes.status();
  const ModelFormat format = absl::EndsWith(path, ".pbtxt") || absl::EndsWith(path, ".textproto")
                                 ? ModelFormat::kGraphText
                             : absl::EndsWith(path, ".pb") ? ModelFormat::kGraphBinary
                                                           : ModelFormat::kOnnx;
  return ModelFromBytes(std::move(bytes).value(), format, std::filesystem::path(path).stem().string(), path);
}

absl::Status ReadOrderFile(const std::string& path, v1::GivenOrder& order) {
  absl::StatusOr<std::string> bytes = ReadFileBytes(path);
  if (!bytes.ok()) return bytes.status();
  nlohmann::json json = nlohmann::json::parse(*bytes, nullptr, /*allow_exceptions=*/false);
  if (!json.is_array() || json.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("'", path, "' must hold a JSON list of op indices or op names"));
  }
  for (const nlohmann::json& item : json) {
    if (item.is_number_integer() && order.names().empty()) {
      order.add_indices(item.get<int32_t>());
    } else if (item.is_string() && order.indices().empty()) {
      order.add_names(item.get<std::string>());
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("'", path, "': the list must hold only op indices or only op names"));
    }
  }
  return absl::OkStatus();
}

absl::Status ReadWorkspaceFile(const std::string& path, v1::PlanOptions& options) {
  absl::StatusOr<std::string> bytes = ReadFileBytes(path);
  if (!bytes.ok()) return bytes.status();
  nlohmann::json json = nlohmann::json::parse(*bytes, nullptr, /*allow_exceptions=*/false);
  if (!json.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat("'", path, "' must hold a JSON object {\"op name\": bytes, ...}"));
  }
  for (const auto& [name, value] : json.items()) {
    if (!value.is_number_integer() || value.get<int64_t>() < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("'", path, "': workspace of op '", name, "' must be a non-negative integer"));
    }
    (*options.mutable_workspace_bytes())[name] = value.get<int64_t>();
  }
  return absl::OkStatus();
}

absl::Status ReadPrimitivesFile(const std::string& path, v1::PlanOptions& options) {
  absl::StatusOr<std::string> bytes = ReadFileBytes(path);
  if (!bytes.ok()) return bytes.status();
  v1::PrimitiveSet set;
  const google::protobuf::util::Status parsed = google::protobuf::util::JsonStringToMessage(*bytes, &set);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("'", path,
                                                   "' is not a primitives file ({\"ops\": [{\"op\": NAME, "
                                                   "\"alternatives\": [...]}], \"layout_transforms\": [...]}): ",
                                                   parsed.message().as_string()));
  }
  for (v1::OpPrimitives& entry : *set.mutable_ops()) *options.add_primitives() = std::move(entry);
  for (v1::LayoutTransform& t : *set.mutable_layout_transforms()) *options.add_layout_transforms() = std::move(t);
  return absl::OkStatus();
}

}  // namespace serenity
