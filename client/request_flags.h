// The planning options every command that sends models shares (memory
// model, budget, algorithm, limits), as flags and as v1::PlanOptions.
#ifndef SERENITY_CLIENT_REQUEST_FLAGS_H_
#define SERENITY_CLIENT_REQUEST_FLAGS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "common/command_line.h"
#include "core/planner.h"
#include "serenity/v1/scheduler.pb.h"

namespace serenity {

struct RequestFlags {
  bool alias_views = false;
  bool count_weights = false;
  bool in_place = false;
  bool concat_in_place = false;
  int64_t alignment = kDefaultAlignment;
  int64_t budget = 0;
  std::string budgets;  // BYTES,... (objective time: one plan per budget)
  std::vector<std::string> dims;
  std::string workspace_file;
  std::string primitives_file;
  bool pareto = false;
  int64_t max_pareto_points = 0;
  double max_time_us = 0;
  bool no_catalogue = false;
  bool primitive_baselines = false;
  double time_limit = 0;
  std::string algorithm = "auto";
  std::string objective = "min_peak";
  double step_time_limit = 1;
  int64_t max_states = SearchOptions().max_states;
  std::string onchip;
  std::vector<std::string> memories;  // NAME:CAPACITY[:ALIGNMENT], fastest first
  std::vector<std::string> pins;      // TENSOR=MEMORY[@OFFSET]
};

// Registers the flags of RequestFlags on `flag_set`; `with_outputs` adds
// those that only matter for a full plan (--onchip, --alignment, --memory,
// --pin).
void AddRequestFlags(FlagSet& flag_set, RequestFlags* flags, bool with_outputs);

// Fills `options` from the flags. InvalidArgument naming the flag for a bad
// --onchip, --budgets, --dim, --memory, --pin or --workspace value.
absl::Status FillOptions(const RequestFlags& flags, v1::PlanOptions& options);

}  // namespace serenity

#endif  // SERENITY_CLIENT_REQUEST_FLAGS_H_
