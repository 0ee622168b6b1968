// One-line structured logs (logfmt: key=value pairs) on stderr, for the
// server: `ts=... level=info event=plan request_id=42 model="a b" ...`.
#ifndef SERENITY_COMMON_LOG_H_
#define SERENITY_COMMON_LOG_H_

#include <initializer_list>
#include <string>
#include <utility>

#include "absl/strings/string_view.h"

namespace serenity {

using LogField = std::pair<absl::string_view, std::string>;

// Formats one log line (without the newline): ts, level, event, then the
// fields in order. Values with spaces, quotes, '=' or control characters
// are quoted and escaped; empty values print as "".
std::string FormatLogLine(absl::string_view level, absl::string_view event, std::initializer_list<LogField> fields);

// Writes FormatLogLine(...) and a newline to stderr in one write, so lines of
// concurrent threads never interleave.
void Log(absl::string_view level, absl::string_view event, std::initializer_list<LogField> fields);

}  // namespace serenity

#endif  // SERENITY_COMMON_LOG_H_
