// The client's JSON output format (docs/json-format.md): any protobuf
// message converted generically by reflection, so fields added to the proto
// appear without code changes, and the line framing every command shares
// (schema_version, source, error objects).
//
// Differences from protobuf's proto3 JSON mapping: int64/uint64 values are
// JSON numbers (not strings), enums are short lower-case names
// (CERTIFICATE_BEST_FOUND -> "best_found"), and every scalar and repeated
// field is written, defaults included. Field names are the proto's
// (snake_case), in field-number order.
#ifndef SERENITY_CLIENT_JSON_FORMAT_H_
#define SERENITY_CLIENT_JSON_FORMAT_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/generated_enum_reflection.h"
#include "google/protobuf/message.h"
#include "nlohmann/json.hpp"

namespace serenity {

// The version every output line carries; bumped only on an incompatible
// change (a field renamed, removed or retyped). New fields keep it.
inline constexpr int kJsonSchemaVersion = 1;

// The short name of an enum value: its name without the prefix all values of
// its enum type share (up to and including an underscore), lower-cased.
// CERTIFICATE_OPTIMAL -> "optimal", BUFFER_KIND_WORKSPACE -> "workspace".
std::string EnumShortName(const google::protobuf::EnumValueDescriptor& value);

// The same for a generated enum's value; a number the enum does not name
// gives its decimal digits.
template <typename Enum>
std::string EnumShortName(Enum value) {
  const google::protobuf::EnumValueDescriptor* descriptor =
      google::protobuf::GetEnumDescriptor<Enum>()->FindValueByNumber(static_cast<int>(value));
  return descriptor != nullptr ? EnumShortName(*descriptor) : std::to_string(static_cast<int>(value));
}

// `message` as a JSON object: every field in field-number order under its
// proto name. Scalars and repeated fields are always written (defaults
// included); singular sub-messages, oneof members and proto3 `optional`
// fields only when set. Integers are numbers, enums short names (numbers the
// enum does not name stay numbers), maps objects (keys sorted), bytes
// base64.
nlohmann::ordered_json MessageToJson(const google::protobuf::Message& message);

// The canonical name of a status code, as gRPC and absl write it:
// 3 -> "INVALID_ARGUMENT". A number that is no canonical code gives
// "UNKNOWN".
std::string StatusCodeName(int code);

// {"schema_version": 1, "source": source}: how every line starts. `source`
// is the command-line argument the line answers.
nlohmann::ordered_json JsonLineHeader(absl::string_view source);

// {"code": "NOT_FOUND", "message": "..."}.
nlohmann::ordered_json ErrorJson(int code, absl::string_view message);

// The line for an argument that failed: the header, "model": source and
// "error" (see ErrorJson). `status` must not be OK.
nlohmann::ordered_json ErrorLine(absl::string_view source, const absl::Status& status);

// One output line without its newline: compact, or indented by two spaces
// when `pretty`. Invalid UTF-8 in strings is replaced, never thrown on.
std::string FormatJsonLine(const nlohmann::ordered_json& line, bool pretty);

}  // namespace serenity

#endif  // SERENITY_CLIENT_JSON_FORMAT_H_
