#include "client/json_format.h"

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace serenity {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::EnumDescriptor;
using google::protobuf::EnumValueDescriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

// The prefix every value name of `type` starts with, ending at an
// underscore, that still leaves every name a non-empty rest.
std::string CommonPrefix(const EnumDescriptor& type) {
  std::string prefix = type.value(0)->name();
  for (int i = 1; i < type.value_count(); ++i) {
    const std::string& name = type.value(i)->name();
    size_t n = 0;
    while (n < prefix.size() && n < name.size() && prefix[n] == name[n]) ++n;
    prefix.resize(n);
  }
  // Cut back to the last underscore, short of any whole name.
  size_t shortest = prefix.size() + 1;
  for (int i = 0; i < type.value_count(); ++i) shortest = std::min(shortest, type.value(i)->name().size());
  size_t end = std::min(prefix.size(), shortest - 1);
  while (end > 0 && prefix[end - 1] != '_') --end;
  prefix.resize(end);
  return prefix;
}

nlohmann::ordered_json SingleValue(const Message& message, const FieldDescriptor& field);
nlohmann::ordered_json RepeatedValue(const Message& message, const FieldDescriptor& field, int index);

nlohmann::ordered_json EnumValue(const EnumDescriptor& type, int number) {
  const EnumValueDescriptor* value = type.FindValueByNumber(number);
  if (value == nullptr) return number;
  return EnumShortName(*value);
}

// A map key as its JSON object key.
std::string MapKeyText(const Message& entry, const FieldDescriptor& key) {
  const Reflection& r = *entry.GetReflection();
  switch (key.cpp_type()) {
    case FieldDescriptor::CPPTYPE_STRING:
      return r.GetString(entry, &key);
    case FieldDescriptor::CPPTYPE_INT32:
      return absl::StrCat(r.GetInt32(entry, &key));
    case FieldDescriptor::CPPTYPE_INT64:
      return absl::StrCat(r.GetInt64(entry, &key));
    case FieldDescriptor::CPPTYPE_UINT32:
      return absl::StrCat(r.GetUInt32(entry, &key));
    case FieldDescriptor::CPPTYPE_UINT64:
      return absl::StrCat(r.GetUInt64(entry, &key));
    case FieldDescriptor::CPPTYPE_BOOL:
      return r.GetBool(entry, &key) ? "true" : "false";
    default:
      return "";  // no other key types exist
  }
}

// Orders map entries by key: numerically for integer keys, else by text.
bool KeyLess(const Message& a, const Message& b, const FieldDescriptor& key) {
  const Reflection& r = *a.GetReflection();
  switch (key.cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
      return r.GetInt32(a, &key) < r.GetInt32(b, &key);
    case FieldDescriptor::CPPTYPE_INT64:
      return r.GetInt64(a, &key) < r.GetInt64(b, &key);
    case FieldDescriptor::CPPTYPE_UINT32:
      return r.GetUInt32(a, &key) < r.GetUInt32(b, &key);
    case FieldDescriptor::CPPTYPE_UINT64:
      return r.GetUInt64(a, &key) < r.GetUInt64(b, &key);
    default:
      return MapKeyText(a, key) < MapKeyText(b, key);
  }
}

nlohmann::ordered_json MapValue(const Message& message, const FieldDescriptor& field) {
  const Reflection& r = *message.GetReflection();
  const FieldDescriptor& key = *field.message_type()->map_key();
  const FieldDescriptor& value = *field.message_type()->map_value();
  std::vector<const Message*> entries;
  for (int i = 0; i < r.FieldSize(message, &field); ++i) entries.push_back(&r.GetRepeatedMessage(message, &field, i));
  std::sort(entries.begin(), entries.end(), [&](const Message* a, const Message* b) { return KeyLess(*a, *b, key); });
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (const Message* entry : entries) out[MapKeyText(*entry, key)] = SingleValue(*entry, value);
  return out;
}

nlohmann::ordered_json SingleValue(const Message& message, const FieldDescriptor& field) {
  const Reflection& r = *message.GetReflection();
  switch (field.cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
      return r.GetInt32(message, &field);
    case FieldDescriptor::CPPTYPE_INT64:
      return r.GetInt64(message, &field);
    case FieldDescriptor::CPPTYPE_UINT32:
      return r.GetUInt32(message, &field);
    case FieldDescriptor::CPPTYPE_UINT64:
      return r.GetUInt64(message, &field);
    case FieldDescriptor::CPPTYPE_DOUBLE:
      return r.GetDouble(message, &field);
    case FieldDescriptor::CPPTYPE_FLOAT:
      return r.GetFloat(message, &field);
    case FieldDescriptor::CPPTYPE_BOOL:
      return r.GetBool(message, &field);
    case FieldDescriptor::CPPTYPE_ENUM:
      return EnumValue(*field.enum_type(), r.GetEnumValue(message, &field));
    case FieldDescriptor::CPPTYPE_STRING:
      if (field.type() == FieldDescriptor::TYPE_BYTES) return absl::Base64Escape(r.GetString(message, &field));
      return r.GetString(message, &field);
    case FieldDescriptor::CPPTYPE_MESSAGE:
      return MessageToJson(r.GetMessage(message, &field));
  }
  return nullptr;
}

nlohmann::ordered_json RepeatedValue(const Message& message, const FieldDescriptor& field, int index) {
  const Reflection& r = *message.GetReflection();
  switch (field.cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
      return r.GetRepeatedInt32(message, &field, index);
    case FieldDescriptor::CPPTYPE_INT64:
      return r.GetRepeatedInt64(message, &field, index);
    case FieldDescriptor::CPPTYPE_UINT32:
      return r.GetRepeatedUInt32(message, &field, index);
    case FieldDescriptor::CPPTYPE_UINT64:
      return r.GetRepeatedUInt64(message, &field, index);
    case FieldDescriptor::CPPTYPE_DOUBLE:
      return r.GetRepeatedDouble(message, &field, index);
    case FieldDescriptor::CPPTYPE_FLOAT:
      return r.GetRepeatedFloat(message, &field, index);
    case FieldDescriptor::CPPTYPE_BOOL:
      return r.GetRepeatedBool(message, &field, index);
    case FieldDescriptor::CPPTYPE_ENUM:
      return EnumValue(*field.enum_type(), r.GetRepeatedEnumValue(message, &field, index));
    case FieldDescriptor::CPPTYPE_STRING:
      if (field.type() == FieldDescriptor::TYPE_BYTES) {
        return absl::Base64Escape(r.GetRepeatedString(message, &field, index));
      }
      return r.GetRepeatedString(message, &field, index);
    case FieldDescriptor::CPPTYPE_MESSAGE:
      return MessageToJson(r.GetRepeatedMessage(message, &field, index));
  }
  return nullptr;
}

}  // namespace

