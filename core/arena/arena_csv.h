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
// empty or reversed interval, or a step beyond 32 bits.
absl::StatusOr<ArenaInstance> ParseArenaCsv(absl::string_view text);

}  // namespace serenity

#endif  // SERENITY_CORE_ARENA_ARENA_CSV_H_
