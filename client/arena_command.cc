#include "client/arena_command.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/json_format.h"
#include "client/model_file.h"
#include "client/plan_output.h"
#include "common/command_line.h"
#include "common/thread_pool.h"
#include "core/arena/arena_csv.h"
#include "core/arena/arena_planner.h"
#include "core/arena/defragment.h"
#include "core/arena/instance_search.h"
#include "core/arena/pinned_arena.h"
#include "core/util/status_macros.h"
#include "nlohmann/json.hpp"

namespace serenity {
namespace {

constexpr char kDescription[] =
    "Plans offsets for each instance, in this process; a drop-in for MiniMalloc's CLI\n"
    "(github.com/google/minimalloc): serenity-client arena --input=IN.csv --capacity=BYTES\n"
    "--output=OUT.csv. An instance is MiniMalloc's CSV: a header naming the columns id,\n"
    "lower, upper, size in any order (start/begin for lower, an inclusive end for upper,\n"
    "buffer/buffer_id for id, as MiniMalloc reads them), one buffer per line, live on\n"
    "[lower, upper). An optional offset column pins buffers: each buffer with an offset\n"
    "keeps it (it must be a multiple of --alignment, and pinned buffers live at the same\n"
    "time must not overlap), the others (empty field) are placed around them; so\n"
    "planning an --output file again checks it, giving back its offsets and size.\n"
    "Prints the arena size against the lower bound (the most bytes live at one time).\n"
    "Searches on every core for up to --time-limit per instance, less when it reaches\n"
    "the bound; results may vary a little from run to run.\n"
    "--capacity and --budget: the plan is the smallest arena found; when --budget is\n"
    "set and that arena exceeds it, defragmentation moves fit it into --budget (not with\n"
    "pinned buffers, which cannot move); then, when --capacity is set, the arena (after\n"
    "any moves) must fit it, or the instance fails with the best size found and the\n"
    "lower bound.\n"
    "Sizes take unit suffixes: 2MiB, 64KiB, 1GB (K, M, G are powers of 1024).\n"
    "Exit status: 0 when every instance was planned (and fits --capacity), 1 when one\n"
    "failed, 2 on usage errors.";

struct ArenaFlags {
  bool json = false;
  bool pretty = false;
  int64_t alignment = 1;
  int64_t budget = 0;
  int64_t capacity = 0;
  double time_limit = 0.9;
  std::vector<std::string> inputs;
  std::string output;
};

// One planned instance: the instance, its plan, and what the text and JSON
// reports print.
struct ArenaResult {
  ArenaInstance instance;
  ArenaPlan plan;
  MovingArenaPlan moving;
  int64_t lower_bound = 0;
  double ms = 0;
};

absl::StatusOr<ArenaResult> PlanFile(const std::string& path, const ArenaFlags& flags,
                                     const InstanceSearchOptions& search) {
  ASSIGN_OR_RETURN(std::string text, ReadFileBytes(path));
  ArenaResult result;
  absl::StatusOr<ArenaInstance> instance = ParseArenaCsv(text);
  if (!instance.ok()) return instance.status();
  result.instance = std::move(instance).value();
  const std::vector<ArenaBuffer>& buffers = result.instance.buffers;
  const bool pinned = std::any_of(result.instance.offsets.begin(), result.instance.offsets.end(),
                                  [](int64_t offset) { return offset >= 0; });
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<ArenaPlan> plan =
      PlanArenaInstanceWithPinned(buffers, result.instance.offsets, flags.alignment, search);
  if (!plan.ok() && pinned) {
    return absl::Status(plan.status().code(),
                        absl::StrCat(plan.status().message(), " (buffers numbered from 0 in file order)"));
  }
  if (!plan.ok()) return plan.status();
  result.plan = std::move(plan).value();
  if (flags.budget > 0 && result.plan.size_bytes > flags.budget) {
    if (pinned) {
      return absl::InvalidArgumentError(absl::StrCat("the arena (", result.plan.size_bytes,
                                                     " bytes) exceeds --budget, and defragmentation cannot "
                                                     "move the pinned buffers (the offset column)"));
    }
    absl::StatusOr<MovingArenaPlan> moved = PlanArenaWithMoves(buffers, flags.alignment, flags.budget);
    if (!moved.ok()) return moved.status();
    result.moving = std::move(moved).value();
    result.plan = result.moving.plan;
  }
  result.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  result.lower_bound = ArenaLowerBound(buffers);
  if (flags.capacity > 0 && result.plan.size_bytes > flags.capacity) {
    return absl::ResourceExhaustedError(absl::StrCat("no packing fits --capacity ", flags.capacity,
                                                     " bytes: the best arena found is ", result.plan.size_bytes,
                                                     " bytes, the lower bound ", result.lower_bound, " bytes",
                                                     result.lower_bound > flags.capacity ? " (no arena can fit)" : ""));
  }
  return result;
}

nlohmann::ordered_json Head(const std::string& path) {
  nlohmann::ordered_json j = JsonLineHeader(path);
  j["model"] = path;
  return j;
}

nlohmann::ordered_json ResultJson(const std::string& path, const ArenaResult& r, const ArenaFlags& flags) {
  nlohmann::ordered_json j = Head(path);
  j["size_bytes"] = r.plan.size_bytes;
  j["lower_bound_bytes"] = r.lower_bound;
  j["alignment"] = flags.alignment;
  if (flags.capacity > 0) j["capacity_bytes"] = flags.capacity;
  j["solve_ms"] = r.ms;
  j["buffers"] = nlohmann::ordered_json::array();
  for (size_t i = 0; i < r.instance.ids.size(); ++i) {
    j["buffers"].push_back({{"id", r.instance.ids[i]},
                            {"offset", r.plan.offsets[i]},
                            {"pinned", !r.instance.offsets.empty() && r.instance.offsets[i] >= 0}});
  }
  if (flags.budget > 0) {
    j["budget_bytes"] = flags.budget;
    j["moves"] = nlohmann::ordered_json::array();
    for (const ArenaMove& m : r.moving.moves) {
      // "before": the time step before which the copy runs, in the file's units.
      j["moves"].push_back(
          {{"id", r.instance.ids[m.buffer]}, {"before", m.before_step}, {"from", m.from_offset}, {"to", m.to_offset}});
    }
    j["moved_bytes"] = r.moving.moved_bytes;
  }
  return j;
}

std::string ResultText(const std::string& path, const ArenaResult& r) {
  std::string line = absl::StrCat(
      std::filesystem::path(path).stem().string(), ": ", r.instance.buffers.size(), " buffers, arena ",
      WithCommas(r.plan.size_bytes), " bytes, lower bound ", WithCommas(r.lower_bound),
      absl::StrFormat(" (%.3fx), %.1f ms",
                      r.lower_bound > 0 ? static_cast<double>(r.plan.size_bytes) / r.lower_bound : 1.0, r.ms));
  if (!r.moving.moves.empty()) {
    absl::StrAppend(&line, ", ", r.moving.moves.size(), " moves copying ", WithCommas(r.moving.moved_bytes), " bytes");
  }
  return line;
}

absl::Status WriteOutput(const std::string& path, const ArenaResult& r) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << WriteArenaCsv(r.instance, r.plan.offsets);
  out.close();
  if (!out) return absl::UnavailableError(absl::StrCat("cannot write --output '", path, "'"));
  return absl::OkStatus();
}

}  // namespace

