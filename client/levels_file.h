// The --levels file of `serenity-client plan` (issue 20, nested sparse
// models): JSON with the fields of the request's sparsity options,
//   {"levels": [{"name": "half", "density": {"conv1.weight": 0.5, ...},
//                "time_us": 800}, ...],
//    "switch_points": ["op name", ...]}
// levels densest first (docs/sparsity.md).
#ifndef SERENITY_CLIENT_LEVELS_FILE_H_
#define SERENITY_CLIENT_LEVELS_FILE_H_

#include <string>

#include "absl/status/status.h"
#include "serenity/v1/scheduler.pb.h"

namespace serenity {

// Reads the levels JSON `text` (from `source`, named in errors) into
// options.levels and options.switch_points. InvalidArgument naming the
// problem for what the file alone shows wrong: not JSON (with the parser's
// position), not an object, a key other than "levels" and "switch_points",
// no levels, a level that is not an object or has another key than "name",
// "density" and "time_us", a name that is not a string, a density that is
// not an object of numbers, a time that is not a number, a switch point that
// is not a string; and every check of CheckLevels (nested_sparsity.h) except
// whether the tensors are weights of the model (densities outside [0, 1],
// duplicate names, densities that grow from a level to the next), which the
// planner checks against each model.
absl::Status ParseLevelsJson(const std::string& text, const std::string& source, v1::PlanOptions& options);

// ParseLevelsJson of the file at `path`; NotFound when it cannot be read.
absl::Status ReadLevelsFile(const std::string& path, v1::PlanOptions& options);

}  // namespace serenity

#endif  // SERENITY_CLIENT_LEVELS_FILE_H_
