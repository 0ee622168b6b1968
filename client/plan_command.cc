#include "client/plan_command.h"

#include <algorithm>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "client/connection.h"
#include "client/levels_file.h"
#include "client/memory_plot.h"
#include "client/model_file.h"
#include "client/pareto_plot.h"
#include "client/plan_output.h"
#include "client/request_flags.h"
#include "common/command_line.h"
#include "common/thread_pool.h"
#include "core/onnx/onnx_export.h"
#include "core/plan_request.h"
#include "core/planner.h"
#include "core/request_scan.h"
#include "core/rewrite/choose.h"
#include "core/rewrite/concat_conv.h"
#include "core/util/status_macros.h"
#include "grpcpp/grpcpp.h"
#include "serenity/v1/scheduler.grpc.pb.h"

namespace serenity {
namespace {

struct PlanFlags {
  ConnectionFlags connection;
  RequestFlags request;
  bool local = false;
  bool json = false;
  bool pretty = false;
  std::string order_file;
  std::string export_path;
  std::string plot_path;
  std::string pareto_svg_path;  // issue 19: the (peak, time) frontier
  std::string levels_file;      // issue 20: nested sparse models
  double timeout = 120;
  int64_t max_ops = 200000;
  bool rewrite = false;  // identity graph rewriting (issue 17)
  std::string rewrite_form;
};

absl::StatusOr<v1::Plan> PlanRemote(v1::Scheduler::Stub& stub, const Connection& connection,
                                    const v1::PlanRequest& request, const PlanFlags& flags) {
  grpc::ClientContext context;
  connection.Prepare(&context, flags.timeout);
  v1::Plan plan;
  grpc::Status status = stub.Plan(&context, request, &plan);
  if (status.ok()) return plan;
  if (status.error_code() == grpc::StatusCode::UNAVAILABLE) {
    return absl::UnavailableError(absl::StrCat("cannot reach serenity-server at ", flags.connection.server, ": ",
                                               status.error_message(),
                                               " (start serenity-server, or plan in-process with --local)"));
  }
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
}

// Plans the model in `path` in-process (stub == nullptr) or on the server.
absl::StatusOr<v1::Plan> PlanModel(const std::string& path, const v1::PlanOptions& options, const v1::GivenOrder& given,
                                   const PlanFlags& flags, v1::Scheduler::Stub* stub, const Connection& connection) {
  ASSIGN_OR_RETURN(v1::PlanRequest request, ReadModelFile(path));
  *request.mutable_options() = options;
  *request.mutable_given_order() = given;
  if (stub != nullptr) return PlanRemote(*stub, connection, request, flags);
  // In-process, as the server does: refuse a graph above the op limit from
  // its counts, before building it (a million-op graph would otherwise take
  // tens of gigabytes of reachability and end in an abort).
  ASSIGN_OR_RETURN(RequestShape shape, ScanPlanRequest(request.SerializeAsString()));
  if (shape.ops > flags.max_ops) {
    return absl::InvalidArgumentError(
        absl::StrCat("the graph has ", shape.ops, " ops; --local plans at most ", flags.max_ops, " (--max-ops)"));
  }
  static ThreadPool pool(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  return ExecutePlanRequest(request, &pool);
}

// Writes the model at `path` reordered by `plan` to `out` (ONNX models
// only); a plan with rewrites has its recipe applied to the file first
// (weights with data are sliced).
absl::Status ExportModel(const std::string& path, const v1::Plan& plan, const std::string& out) {
  if (absl::EndsWith(path, ".pb") || absl::EndsWith(path, ".pbtxt") || absl::EndsWith(path, ".textproto")) {
    return absl::InvalidArgumentError("--export-ordered needs an ONNX model");
  }
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (plan.has_rewrite()) {
    ASSIGN_OR_RETURN(bytes, ApplyRecipe(bytes, RewriteRecipeFromProto(plan.rewrite().recipe())));
  }
  ASSIGN_OR_RETURN(std::string exported, ExportOrderedModel(bytes, plan));
  std::ofstream file(out, std::ios::binary);
  file << exported;
  if (!file.good()) return absl::UnavailableError(absl::StrCat("cannot write '", out, "'"));
  return absl::OkStatus();
}

}  // namespace

int RunPlan(const std::vector<std::string>& args) {
  PlanFlags flags;
  FlagSet flag_set("serenity-client plan MODEL... [flags]",
                   "Plans each MODEL: the operator order with the least peak activation memory\n"
                   "found, its peak, a lower bound, arena offsets, and the file/Kahn/greedy\n"
                   "baselines. One model prints a summary, several print a comparison table.\n"
                   "MODEL is an ONNX file (weights are not needed and are not sent), or a\n"
                   "serenity.v1.Graph as .pb (binary) or .pbtxt (text). ONNX ops have no\n"
                   "workspace bytes unless --workspace gives them.\n"
                   "Exit status: 0 when every model was planned, 1 when one failed, 2 on usage errors.");
  AddConnectionFlags(flag_set, &flags.connection);
  flag_set.AddBool("local", &flags.local, "Plan in this process instead of calling a server.");
  flag_set.AddInt("max-ops", &flags.max_ops, "N",
                  "With --local: the largest graph planned, in ops (as serenity-server's --max-ops;\n"
                  "reachability bitsets only within the segments between cut points, m^2/4 bytes for a\n"
                  "segment of m ops and at most 256 MB in all).");
  flag_set.AddBool("json", &flags.json,
                   "Print one JSON object per line and model: schema_version, source (the MODEL\n"
                   "argument), then every field of the serenity.v1.Plan message; a failed model gives\n"
                   "{schema_version, source, model, error: {code, message}} (docs/json-format.md,\n"
                   "schema/serenity-output.schema.json).");
  flag_set.AddBool("pretty", &flags.pretty, "The --json objects indented (implies --json).");
  AddRequestFlags(flag_set, &flags.request, /*with_outputs=*/true);
  flag_set.AddString("order", &flags.order_file, "FILE",
                     "Evaluate this order instead of searching: a JSON list of op indices or op\n"
                     "names. Serenity's own order is reported beside it.");
  flag_set.AddString("export-ordered", &flags.export_path, "OUT.onnx",
                     "Write the ONNX model (weights untouched) with its nodes in the planned order\n"
                     "and the arena in metadata_props (serenity.offset/<tensor>, ...; see docs/client.md).");
  flag_set.AddString("plot", &flags.plot_path, "OUT.svg",
                     "Draw live bytes per step of every order and the arena (SVG).");
  flag_set.AddString("pareto-svg", &flags.pareto_svg_path, "OUT.svg",
                     "With --pareto: draw the (peak, time) frontier, its staircase and the plan (SVG).");
  flag_set.AddDouble("timeout", &flags.timeout, "SECONDS", "Deadline of each call to the server.");
  // Identity graph rewriting (issue 17).
  flag_set.AddBool("rewrite", &flags.rewrite,
                   "Identity graph rewriting where it lowers the best peak (docs/rewriting.md): a\n"
                   "Concat whose output reaches only Convs (directly or through per-channel ops such\n"
                   "as BatchNormalization and Relu, copied per input) becomes partial Convs over the\n"
                   "Concat's inputs, summed (grouped and depthwise Convs: joined); sums of three or\n"
                   "more tensors add their operands as the plan makes them. Sites are tried in rounds\n"
                   "where the peak is. The plan is the rewritten graph's; the peak without is reported\n"
                   "beside. ONNX models only; not with --order. On a server the rewrite is planned\n"
                   "afresh each call (not cached) and ends by the server's job time limit. With\n"
                   "--export-ordered: the rewritten model.");
  flag_set.AddString("rewrite-form", &flags.rewrite_form, "FORM",
                     "With --rewrite, how the partial Convs of a split Conv are summed: standard\n"
                     "(default: Conv + Add, standard ONNX ops; an Add needs its own buffer unless\n"
                     "--in-place) or accumulate (serenity.ConvAccumulate ops adding into one buffer,\n"
                     "for runtimes that implement them: a lower peak). The reported peak, order and\n"
                     "arena are those of the form chosen, and --export-ordered writes it.");
  // Nested sparse models (issue 20).
  flag_set.AddString("levels", &flags.levels_file, "FILE",
                     "Sparsity levels of a nested sparse model, densest first, and switch points:\n"
                     "JSON {\"levels\": [{\"name\", \"density\": {tensor: fraction}, \"time_us\"}],\n"
                     "\"switch_points\": [op names]}; the plan then reports weight bytes per level\n"
                     "(CSR and nested CSR) and each switch point (docs/sparsity.md).");
  absl::Status parsed = flag_set.Parse(args);
  if (flag_set.help_requested()) {
    std::cout << flag_set.Help();
    return 0;
  }
  if (!parsed.ok()) {
    std::cerr << "serenity-client plan: " << parsed.message() << "\n";
    return 2;
  }
  flags.json = flags.json || flags.pretty;
  if (flag_set.positionals().empty()) {
    std::cerr << "serenity-client plan: give at least one MODEL file (see --help)\n";
    return 2;
  }
  if (flags.max_ops < 1) {
    std::cerr << "serenity-client plan: --max-ops must be positive\n";
    return 2;
  }
  v1::PlanOptions options;
  if (absl::Status s = FillOptions(flags.request, options); !s.ok()) {
    std::cerr << "serenity-client plan: " << s.message() << "\n";
    return 2;
  }

  if (!flags.levels_file.empty()) {
    if (absl::Status s = ReadLevelsFile(flags.levels_file, options); !s.ok()) {
      std::cerr << "serenity-client plan: " << s.message() << "\n";
      return 2;
    }
  }

  if ((!flags.export_path.empty() || !flags.plot_path.empty()) && flag_set.positionals().size() > 1) {
    std::cerr << "serenity-client plan: --export-ordered and --plot apply to one model\n";
    return 2;
  }
  if (!flags.pareto_svg_path.empty() && (!flags.request.pareto || flag_set.positionals().size() > 1)) {
    std::cerr << "serenity-client plan: --pareto-svg needs --pareto and applies to one model\n";
    return 2;
  }
  if (flags.rewrite) {
    if (!flags.order_file.empty()) {
      std::cerr << "serenity-client plan: --order cannot be combined with --rewrite (the order names the ops of "
                   "the graph before rewriting)\n";
      return 2;
    }
    options.set_rewrite(true);
  }
  if (!flags.rewrite_form.empty()) {
    if (!flags.rewrite) {
      std::cerr << "serenity-client plan: --rewrite-form applies only with --rewrite\n";
      return 2;
    }
    options.set_rewrite_form(flags.rewrite_form);
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
  Connection connection;
  if (!flags.local) {
    absl::StatusOr<Connection> connected = Connect(flags.connection);
    if (!connected.ok()) {
      std::cerr << "serenity-client plan: " << connected.status().message() << "\n";
      return 2;
    }
    connection = std::move(connected).value();
    stub = v1::Scheduler::NewStub(connection.channel);
  }

  PlanPrinter printer(flags.json, flags.pretty, flag_set.positionals().size() > 1);
  for (const std::string& path : flag_set.positionals()) {
    absl::StatusOr<v1::Plan> plan = PlanModel(path, options, given, flags, stub.get(), connection);
    if (!plan.ok()) {
      printer.Fail(path, plan.status());
      continue;
    }
    if (!flags.export_path.empty()) {
      if (absl::Status s = ExportModel(path, *plan, flags.export_path); !s.ok()) {
        printer.Fail(path, s);
        continue;
      }
    }
    if (!flags.plot_path.empty()) {
      std::ofstream svg(flags.plot_path);
      svg << MemoryPlotSvg(*plan);
      if (!svg.good()) {
        printer.Fail(path, absl::UnavailableError(absl::StrCat("cannot write '", flags.plot_path, "'")));
        continue;
      }
    }
    if (!flags.pareto_svg_path.empty()) {
      std::ofstream svg(flags.pareto_svg_path);
      svg << ParetoPlotSvg(*plan);
      if (!svg.good()) {
        printer.Fail(path, absl::UnavailableError(absl::StrCat("cannot write '", flags.pareto_svg_path, "'")));
        continue;
      }
    }
    printer.Print(path, std::move(plan).value());
  }
  return printer.Finish();
}

}  // namespace serenity
