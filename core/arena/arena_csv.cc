#include "core/arena/arena_csv.h"

#include <algorithm>
#include <cstdint>
#include <tuple>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace serenity {

namespace {

constexpr char kExpectedHeader[] = "a header with the columns id, lower, upper, size (and optionally offset)";

// Where each column is in a line (-1: absent), from the header's names.
struct Columns {
  int id = -1, lower = -1, upper = -1, size = -1, offset = -1;
  bool inclusive_upper = false;  // the column was MiniMalloc's `end`
  size_t count = 0;
};

absl::StatusOr<Columns> ReadHeader(const std::vector<absl::string_view>& fields) {
  Columns columns;
  columns.count = fields.size();
  for (size_t i = 0; i < fields.size(); ++i) {
    const absl::string_view name = fields[i];
    int* column = name == "id" || name == "buffer" || name == "buffer_id" ? &columns.id
                  : name == "lower" || name == "start" || name == "begin" ? &columns.lower
                  : name == "upper" || name == "end"                      ? &columns.upper
                  : name == "size"                                        ? &columns.size
                  : name == "offset"                                      ? &columns.offset
                                                                          : nullptr;
    if (column == nullptr) {
      // Escaped and cut short: a binary file's first "line" can be long.
      return absl::InvalidArgumentError(absl::StrCat("unknown column '", absl::CHexEscape(name.substr(0, 40)),
                                                     name.size() > 40 ? "...': expected " : "': expected ",
                                                     kExpectedHeader));
    }
    if (*column != -1) {
      return absl::InvalidArgumentError(absl::StrCat("column '", name, "' given twice"));
    }
    *column = static_cast<int>(i);
    if (name == "end") columns.inclusive_upper = true;
  }
  if (columns.id < 0 || columns.lower < 0 || columns.upper < 0 || columns.size < 0) {
    return absl::InvalidArgumentError(absl::StrCat("expected ", kExpectedHeader));
  }
  return columns;
}

}  // namespace

absl::StatusOr<ArenaInstance> ParseArenaCsv(absl::string_view text) {
  ArenaInstance instance;
  std::vector<int> lines;  // line number of each buffer
  int line_number = 0;
  bool header = true;
  Columns columns;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    line = absl::StripTrailingAsciiWhitespace(line);
    if (line.empty()) continue;
    std::vector<absl::string_view> fields = absl::StrSplit(line, ',');
    for (absl::string_view& field : fields) field = absl::StripAsciiWhitespace(field);
    if (header) {
      absl::StatusOr<Columns> read = ReadHeader(fields);
      if (!read.ok()) {
        return absl::InvalidArgumentError(absl::StrCat("line ", line_number, ": ", read.status().message()));
      }
      columns = *read;
      header = false;
      continue;
    }
    if (fields.size() != columns.count) {
      return absl::InvalidArgumentError(
          absl::StrCat("line ", line_number, ": expected ", columns.count, " fields, found ", fields.size()));
    }
    int64_t lower, upper, size;
    if (!absl::SimpleAtoi(fields[columns.lower], &lower) || !absl::SimpleAtoi(fields[columns.upper], &upper) ||
        !absl::SimpleAtoi(fields[columns.size], &size)) {
      return absl::InvalidArgumentError(absl::StrCat("line ", line_number, ": lower, upper and size must be integers"));
    }
    // MiniMalloc's `end` is the last live step (INT64_MAX stays out of range).
    if (columns.inclusive_upper && upper < INT64_MAX) ++upper;
    if (size < 0) return absl::InvalidArgumentError(absl::StrCat("line ", line_number, ": negative size"));
    if (upper <= lower) {
      return absl::InvalidArgumentError(absl::StrCat("line ", line_number, ": upper must exceed lower"));
    }
    if (lower < 0 || upper > INT32_MAX) {
      return absl::InvalidArgumentError(absl::StrCat("line ", line_number, ": steps must lie in 0..2^31-1"));
    }
    if (columns.offset >= 0) {
      int64_t offset = -1;
      if (!fields[columns.offset].empty() && (!absl::SimpleAtoi(fields[columns.offset], &offset) || offset < 0)) {
        return absl::InvalidArgumentError(
            absl::StrCat("line ", line_number, ": offset must be a non-negative integer or empty"));
      }
      instance.offsets.push_back(offset);
    }
    instance.ids.emplace_back(fields[columns.id]);
    instance.buffers.push_back({size, static_cast<int32_t>(lower), static_cast<int32_t>(upper - 1)});
    lines.push_back(line_number);
  }
  if (header) return absl::InvalidArgumentError(absl::StrCat("empty file: expected ", kExpectedHeader));
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
      return absl::InvalidArgumentError(
          absl::StrCat("line ", lines[i], ": the buffers live at step ", step, " hold more than 2^63-1 bytes"));
    }
  }
  return instance;
}

std::string WriteArenaCsv(const ArenaInstance& instance, absl::Span<const int64_t> offsets) {
  std::string out = "id,lower,upper,size,offset\n";
  for (size_t i = 0; i < instance.buffers.size(); ++i) {
    const ArenaBuffer& b = instance.buffers[i];
    absl::StrAppend(&out, instance.ids[i], ",", b.first_step, ",", int64_t{b.last_step} + 1, ",", b.size, ",",
                    offsets[i], "\n");
  }
  return out;
}

}  // namespace serenity
