// One-line structured logs (logfmt: key=value pairs) on stderr, for the
// server: `ts=... level=info event=plan request_id=42 model="a b" ...`.
#ifndef SERENITY_COMMON_LOG_H_
#define SERENITY_COMMON_LOG_H_

#include <cstddef>
#include <initializer_list>
#include <string>
#include <utility>

#include "absl/strings/string_view.h"

namespace serenity {

using LogField = std::pair<absl::string_view, std::string>;

// The most bytes of one value (the event or a field's value) a log line
// shows, counted before escaping. A longer value is cut at the last whole
// UTF-8 character within this limit and followed by a marker with the number
// of bytes left out: `model="aaaa...(+5242624 bytes)"`. So a client's 5 MB
// model name makes a short line, never a 5 MB one.
inline constexpr size_t kMaxLogValueBytes = 256;

// Formats one log line (without the newline): ts, level, event, then the
// fields in order. Values with spaces, quotes, '=', control characters or
// non-ASCII bytes are quoted and escaped; empty values print as "". Valid
// UTF-8 characters are kept as they are; control characters and bytes that
// are not part of valid UTF-8 print as \xNN, so a line is always valid
// UTF-8. Values longer than kMaxLogValueBytes are cut (see above).
std::string FormatLogLine(absl::string_view level, absl::string_view event, std::initializer_list<LogField> fields);

// Writes FormatLogLine(...) and a newline to stderr in one write, so lines of
// concurrent threads never interleave.
void Log(absl::string_view level, absl::string_view event, std::initializer_list<LogField> fields);

}  // namespace serenity

#endif  // SERENITY_COMMON_LOG_H_
