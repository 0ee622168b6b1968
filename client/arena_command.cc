#include "client/arena_command.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_format.h"
#include "client/plan_output.h"
#include "common/command_line.h"
#include "common/thread_pool.h"
#include "core/arena/arena_csv.h"
#include "core/arena/arena_planner.h"
#include "core/arena/defragment.h"
#include "core/arena/instance_search.h"
#include "nlohmann/json.hpp"

namespace serenity {

int RunArena(const std::vector<std::string>& args) {
  bool json = false;
  int64_t alignment = 1;
  int64_t budget = 0;
  double time_limit = 0.9;
  FlagSet flag_set("serenity-client arena INSTANCE.csv... [flags]",
                   "Plans offsets for each instance, in this process: CSV with the header\n"
                   "id,lower,upper,size, one buffer per line, live on [lower, upper). Prints the\n"
                   "arena size against the lower bound (the most bytes live at one time).\n"
                   "Searches on every core for up to --time-limit per instance, less when it\n"
                   "reaches the bound; results may vary a little from run to run.\n"
                   "Exit status: 0 when every file was planned, 1 when one failed, 2 on usage errors.");
  flag_set.AddBool("json", &json,
                   "Print {\"size_bytes\", \"lower_bound_bytes\", \"solve_ms\", \"buffers\": [{\"id\", \"offset\"}]}\n"
                   "per instance (one per line for several).");
  flag_set.AddInt("alignment", &alignment, "BYTES", "Offset alignment.");
  flag_set.AddDouble("time-limit", &time_limit, "SECONDS", "Search time per instance (default 0.9).");
  flag_set.AddInt("budget", &budget, "BYTES",
                  "When the static arena exceeds BYTES, fit it with defragmentation moves (reported\n"
                  "as moves and moved_bytes; JSON adds \"moves\": [{\"id\", \"before\", \"from\", \"to\"}]).");
  absl::Status parsed = flag_set.Parse(args);
  if (flag_set.help_requested()) {
    std::cout << flag_set.Help();
    return 0;
  }
  if (!parsed.ok() || flag_set.positionals().empty() || alignment < 1 || !(time_limit >= 0)) {
    std::cerr << "serenity-client arena: "
              << (!parsed.ok()         ? std::string(parsed.message())
                  : alignment < 1      ? std::string("--alignment must be at least 1")
                  : !(time_limit >= 0) ? std::string("--time-limit must be a number of seconds, at least 0")
                                       : std::string("give at least one INSTANCE.csv (see --help)"))
              << "\n";
    return 2;
  }
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  ThreadPool pool(cores);
  InstanceSearchOptions search;
  search.seconds = time_limit;
  search.chains = cores;
  search.executor = &pool;
  int failures = 0;
  for (const std::string& path : flag_set.positionals()) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
      std::cerr << path << ": cannot open '" << path << "'\n";
      ++failures;
      continue;
    }
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    absl::StatusOr<ArenaInstance> instance = ParseArenaCsv(text);
    if (!instance.ok()) {
      std::cerr << path << ": " << instance.status().message() << "\n";
      ++failures;
      continue;
    }
    const auto start = std::chrono::steady_clock::now();
    absl::StatusOr<ArenaPlan> plan = PlanArenaInstance(instance->buffers, alignment, search);
    MovingArenaPlan moving;
    if (plan.ok() && budget > 0 && plan->size_bytes > budget) {
      absl::StatusOr<MovingArenaPlan> moved = PlanArenaWithMoves(instance->buffers, alignment, budget);
      if (!moved.ok()) {
        std::cerr << path << ": " << moved.status().message() << "\n";
        ++failures;
        continue;
      }
      moving = std::move(moved).value();
      *plan = moving.plan;
    }
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (!plan.ok()) {
      std::cerr << path << ": " << plan.status().message() << "\n";
      ++failures;
      continue;
    }
    const int64_t bound = ArenaLowerBound(instance->buffers);
    if (json) {
      nlohmann::ordered_json j;
      j["size_bytes"] = plan->size_bytes;
      j["lower_bound_bytes"] = bound;
      j["solve_ms"] = ms;
      j["buffers"] = nlohmann::ordered_json::array();
      for (size_t i = 0; i < instance->ids.size(); ++i) {
        j["buffers"].push_back({{"id", instance->ids[i]}, {"offset", plan->offsets[i]}});
      }
      if (budget > 0) {
        j["moves"] = nlohmann::ordered_json::array();
        for (const ArenaMove& m : moving.moves) {
          // "before": the time step before which the copy runs, in the file's units.
          j["moves"].push_back({{"id", instance->ids[m.buffer]},
                                {"before", m.before_step},
                                {"from", m.from_offset},
                                {"to", m.to_offset}});
        }
        j["moved_bytes"] = moving.moved_bytes;
      }
      std::cout << (flag_set.positionals().size() > 1 ? j.dump() : j.dump(2)) << std::endl;
    } else {
      std::cout << std::filesystem::path(path).stem().string() << ": " << instance->buffers.size()
                << " buffers, arena " << WithCommas(plan->size_bytes) << " bytes, lower bound " << WithCommas(bound)
                << absl::StrFormat(" (%.3fx), %.1f ms",
                                   bound > 0 ? static_cast<double>(plan->size_bytes) / bound : 1.0, ms);
      if (!moving.moves.empty()) {
        std::cout << ", " << moving.moves.size() << " moves copying " << WithCommas(moving.moved_bytes) << " bytes";
      }
      std::cout << "\n";
    }
  }
  return failures == 0 ? 0 : 1;
}

}  // namespace serenity
