#include "common/log.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <ctime>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace serenity {
namespace {

// The length of the valid UTF-8 character (RFC 3629: no overlong forms, no
// surrogates, nothing above U+10FFFF) that starts at `s[i]`, or 0 when the
// bytes there are not one.
size_t Utf8CharLength(absl::string_view s, size_t i) {
  const auto byte = [&s](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = byte(i);
  if (c < 0x80) return 1;
  size_t length;
  unsigned char lo = 0x80, hi = 0xbf;  // the allowed range of the second byte
  if (c >= 0xc2 && c <= 0xdf) {
    length = 2;
  } else if (c >= 0xe0 && c <= 0xef) {
    length = 3;
    if (c == 0xe0) lo = 0xa0;  // overlong
    if (c == 0xed) hi = 0x9f;  // surrogates
  } else if (c >= 0xf0 && c <= 0xf4) {
    length = 4;
    if (c == 0xf0) lo = 0x90;  // overlong
    if (c == 0xf4) hi = 0x8f;  // above U+10FFFF
  } else {
    return 0;
  }
  if (i + length > s.size()) return 0;
  if (byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  for (size_t k = 2; k < length; ++k) {
    if (byte(i + k) < 0x80 || byte(i + k) > 0xbf) return 0;
  }
  return length;
}

bool NeedsQuotes(absl::string_view value) {
  if (value.empty()) return true;
  for (unsigned char c : value) {
    if (c <= ' ' || c == '"' || c == '=' || c == '\\' || c >= 0x7f) return true;
  }
  return false;
}

void AppendHex(std::string* out, unsigned char c) {
  char hex[8];
  std::snprintf(hex, sizeof(hex), "\\x%02x", c);
  out->append(hex);
}

void AppendEscaped(std::string* out, absl::string_view value) {
  for (size_t i = 0; i < value.size();) {
    const unsigned char c = static_cast<unsigned char>(value[i]);
    if (c >= 0x80) {
      const size_t length = Utf8CharLength(value, i);
      if (length == 0) {
        AppendHex(out, c);  // not UTF-8: keep the line valid UTF-8
        ++i;
      } else {
        out->append(value.data() + i, length);
        i += length;
      }
      continue;
    }
    switch (c) {
      case '"':
        out->append("\\\"");
        break;
      case '\\':
        out->append("\\\\");
        break;
      case '\n':
        out->append("\\n");
        break;
      case '\t':
        out->append("\\t");
        break;
      default:
        if (c < ' ' || c == 0x7f) {
          AppendHex(out, c);
        } else {
          out->push_back(static_cast<char>(c));
        }
    }
    ++i;
  }
}

// The longest prefix of `value` of at most `max` bytes that does not end
// inside a valid UTF-8 character.
size_t CutPoint(absl::string_view value, size_t max) {
  size_t i = 0;
  while (i < value.size()) {
    const size_t length = std::max<size_t>(Utf8CharLength(value, i), 1);
    if (i + length > max) break;
    i += length;
  }
  return i;
}

void AppendValue(std::string* out, absl::string_view value) {
  size_t kept = value.size();
  if (value.size() > kMaxLogValueBytes) kept = CutPoint(value, kMaxLogValueBytes);
  const absl::string_view shown = value.substr(0, kept);
  if (kept == value.size() && !NeedsQuotes(shown)) {
    absl::StrAppend(out, shown);
    return;
  }
  out->push_back('"');
  AppendEscaped(out, shown);
  if (kept < value.size()) absl::StrAppend(out, "...(+", value.size() - kept, " bytes)");
  out->push_back('"');
}

}  // namespace

std::string FormatLogLine(absl::string_view level, absl::string_view event, std::initializer_list<LogField> fields) {
  std::string line = absl::StrCat("ts=", absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", absl::Now(), absl::UTCTimeZone()),
                                  " level=", level, " event=");
  AppendValue(&line, event);
  for (const LogField& field : fields) {
    absl::StrAppend(&line, " ", field.first, "=");
    AppendValue(&line, field.second);
  }
  return line;
}

void Log(absl::string_view level, absl::string_view event, std::initializer_list<LogField> fields) {
  std::string line = FormatLogLine(level, event, fields);
  line.push_back('\n');
  size_t written = 0;
  while (written < line.size()) {
    ssize_t n = ::write(STDERR_FILENO, line.data() + written, line.size() - written);
    if (n <= 0) break;
    written += static_cast<size_t>(n);
  }
}

}  // namespace serenity
