// serenity-client: plans models through a serenity-server or in-process.
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <thread>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "client/memory_plot.h"
#include "client/model_file.h"
#include "client/plan_output.h"
#include "common/command_line.h"
#include "common/thread_pool.h"
#include "core/arena/arena_csv.h"
#include "core/arena/arena_planner.h"
#include "core/onnx/onnx_export.h"
#include "core/plan_proto.h"
#include "core/planner.h"
#include "core/util/status_macros.h"
#include "grpcpp/grpcpp.h"
#include "serenity/v1/scheduler.grpc.pb.h"

namespace serenity {
namespace {

constexpr char kTopHelp[] =
    "Usage: serenity-client COMMAND [args] [flags]\n"
    "\n"
    "Finds the execution order of a network's operators that minimises peak\n"
    "activation memory, with arena offsets for every tensor.\n"
    "\n"
    "Commands:\n"
    "  plan MODEL...   plan one or more models (ONNX, or a serenity.v1.Graph as\n"
    "                  .pb binary or .pbtxt text) on a server or with --local\n"
    "  arena CSV...    plan arena offsets for bare instances (MiniMalloc CSV),\n"
    "                  in this process\n"
    "\n"
    "Run 'serenity-client COMMAND --help' for the flags of a command.\n";

struct PlanFlags {
  std::string server = "127.0.0.1:50051";
  bool local = false;
  bool json = false;
  bool alias_views = false;
  bool count_weights = false;
  bool in_place = false;
  int64_t alignment = kDefaultAlignment;
  int64_t budget = 0;
  std::vector<std::string> dims;
  std::string workspace_file;
  double time_limit = 0;
  std::string algorithm = "auto";
  std::string objective = "min_peak";
  double step_time_limit = 1;
  int64_t max_states = 20'000'000;
  std::string onchip;
  std::string order_file;
  std::string export_path;
  std::string plot_path;
  double timeout = 120;
};

absl::Status FillOptions(const PlanFlags& flags, v1::PlanOptions& options) {
  options.mutable_memory_model()->set_alias_views(flags.alias_views);
  options.mutable_memory_model()->set_count_weights(flags.count_weights);
  options.mutable_memory_model()->set_in_place(flags.in_place);
  options.set_alignment(flags.alignment);
  options.set_memory_budget_bytes(flags.budget);
  options.set_time_limit_seconds(flags.time_limit);
  options.set_algorithm(flags.algorithm);
  options.set_objective(flags.objective);
  options.set_step_time_limit_seconds(flags.step_time_limit);
  options.set_max_search_states(flags.max_states);
  for (absl::string_view size : absl::StrSplit(flags.onchip, ',', absl::SkipEmpty())) {
    int64_t bytes = 0;
    if (!absl::SimpleAtoi(size, &bytes) || bytes <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("--onchip takes positive byte counts separated by commas, not '", size, "'"));
    }
    options.add_onchip_bytes(bytes);
  }
  for (const std::string& dim : flags.dims) {
    std::vector<std::string> parts = absl::StrSplit(dim, absl::MaxSplits('=', 1));
    int64_t value = 0;
    if (parts.size() != 2 || parts[0].empty() || !absl::SimpleAtoi(parts[1], &value) || value < 0) {
      return absl::InvalidArgumentError(absl::StrCat("--dim takes NAME=VALUE with VALUE >= 0, not '", dim, "'"));
    }
    (*options.mutable_dim_values())[parts[0]] = value;
  }
  if (!flags.workspace_file.empty()) return ReadWorkspaceFile(flags.workspace_file, options);
  return absl::OkStatus();
}

absl::StatusOr<v1::Plan> PlanRemote(v1::Scheduler::Stub& stub, const v1::PlanRequest& request,
                                    const PlanFlags& flags) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::milliseconds(static_cast<int64_t>(flags.timeout * 1000)));
  v1::Plan plan;
  grpc::Status status = stub.Plan(&context, request, &plan);
  if (status.ok()) return plan;
  if (status.error_code() == grpc::StatusCode::UNAVAILABLE) {
    return absl::UnavailableError(absl::StrCat("cannot reach serenity-server at ", flags.server, ": ",
                                               status.error_message(),
                                               " (start serenity-server, or plan in-process with --local)"));
  }
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
}

