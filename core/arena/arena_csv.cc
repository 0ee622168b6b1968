#include "core/arena/arena_csv.h"

#include <algorithm>
#include <cstdint>
#include <tuple>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace serenity {

absl::StatusOr<ArenaInstance> ParseArenaCsv(absl::string_view text) {
  ArenaInstance instance;
  std::vector<int> lines;  // line number of each buffer
  int line_number = 0;
  bool header = true;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    line = absl::StripTrailingAsciiWhitespace(line);
    if (line.empty()) continue;
    std::vector<absl::string_view> fields = absl::StrSplit(line, ',');
    for (absl::string_view& field : fields) field = absl::StripAsciiWhitespace(field);
    if (header) {
      if (fields != std::vector<absl::string_view>{"id", "lower", "upper", "size"}) {
        return absl::InvalidArgumentError(
            absl::StrCat("line ", line_number, ": expected the header id,lower,upper,size"));
      }
      header = false;
      continue;
    }
    if (fields.size() != 4) {
      return absl::InvalidArgumentError(absl::StrCat("line ", line_number, ": expected 4 fields, found ", fields.size()));
    }
    int64_t lower, upper, size;
    if (!absl::SimpleAtoi(fields[1], &lower) || !absl::SimpleAtoi(fields[2], &upper) ||
        !absl::SimpleAtoi(fields[3], &size)) {
      return absl::InvalidArgumentError(absl::StrCat("line ", line_number, ": lower, upper and size must be integers"));
    }
    if (size < 0) return absl::InvalidArgumentError(absl::StrCat("line ", line_number, ": negative size"));
    if (upper <= lower) {
      return absl::InvalidArgumentError(absl::StrCat("line ", line_number, ": upper must exceed lower"));
    }
    if (lower < 0 || upper > INT32_MAX) {
      return absl::InvalidArgumentError(absl::StrCat("line ", line_number, ": steps must lie in 0..2^31-1"));
    }
    instance.ids.emplace_back(fields[0]);
    instance.buffers.push_back({size, static_cast<int32_t>(lower), static_cast<int32_t>(upper - 1)});
    lines.push_back(line_number);
  }
  if (header) return absl::InvalidArgumentError("empty file: expected the header id,lower,upper,size");
  // The bytes live at one step bound every arena from below: when they do not
  // fit 64 bits, no plan can be written down (and sums would overflow).
  // Events by step, ends (at upper) before starts, so the running sum is the
  // live bytes after each step's starts.
  std::vector<std::tuple<int64_t, bool, size_t>> events;  // step, is_start, buffer
  events.reserve(2 * instance.buffers.size());
  for (size_t i = 0; i < instance.buffers.size(); ++i) {
    events.emplace_back(instance.buffers[i].first_step, true, i);
    events.emplace_back(int64_t{instance.buffers[i].last_step} + 1, false, i);
  }
  std::sort(events.begin(), events.end());
  int64_t live = 0;
  for (const auto& [step, is_start, i] : events) {
    if (!is_start) {
      live -= instance.buffers[i].size;
    } else if (__builtin_add_overflow(live, instance.buffers[i].size, &live)) {
      return absl::InvalidArgumentError(absl::StrCat("line ", lines[i], ": the buffers live at step ", step,
                                                     " hold more than 2^63-1 bytes"));
    }
  }
  return instance;
}

}  // namespace serenity