std::string EnumShortName(const EnumValueDescriptor& value) {
  return absl::AsciiStrToLower(value.name().substr(CommonPrefix(*value.type()).size()));
}

nlohmann::ordered_json MessageToJson(const Message& message) {
  const Descriptor& type = *message.GetDescriptor();
  const Reflection& r = *message.GetReflection();
  std::vector<const FieldDescriptor*> fields;
  for (int i = 0; i < type.field_count(); ++i) fields.push_back(type.field(i));
  std::sort(fields.begin(), fields.end(),
            [](const FieldDescriptor* a, const FieldDescriptor* b) { return a->number() < b->number(); });
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (const FieldDescriptor* field : fields) {
    if (field->is_map()) {
      out[field->name()] = MapValue(message, *field);
    } else if (field->is_repeated()) {
      nlohmann::ordered_json list = nlohmann::ordered_json::array();
      for (int i = 0; i < r.FieldSize(message, field); ++i) list.push_back(RepeatedValue(message, *field, i));
      out[field->name()] = std::move(list);
    } else if (field->has_presence() && !r.HasField(message, field)) {
      continue;  // an unset sub-message, oneof member or proto3 optional
    } else {
      out[field->name()] = SingleValue(message, *field);
    }
  }
  return out;
}

std::string StatusCodeName(int code) {
  if (code < 0 || code > static_cast<int>(absl::StatusCode::kUnauthenticated)) return "UNKNOWN";
  return absl::StatusCodeToString(static_cast<absl::StatusCode>(code));
}

nlohmann::ordered_json JsonLineHeader(absl::string_view source) {
  nlohmann::ordered_json line = nlohmann::ordered_json::object();
  line["schema_version"] = kJsonSchemaVersion;
  line["source"] = std::string(source);
  return line;
}

nlohmann::ordered_json ErrorJson(int code, absl::string_view message) {
  nlohmann::ordered_json error = nlohmann::ordered_json::object();
  error["code"] = StatusCodeName(code);
  error["message"] = std::string(message);
  return error;
}

nlohmann::ordered_json ErrorLine(absl::string_view source, const absl::Status& status) {
  nlohmann::ordered_json line = JsonLineHeader(source);
  line["model"] = std::string(source);
  line["error"] = ErrorJson(static_cast<int>(status.code()), status.message());
  return line;
}

std::string FormatJsonLine(const nlohmann::ordered_json& line, bool pretty) {
  return line.dump(pretty ? 2 : -1, ' ', /*ensure_ascii=*/false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace serenity
