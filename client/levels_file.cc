#include "client/levels_file.h"

#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/sparsity/nested_sparsity.h"
#include "nlohmann/json.hpp"

namespace serenity {
namespace {

absl::Status Bad(const std::string& source, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("levels file '", source, "': ", what));
}

absl::Status ParseLevel(const nlohmann::json& item, size_t index, const std::string& source, v1::SparsityLevel* out,
                        SparsityLevel* core) {
  const std::string where = absl::StrCat("levels[", index, "]");
  if (!item.is_object()) return Bad(source, absl::StrCat(where, " must be an object {name, density, time_us}"));
  for (const auto& [key, value] : item.items()) {
    if (key == "name") {
      if (!value.is_string()) return Bad(source, absl::StrCat(where, ".name must be a string"));
      out->set_name(value.get<std::string>());
    } else if (key == "density") {
      if (!value.is_object()) {
        return Bad(source, absl::StrCat(where, ".density must be an object {\"weight tensor\": fraction, ...}"));
      }
      for (const auto& [tensor, fraction] : value.items()) {
        if (!fraction.is_number()) {
          return Bad(source, absl::StrCat(where, ".density of '", tensor, "' must be a number"));
        }
        (*out->mutable_density())[tensor] = fraction.get<double>();
      }
    } else if (key == "time_us") {
      if (!value.is_number()) return Bad(source, absl::StrCat(where, ".time_us must be a number"));
      out->set_time_us(value.get<double>());
    } else {
      return Bad(source, absl::StrCat(where, " has unknown key '", key, "' (expected name, density, time_us)"));
    }
  }
  core->name = out->name();
  core->density.insert(out->density().begin(), out->density().end());
  core->time_us = out->time_us();
  return absl::OkStatus();
}

}  // namespace

absl::Status ParseLevelsJson(const std::string& text, const std::string& source, v1::PlanOptions& options) {
  nlohmann::json json;
  try {
    json = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    return Bad(source, absl::StrCat("not JSON: ", e.what()));
  }
  if (!json.is_object()) return Bad(source, "must hold a JSON object {\"levels\": [...], \"switch_points\": [...]}");
  for (const auto& [key, value] : json.items()) {
    if (key != "levels" && key != "switch_points") {
      return Bad(source, absl::StrCat("unknown key '", key, "' (expected levels, switch_points)"));
    }
  }
  if (!json.contains("levels") || !json["levels"].is_array() || json["levels"].empty()) {
    return Bad(source, "\"levels\" must be a non-empty list of levels, densest first");
  }
  options.clear_levels();
  options.clear_switch_points();
  std::vector<SparsityLevel> levels;
  for (size_t i = 0; i < json["levels"].size(); ++i) {
    absl::Status s = ParseLevel(json["levels"][i], i, source, options.add_levels(), &levels.emplace_back());
    if (!s.ok()) return s;
  }
  if (json.contains("switch_points")) {
    const nlohmann::json& points = json["switch_points"];
    if (!points.is_array()) return Bad(source, "\"switch_points\" must be a list of op names");
    for (const nlohmann::json& op : points) {
      if (!op.is_string()) return Bad(source, "\"switch_points\" must be a list of op names");
      options.add_switch_points(op.get<std::string>());
    }
  }
  // Every check the file alone allows (the weights are the model's).
  absl::Status checked = CheckLevelsAlone(levels);
  if (!checked.ok()) return Bad(source, checked.message());
  return absl::OkStatus();
}

absl::Status ReadLevelsFile(const std::string& path, v1::PlanOptions& options) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open levels file '", path, "'"));
  std::stringstream text;
  text << in.rdbuf();
  return ParseLevelsJson(text.str(), path, options);
}

}  // namespace serenity
