#include "common/byte_size.h"

#include <cstdint>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace serenity {
namespace {

// 128 bits hold a whole part below 2^63 times a unit of up to 2^30.
__extension__ typedef unsigned __int128 Wide;

struct Unit {
  const char* name;  // lowercase
  int64_t multiplier;
};

constexpr Unit kUnits[] = {
    {"", 1},
    {"b", 1},
    {"k", int64_t{1} << 10},
    {"kib", int64_t{1} << 10},
    {"m", int64_t{1} << 20},
    {"mib", int64_t{1} << 20},
    {"g", int64_t{1} << 30},
    {"gib", int64_t{1} << 30},
    {"kb", 1000},
    {"mb", 1000 * 1000},
    {"gb", 1000 * 1000 * 1000},
};

absl::Status Refuse(absl::string_view text, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("'", text, "' is not a byte size (", why,
                                                 "): give a non-negative integer, optionally followed by one of ",
                                                 kByteSizeSuffixes, ", e.g. 2MiB"));
}

}  // namespace

absl::StatusOr<int64_t> ParseByteSize(absl::string_view text) {
  absl::string_view rest = absl::StripAsciiWhitespace(text);
  if (rest.empty()) return Refuse(text, "empty");
  if (rest[0] == '-') return Refuse(text, "negative");
  if (rest[0] == '+') rest.remove_prefix(1);
  // Whole part, then an optional fraction.
  Wide whole = 0;
  size_t i = 0;
  for (; i < rest.size() && absl::ascii_isdigit(rest[i]); ++i) {
    whole = whole * 10 + static_cast<unsigned>(rest[i] - '0');
    if (whole > INT64_MAX) return Refuse(text, "more than 2^63-1 bytes");
  }
  const bool has_whole = i > 0;
  Wide fraction = 0, denominator = 1;
  bool has_fraction = false;
  if (i < rest.size() && rest[i] == '.') {
    ++i;
    for (; i < rest.size() && absl::ascii_isdigit(rest[i]); ++i) {
      if (denominator > static_cast<Wide>(INT64_MAX)) return Refuse(text, "too many decimals");
      fraction = fraction * 10 + static_cast<unsigned>(rest[i] - '0');
      denominator *= 10;
      has_fraction = true;
    }
    if (!has_fraction) return Refuse(text, "a number must follow the decimal point");
  }
  if (!has_whole && !has_fraction) return Refuse(text, "no number");
  const std::string unit = absl::AsciiStrToLower(absl::StripLeadingAsciiWhitespace(rest.substr(i)));
  for (const Unit& u : kUnits) {
    if (unit != u.name) continue;
    const Wide m = static_cast<Wide>(u.multiplier);
    if ((fraction * m) % denominator != 0) return Refuse(text, "not a whole number of bytes");
    const Wide bytes = whole * m + fraction * m / denominator;
    if (bytes > INT64_MAX) return Refuse(text, "more than 2^63-1 bytes");
    return static_cast<int64_t>(bytes);
  }
  return Refuse(text, absl::StrCat("unknown unit '", rest.substr(i), "'"));
}

}  // namespace serenity
