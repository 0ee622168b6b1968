#include "common/log.h"

#include <unistd.h>

#include <ctime>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace serenity {
namespace {

bool NeedsQuotes(absl::string_view value) {
  if (value.empty()) return true;
  for (unsigned char c : value) {
    if (c <= ' ' || c == '"' || c == '=' || c == '\\' || c >= 0x7f) return true;
  }
  return false;
}

void AppendValue(std::string* out, absl::string_view value) {
  if (!NeedsQuotes(value)) {
    absl::StrAppend(out, value);
    return;
  }
  out->push_back('"');
  for (unsigned char c : value) {
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
          char hex[8];
          std::snprintf(hex, sizeof(hex), "\\x%02x", c);
          out->append(hex);
        } else {
          out->push_back(static_cast<char>(c));
        }
    }
  }
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
