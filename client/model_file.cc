#include "client/model_file.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/onnx/onnx_import.h"
#include "google/protobuf/text_format.h"
#include "nlohmann/json.hpp"

namespace serenity {
namespace {

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open '", path, "'"));
  std::ostringstream bytes;
  bytes << in.rdbuf();
  if (in.bad()) return absl::DataLossError(absl::StrCat("cannot read '", path, "'"));
  return bytes.str();
}

}  // namespace

absl::StatusOr<v1::PlanRequest> ReadModelFile(const std::string& path) {
  absl::StatusOr<std::string> bytes = ReadFile(path);
  if (!bytes.ok()) return bytes.status();
  v1::PlanRequest request;
  std::filesystem::path p(path);
  request.set_model_name(p.stem().string());
  if (absl::EndsWith(path, ".pbtxt") || absl::EndsWith(path, ".textproto")) {
    if (!google::protobuf::TextFormat::ParseFromString(*bytes, request.mutable_graph())) {
      return absl::InvalidArgumentError(absl::StrCat("'", path, "' is not a serenity.v1.Graph in text format"));
    }
  } else if (absl::EndsWith(path, ".pb")) {
    if (!request.mutable_graph()->ParseFromString(*bytes)) {
      return absl::InvalidArgumentError(absl::StrCat("'", path, "' is not a binary serenity.v1.Graph"));
    }
  } else {
    absl::StatusOr<std::string> stripped = StripWeightData(*bytes);
    if (!stripped.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("'", path, "': ", stripped.status().message()));
    }
    request.set_onnx_model(std::move(stripped).value());
  }
  return request;
}

absl::Status ReadOrderFile(const std::string& path, v1::GivenOrder& order) {
  absl::StatusOr<std::string> bytes = ReadFile(path);
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
  absl::StatusOr<std::string> bytes = ReadFile(path);
  if (!bytes.ok()) return bytes.status();
  nlohmann::json json = nlohmann::json::parse(*bytes, nullptr, /*allow_exceptions=*/false);
  if (!json.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", path, "' must hold a JSON object {\"op name\": bytes, ...}"));
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

}  // namespace serenity
