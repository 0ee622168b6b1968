#include "client/get_command.h"

#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "client/connection.h"
#include "client/plan_output.h"
#include "common/command_line.h"
#include "grpcpp/grpcpp.h"
#include "serenity/v1/scheduler.grpc.pb.h"

namespace serenity {
namespace {

struct GetFlags {
  ConnectionFlags connection;
  bool json = false;
  bool pretty = false;
  double timeout = 120;
};

absl::StatusOr<v1::Plan> GetPlan(v1::Scheduler::Stub& stub, const Connection& connection, const std::string& plan_id,
                                 const GetFlags& flags) {
  grpc::ClientContext context;
  connection.Prepare(&context, flags.timeout);
  v1::GetPlanRequest request;
  request.set_plan_id(plan_id);
  v1::Plan plan;
  grpc::Status status = stub.GetPlan(&context, request, &plan);
  if (status.ok()) return plan;
  switch (status.error_code()) {
    case grpc::StatusCode::UNAVAILABLE:
      return absl::UnavailableError(
          absl::StrCat("cannot reach serenity-server at ", flags.connection.server, ": ", status.error_message()));
    case grpc::StatusCode::NOT_FOUND:
      return absl::NotFoundError(
          absl::StrCat(status.error_message(),
                       ": the server keeps plans for a while, per tenant; plan the model again for a new id"));
    default:
      return absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
  }
}

}  // namespace

int RunGet(const std::vector<std::string>& args) {
  GetFlags flags;
  FlagSet flag_set("serenity-client get PLAN_ID... [flags]",
                   "Fetches plans a serenity-server stored, by the plan_id a plan or score call\n"
                   "returned (GetPlan), and prints them as plan does: a summary for one, a table\n"
                   "for several, or --json lines whose source is the PLAN_ID.\n"
                   "Exit status: 0 when every plan was returned, 1 when one was not (NOT_FOUND:\n"
                   "the server no longer holds it), 2 on usage errors.");
  AddConnectionFlags(flag_set, &flags.connection);
  flag_set.AddBool("json", &flags.json,
                   "Print one JSON object per line and plan, as plan --json does; a plan not found\n"
                   "gives {schema_version, source, model, error: {code, message}}.");
  flag_set.AddBool("pretty", &flags.pretty, "The --json objects indented (implies --json).");
  flag_set.AddDouble("timeout", &flags.timeout, "SECONDS", "Deadline of each call to the server.");
  absl::Status parsed = flag_set.Parse(args);
  if (flag_set.help_requested()) {
    std::cout << flag_set.Help();
    return 0;
  }
  if (!parsed.ok()) {
    std::cerr << "serenity-client get: " << parsed.message() << "\n";
    return 2;
  }
  flags.json = flags.json || flags.pretty;
  if (flag_set.positionals().empty()) {
    std::cerr << "serenity-client get: give at least one PLAN_ID (see --help)\n";
    return 2;
  }
  absl::StatusOr<Connection> connection = Connect(flags.connection);
  if (!connection.ok()) {
    std::cerr << "serenity-client get: " << connection.status().message() << "\n";
    return 2;
  }
  std::unique_ptr<v1::Scheduler::Stub> stub = v1::Scheduler::NewStub(connection->channel);

  PlanPrinter printer(flags.json, flags.pretty, flag_set.positionals().size() > 1);
  for (const std::string& plan_id : flag_set.positionals()) {
    absl::StatusOr<v1::Plan> plan = GetPlan(*stub, *connection, plan_id, flags);
    if (!plan.ok()) {
      printer.Fail(plan_id, plan.status());
      continue;
    }
    printer.Print(plan_id, std::move(plan).value());
  }
  return printer.Finish();
}

}  // namespace serenity
