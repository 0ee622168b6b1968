#include "client/score_command.h"

#include <chrono>
#include <iostream>
#include <mutex>
#include <thread>

#include "absl/strings/str_cat.h"
#include "client/connection.h"
#include "client/model_file.h"
#include "client/plan_output.h"
#include "client/request_flags.h"
#include "common/command_line.h"
#include "grpcpp/grpcpp.h"
#include "serenity/v1/scheduler.grpc.pb.h"

namespace serenity {
namespace {

std::string CodeName(int32_t code) {
  static const char* const kNames[] = {"OK",
                                       "CANCELLED",
                                       "UNKNOWN",
                                       "INVALID_ARGUMENT",
                                       "DEADLINE_EXCEEDED",
                                       "NOT_FOUND",
                                       "ALREADY_EXISTS",
                                       "PERMISSION_DENIED",
                                       "RESOURCE_EXHAUSTED",
                                       "FAILED_PRECONDITION",
                                       "ABORTED",
                                       "OUT_OF_RANGE",
                                       "UNIMPLEMENTED",
                                       "INTERNAL",
                                       "UNAVAILABLE",
                                       "DATA_LOSS",
                                       "UNAUTHENTICATED"};
  if (code < 0 || code > 16) return absl::StrCat("CODE_", code);
  return kNames[code];
}

}  // namespace

nlohmann::ordered_json ScoreResultToJson(const std::string& model, const v1::ScoreResult& result) {
  nlohmann::ordered_json j;
  j["model"] = model;
  j["status"] = CodeName(result.code());
  if (result.code() != 0) {
    j["error"] = result.error();
    return j;
  }
  j["peak_bytes"] = result.peak_bytes();
  j["feasible"] = result.feasible();
  j["slack_bytes"] = result.slack_bytes();
  j["certificate"] = CertificateText(result.certificate());
  j["cache"] = result.cache();
  j["lower_bound_bytes"] = result.lower_bound_bytes();
  j["plan_id"] = result.plan_id();
  j["ms"] = result.total_ms();
  return j;
}

std::string ScoreResultLine(const std::string& model, const v1::ScoreResult& result) {
  if (result.code() != 0) return absl::StrCat(model, ": ", CodeName(result.code()), ": ", result.error());
  std::string budget;
  if (result.slack_bytes() != 0 || !result.feasible()) {
    budget = absl::StrCat(result.feasible() ? ", fits" : ", does not fit", " (slack ",
                          result.slack_bytes() > 0 ? "+" : "", WithCommas(result.slack_bytes()), " B)");
  } else if (result.feasible()) {
    budget = "";
  }
  return absl::StrCat(model, ": OK peak ", WithCommas(result.peak_bytes()), " B", budget, ", ",
                      CertificateText(result.certificate()), ", cache ", result.cache());
}

int RunScore(const std::vector<std::string>& args) {
  ConnectionFlags connection_flags;
  RequestFlags request_flags;
  bool json = false;
  double timeout = 600;
  FlagSet flag_set(
      "serenity-client score MODEL... [flags]",
      "Scores every MODEL in one streaming call to a serenity-server (NAS pipelines):\n"
      "the least peak activation memory found, whether it fits --budget, and the slack\n"
      "(peak - budget; <= 0 fits). One line per model, printed as results arrive (not\n"
      "in argument order). A file that cannot be read gets its own error line; the\n"
      "others go on. Arena offsets are not computed (use plan for those).\n"
      "Exit status: 0 when every model was scored, 1 when one failed, 2 on usage errors.");
  AddConnectionFlags(flag_set, &connection_flags);
  AddRequestFlags(flag_set, &request_flags, /*with_outputs=*/false);
  flag_set.AddBool("json", &json,
                   "One JSON object per line: {\"model\", \"status\", \"peak_bytes\", \"feasible\",\n"
                   "      \"slack_bytes\", \"certificate\", \"cache\", ...}.");
  flag_set.AddDouble("timeout", &timeout, "SECONDS", "Deadline of the whole streaming call.");
  absl::Status parsed = flag_set.Parse(args);
  if (flag_set.help_requested()) {
    std::cout << flag_set.Help();
    return 0;
  }
  if (!parsed.ok()) {
    std::cerr << "serenity-client score: " << parsed.message() << "\n";
    return 2;
  }
  const std::vector<std::string>& models = flag_set.positionals();
  if (models.empty()) {
    std::cerr << "serenity-client score: give at least one MODEL file (see --help)\n";
    return 2;
  }
  v1::PlanOptions options;
  if (absl::Status s = FillOptions(request_flags, options); !s.ok()) {
    std::cerr << "serenity-client score: " << s.message() << "\n";
    return 2;
  }
  absl::StatusOr<Connection> connection = Connect(connection_flags);
  if (!connection.ok()) {
    std::cerr << "serenity-client score: " << connection.status().message() << "\n";
    return 2;
  }

  std::mutex print_mu;
  int failures = 0;
  auto print = [&](const std::string& model, const v1::ScoreResult& result) {
    std::lock_guard<std::mutex> lock(print_mu);
    if (result.code() != 0) ++failures;
    if (json) {
      std::cout << ScoreResultToJson(model, result).dump() << std::endl;
    } else {
      std::cout << ScoreResultLine(model, result) << std::endl;
    }
  };

  std::unique_ptr<v1::Scheduler::Stub> stub = v1::Scheduler::NewStub(connection->channel);
  grpc::ClientContext context;
  connection->Authorize(&context);
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::milliseconds(static_cast<int64_t>(timeout * 1000)));
  auto stream = stub->Score(&context);
  // Requests go out from a second thread, so results print while later
  // files are still being read and sent.
  std::thread writer([&] {
    for (size_t i = 0; i < models.size(); ++i) {
      absl::StatusOr<v1::PlanRequest> request = ReadModelFile(models[i]);
      if (!request.ok()) {
        v1::ScoreResult failed;
        failed.set_code(static_cast<int32_t>(request.status().code()));
        failed.set_error(std::string(request.status().message()));
        print(models[i], failed);
        continue;
      }
      v1::ScoreRequest candidate;
      candidate.set_id(std::to_string(i));
      *candidate.mutable_request() = std::move(request).value();
      *candidate.mutable_request()->mutable_options() = options;
      if (!stream->Write(candidate)) break;  // the call ended; Finish says why
    }
    stream->WritesDone();
  });
  v1::ScoreResult result;
  size_t answered = 0;
  while (stream->Read(&result)) {
    size_t index = 0;
    const bool known = absl::SimpleAtoi(result.id(), &index) && index < models.size();
    print(known ? models[index] : absl::StrCat("candidate ", result.index()), result);
    ++answered;
  }
  writer.join();
  grpc::Status status = stream->Finish();
  if (!status.ok()) {
    std::cerr << "serenity-client score: the call to " << connection_flags.server << " failed after " << answered
              << " results: " << CodeName(status.error_code()) << ": " << status.error_message() << "\n";
    return 1;
  }
  return failures == 0 ? 0 : 1;
}

}  // namespace serenity
