// Arena instances in MiniMalloc's CSV format: a header `id,lower,upper,size`
// and one buffer per line, live on the half-open interval [lower, upper).
#ifndef SERENITY_CORE_ARENA_ARENA_CSV_H_
#define SERENITY_CORE_ARENA_ARENA_CSV_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/arena/arena_planner.h"

namespace serenity {

struct ArenaInstance {
  std::vector<std::string> ids;     // as written in the file
  std::vector<ArenaBuffer> buffers;  // inclusive steps: [lower, upper - 1]
};

// Parses the CSV. InvalidArgument naming the line for a missing or wrong
// header, a line without four fields, a non-integer, a negative size, an
// empty or reversed interval, a step beyond 32 bits, or buffers live at one
// step whose sizes add up to more than 2^63-1 bytes (no arena could hold them).
absl::StatusOr<ArenaInstance> ParseArenaCsv(absl::string_view text);

}  // namespace serenity

#endif  // SERENITY_CORE_ARENA_ARENA_CSV_H_