int RunArena(const std::vector<std::string>& args) {
  ArenaFlags flags;
  FlagSet flag_set("serenity-client arena [--input] INSTANCE.csv... [flags]", kDescription);
  flag_set.AddRepeated("input", &flags.inputs, "FILE",
                       "An instance to plan, as MiniMalloc's --input (positional files are planned too,\n"
                       "after these).");
  flag_set.AddString("output", &flags.output, "FILE",
                     "Write the instance with its offsets to FILE, as MiniMalloc does: the header\n"
                     "id,lower,upper,size,offset and the input's buffers in input order (lower, upper\n"
                     "half-open). Takes one instance; nothing is written when it fails.");
  flag_set.AddBytes("capacity", &flags.capacity, "BYTES",
                    "Hard limit on the arena: an instance whose best arena is larger fails (exit 1)\n"
                    "(default: 0, no limit).");
  flag_set.AddBytes("budget", &flags.budget, "BYTES",
                    "When the static arena exceeds BYTES, fit it with defragmentation moves (reported\n"
                    "as moves and moved_bytes; JSON adds \"moves\": [{\"id\", \"before\", \"from\", \"to\"}])\n"
                    "(default: 0, no moves).");
  flag_set.AddBytes("alignment", &flags.alignment, "BYTES", "Offset alignment of the buffers placed.");
  flag_set.AddDouble("time-limit", &flags.time_limit, "SECONDS", "Search time per instance.");
  flag_set.AddBool("json", &flags.json,
                   "Print one JSON object per instance, one per line (schema/arena-output.schema.json):\n"
                   "{\"schema_version\": 1, \"source\", \"model\" (the input path), \"size_bytes\",\n"
                   "\"lower_bound_bytes\", \"alignment\", \"solve_ms\", \"buffers\": [{\"id\", \"offset\",\n"
                   "\"pinned\"}], ...}; a failed instance gives {\"schema_version\", \"source\", \"model\",\n"
                   "\"error\": {\"code\", \"message\"}} (codes as absl's: INVALID_ARGUMENT, NOT_FOUND,\n"
                   "RESOURCE_EXHAUSTED for --capacity).");
  flag_set.AddBool("pretty", &flags.pretty, "With --json, indent each object over several lines.");
  absl::Status parsed = flag_set.Parse(args);
  if (flag_set.help_requested()) {
    std::cout << flag_set.Help();
    return 0;
  }
  std::vector<std::string> inputs = flags.inputs;
  inputs.insert(inputs.end(), flag_set.positionals().begin(), flag_set.positionals().end());
  std::string usage_error;
  if (!parsed.ok()) {
    usage_error = std::string(parsed.message());
  } else if (inputs.empty()) {
    usage_error = "give at least one INSTANCE.csv (see --help)";
  } else if (flags.alignment < 1) {
    usage_error = "--alignment must be at least 1";
  } else if (!(flags.time_limit >= 0)) {
    usage_error = "--time-limit must be a number of seconds, at least 0";
  } else if (!flags.output.empty() && inputs.size() > 1) {
    usage_error = absl::StrCat("--output takes one instance, not ", inputs.size());
  }
  if (!usage_error.empty()) {
    std::cerr << "serenity-client arena: " << usage_error << "\n";
    return 2;
  }
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  ThreadPool pool(cores);
  InstanceSearchOptions search;
  search.seconds = flags.time_limit;
  search.chains = cores;
  search.executor = &pool;
  int failures = 0;
  for (const std::string& path : inputs) {
    absl::StatusOr<ArenaResult> result = PlanFile(path, flags, search);
    absl::Status status = result.status();
    if (status.ok() && !flags.output.empty()) status = WriteOutput(flags.output, *result);
    if (!status.ok()) {
      ++failures;
      std::cerr << path << ": " << status.message() << "\n";
      if (flags.json) {
        std::cout << FormatJsonLine(ErrorLine(path, status), flags.pretty) << std::endl;
      }
      continue;
    }
    std::cout << (flags.json ? FormatJsonLine(ResultJson(path, *result, flags), flags.pretty)
                             : ResultText(path, *result))
              << std::endl;
  }
  return failures == 0 ? 0 : 1;
}

}  // namespace serenity
