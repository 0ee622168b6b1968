// Arena instances in MiniMalloc's CSV format (github.com/google/minimalloc,
// src/converter.cc): a header naming the columns, then one buffer per line.
// The columns, in any order: `id`, `lower`, `upper` (the buffer is live on
// the half-open interval [lower, upper)) and `size`, plus an optional
// `offset`. As MiniMalloc reads them, `start`/`begin` also name `lower`,
// `end` names an inclusive upper bound (upper = end + 1), and `buffer` /
// `buffer_id` name `id`. MiniMalloc's other columns (alignment, hint, gaps)
// are refused, not silently dropped.
#ifndef SERENITY_CORE_ARENA_ARENA_CSV_H_
#define SERENITY_CORE_ARENA_ARENA_CSV_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "core/arena/arena_planner.h"

namespace serenity {

struct ArenaInstance {
  std::vector<std::string> ids;      // as written in the file
  std::vector<ArenaBuffer> buffers;  // inclusive steps: [lower, upper - 1]
  // With an `offset` column: one per buffer, the offset it is pinned at, or
  // -1 where the field is empty (free). Empty without the column.
  std::vector<int64_t> offsets;
};

// Parses the CSV. InvalidArgument naming the line for a header without the
// four required columns (or with an unknown or repeated one), a line with
// another number of fields than the header, a non-integer, a negative size
// or offset, an empty or reversed interval, a step beyond 32 bits, or
// buffers live at one step whose sizes add up to more than 2^63-1 bytes (no
// arena could hold them). Blank lines are skipped.
absl::StatusOr<ArenaInstance> ParseArenaCsv(absl::string_view text);

// The instance as MiniMalloc writes a solution: the header
// `id,lower,upper,size,offset` and one line per buffer in input order, with
// `offsets[i]` (one per buffer) as its offset. ParseArenaCsv reads it back
// with every buffer pinned at its offset.
std::string WriteArenaCsv(const ArenaInstance& instance, absl::Span<const int64_t> offsets);

}  // namespace serenity

#endif  // SERENITY_CORE_ARENA_ARENA_CSV_H_