// Plans the model in `path` in-process (stub == nullptr) or on the server.
absl::StatusOr<v1::Plan> PlanModel(const std::string& path, const v1::PlanOptions& options,
                                   const v1::GivenOrder& given, const PlanFlags& flags, v1::Scheduler::Stub* stub) {
  ASSIGN_OR_RETURN(v1::PlanRequest request, ReadModelFile(path));
  *request.mutable_options() = options;
  *request.mutable_given_order() = given;
  if (stub != nullptr) return PlanRemote(*stub, request, flags);
  static ThreadPool pool(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  return ExecutePlanRequest(request, &pool);
}

// Writes the model at `path` reordered by `plan` to `out` (ONNX models only).
absl::Status ExportModel(const std::string& path, const v1::Plan& plan, const std::string& out) {
  if (absl::EndsWith(path, ".pb") || absl::EndsWith(path, ".pbtxt") || absl::EndsWith(path, ".textproto")) {
    return absl::InvalidArgumentError("--export-ordered needs an ONNX model");
  }
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSIGN_OR_RETURN(std::string exported, ExportOrderedModel(bytes, plan));
  std::ofstream file(out, std::ios::binary);
  file << exported;
  if (!file.good()) return absl::UnavailableError(absl::StrCat("cannot write '", out, "'"));
  return absl::OkStatus();
}

int RunPlan(const std::vector<std::string>& args) {
  PlanFlags flags;
  FlagSet flag_set(
      "serenity-client plan MODEL... [flags]",
      "Plans each MODEL: the operator order with the least peak activation memory\n"
      "found, its peak, a lower bound, arena offsets, and the file/Kahn/greedy\n"
      "baselines. One model prints a summary, several print a comparison table.\n"
      "MODEL is an ONNX file (weights are not needed and are not sent), or a\n"
      "serenity.v1.Graph as .pb (binary) or .pbtxt (text). ONNX ops have no\n"
      "workspace bytes unless --workspace gives them.\n"
      "Exit status: 0 when every model was planned, 1 when one failed, 2 on usage errors.");
  flag_set.AddString("server", &flags.server, "HOST:PORT", "serenity-server to call.");
  flag_set.AddBool("local", &flags.local, "Plan in this process instead of calling a server.");
  flag_set.AddBool("json", &flags.json,
                   "Print the JSON plan (one object; one per line for several models).");
  flag_set.AddBool("alias-views", &flags.alias_views,
                   "Let Reshape/Flatten/Squeeze/Unsqueeze/Identity share their input's buffer.");
  flag_set.AddBool("count-weights", &flags.count_weights,
                   "Count weights as resident for the whole run (excluded by default).");
  flag_set.AddBool("in-place", &flags.in_place,
                   "Let element-wise ops (Relu, Add, BatchNormalization, ...) overwrite an input of the\n"
                   "      same size whose last reader they are.");
  flag_set.AddInt("alignment", &flags.alignment, "BYTES", "Arena offset alignment (16 suits microcontrollers).");
  flag_set.AddInt("budget", &flags.budget, "BYTES", "Memory budget; the plan reports whether it fits. 0: none.");
  flag_set.AddRepeated("dim", &flags.dims, "NAME=VALUE", "Value of a symbolic ONNX dimension, e.g. batch=1.");
  flag_set.AddString("workspace", &flags.workspace_file, "FILE",
                     "JSON object {\"op name\": bytes} of temporary workspace per ONNX op.");
  flag_set.AddDouble("time-limit", &flags.time_limit, "SECONDS",
                     "Search time limit; when it runs out the best order found so far is returned\n"
                     "      with certificate best_found and a proven lower bound. 0: 10 s.");
  flag_set.AddString("algorithm", &flags.algorithm, "NAME",
                     "auto (exact search; certificate optimal when proven), dp, dp+dc,\n"
                     "      dp+dc+asb (the paper's signature DP alone, split at cut points, with\n"
                     "      adaptive soft budgeting; exponential in width), exhaustive, best_first\n"
                     "      (reference searches for small graphs), baseline (best of the\n"
                     "      baselines), file_order, kahn, greedy, inductor or xla (compilers' orders).");
  flag_set.AddDouble("step-time-limit", &flags.step_time_limit, "SECONDS",
                     "Time one budgeted DP may take under --algorithm dp+dc+asb.");
  flag_set.AddString("onchip", &flags.onchip, "BYTES,...",
                     "On-chip memory sizes for the off-chip traffic estimate of every order\n"
                     "      (Belady eviction; e.g. 65536,131072,262144).");
  flag_set.AddString("order", &flags.order_file, "FILE",
                     "Evaluate this order instead of searching: a JSON list of op indices or op\n"
                     "      names. Serenity's own order is reported beside it.");
  flag_set.AddString("export-ordered", &flags.export_path, "OUT.onnx",
                     "Write the ONNX model (weights untouched) with its nodes in the planned order\n"
                     "      and the arena in metadata_props (serenity.offset/<tensor>, ...; see README).");
  flag_set.AddString("plot", &flags.plot_path, "OUT.svg",
                     "Draw live bytes per step of every order and the arena (SVG).");
  flag_set.AddInt("max-states", &flags.max_states, "N",
                  "Most search states one search may remember (its memory cap; ~30-50 bytes each).");
  flag_set.AddString("objective", &flags.objective, "NAME",
                     "min_peak, or fit: stop at the first order that fits --budget (the minimum\n"
                     "      when none fits).");
  flag_set.AddDouble("timeout", &flags.timeout, "SECONDS", "Deadline of each call to the server.");
  absl::Status parsed = flag_set.Parse(args);
  if (flag_set.help_requested()) {
    std::cout << flag_set.Help();
    return 0;
  }
  if (!parsed.ok()) {
    std::cerr << "serenity-client plan: " << parsed.message() << "\n";
    return 2;
  }
  if (flag_set.positionals().empty()) {
    std::cerr << "serenity-client plan: give at least one MODEL file (see --help)\n";
    return 2;
  }
  v1::PlanOptions options;
  if (absl::Status s = FillOptions(flags, options); !s.ok()) {
    std::cerr << "serenity-client plan: " << s.message() << "\n";
    return 2;
  }

  if ((!flags.export_path.empty() || !flags.plot_path.empty()) && flag_set.positionals().size() > 1) {
    std::cerr << "serenity-client plan: --export-ordered and --plot apply to one model\n";
    return 2;
  }
  v1::GivenOrder given;
  if (!flags.order_file.empty()) {
    if (flag_set.positionals().size() > 1) {
      std::cerr << "serenity-client plan: --order applies to one model\n";
      return 2;
    }
    if (absl::Status s = ReadOrderFile(flags.order_file, given); !s.ok()) {
      std::cerr << "serenity-client plan: " << s.message() << "\n";
      return 2;
    }
  }

  std::unique_ptr<v1::Scheduler::Stub> stub;
  if (!flags.local) {
    grpc::ChannelArguments channel_args;
    channel_args.SetMaxReceiveMessageSize(256 * 1024 * 1024);
    channel_args.SetMaxSendMessageSize(256 * 1024 * 1024);
    stub = v1::Scheduler::NewStub(
        grpc::CreateCustomChannel(flags.server, grpc::InsecureChannelCredentials(), channel_args));
  }

  const bool several = flag_set.positionals().size() > 1;
  std::vector<v1::Plan> plans;
  int failures = 0;
  for (const std::string& path : flag_set.positionals()) {
    absl::StatusOr<v1::Plan> plan = PlanModel(path, options, given, flags, stub.get());
    if (!plan.ok()) {
      std::cerr << path << ": " << plan.status().message() << "\n";
      ++failures;
      continue;
    }
    if (!flags.export_path.empty()) {
      if (absl::Status s = ExportModel(path, *plan, flags.export_path); !s.ok()) {
        std::cerr << path << ": " << s.message() << "\n";
        ++failures;
        continue;
      }
    }
    if (!flags.plot_path.empty()) {
      std::ofstream svg(flags.plot_path);
      svg << MemoryPlotSvg(*plan);
      if (!svg.good()) {
        std::cerr << path << ": cannot write '" << flags.plot_path << "'\n";
        ++failures;
        continue;
      }
    }
    if (flags.json) {
      std::cout << (several ? PlanToJson(*plan).dump() : PlanToJson(*plan).dump(2)) << std::endl;
    } else if (!several) {
      std::cout << PlanSummary(*plan);
    }
    plans.push_back(std::move(plan).value());
  }
  if (several && !flags.json && !plans.empty()) std::cout << PlanTable(plans);
  return failures == 0 ? 0 : 1;
}

int RunArena(const std::vector<std::string>& args) {
  bool json = false;
  int64_t alignment = 1;
  FlagSet flag_set("serenity-client arena INSTANCE.csv... [flags]",
                   "Plans offsets for each instance, in this process: CSV with the header\n"
                   "id,lower,upper,size, one buffer per line, live on [lower, upper). Prints the\n"
                   "arena size against the lower bound (the most bytes live at one time).\n"
                   "Exit status: 0 when every file was planned, 1 when one failed, 2 on usage errors.");
  flag_set.AddBool("json", &json,
                   "Print {\"size_bytes\", \"lower_bound_bytes\", \"solve_ms\", \"buffers\": [{\"id\", \"offset\"}]}\n"
                   "      per instance (one per line for several).");
  flag_set.AddInt("alignment", &alignment, "BYTES", "Offset alignment.");
  absl::Status parsed = flag_set.Parse(args);
  if (flag_set.help_requested()) {
    std::cout << flag_set.Help();
    return 0;
  }
  if (!parsed.ok() || flag_set.positionals().empty() || alignment < 1) {
    std::cerr << "serenity-client arena: "
              << (!parsed.ok() ? std::string(parsed.message())
                  : alignment < 1 ? std::string("--alignment must be at least 1")
                                  : std::string("give at least one INSTANCE.csv (see --help)"))
              << "\n";
    return 2;
  }
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
    absl::StatusOr<ArenaPlan> plan = PlanArena(instance->buffers, alignment);
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
      std::cout << (flag_set.positionals().size() > 1 ? j.dump() : j.dump(2)) << std::endl;
    } else {
      std::cout << std::filesystem::path(path).stem().string() << ": " << instance->buffers.size()
                << " buffers, arena " << WithCommas(plan->size_bytes) << " bytes, lower bound " << WithCommas(bound)
                << absl::StrFormat(" (%.3fx), %.1f ms\n",
                                   bound > 0 ? static_cast<double>(plan->size_bytes) / bound : 1.0, ms);
    }
  }
  return failures == 0 ? 0 : 1;
}

}  // namespace
}  // namespace serenity

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    std::cout << serenity::kTopHelp;
    return args.empty() ? 2 : 0;
  }
  const std::string command = args[0];
  args.erase(args.begin());
  if (command == "plan") return serenity::RunPlan(args);
  if (command == "arena") return serenity::RunArena(args);
  std::cerr << "serenity-client: unknown command '" << command << "'\n\n" << serenity::kTopHelp;
  return 2;
}
