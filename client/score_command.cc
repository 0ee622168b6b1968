#include "client/score_command.h"

#include <algorithm>
#include <fstream>
#include <iostream>
#include <mutex>
#include <sstream>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "client/connection.h"
#include "client/json_format.h"
#include "client/model_file.h"
#include "client/plan_output.h"
#include "client/request_flags.h"
#include "common/command_line.h"
#include "grpcpp/grpcpp.h"
#include "serenity/v1/scheduler.grpc.pb.h"

namespace serenity {
namespace {

// Reads the --from-file list at `path` ("-": standard input).
absl::StatusOr<std::vector<std::string>> ReadModelList(const std::string& path) {
  std::stringstream text;
  if (path == "-") {
    text << std::cin.rdbuf();
  } else {
    std::ifstream in(path);
    if (!in) return absl::InvalidArgumentError(absl::StrCat("--from-file: cannot open '", path, "'"));
    text << in.rdbuf();
  }
  return ParseModelList(text.str());
}

}  // namespace

std::vector<std::string> ParseModelList(absl::string_view text) {
  std::vector<std::string> models;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line[0] == '#') continue;
    models.emplace_back(line);
  }
  return models;
}

nlohmann::ordered_json ScoreResultJsonLine(absl::string_view source, const v1::ScoreResult& result) {
  nlohmann::ordered_json line = JsonLineHeader(source);
  if (result.code() != 0) {
    line["model"] = std::string(source);
    line["id"] = result.id();
    line["index"] = result.index();
    line["error"] = ErrorJson(result.code(), result.error());
    return line;
  }
  nlohmann::ordered_json fields = MessageToJson(result);
  for (auto it = fields.begin(); it != fields.end(); ++it) {
    if (it.key() == "code" || it.key() == "error") continue;
    line[it.key()] = std::move(it.value());
  }
  return line;
}

std::string ScoreResultLine(absl::string_view model, const v1::ScoreResult& result) {
  if (result.code() != 0) return absl::StrCat(model, ": ", StatusCodeName(result.code()), ": ", result.error());
  std::string budget;
  if (result.slack_bytes() != 0 || !result.feasible()) {
    budget = absl::StrCat(result.feasible() ? ", fits" : ", does not fit", " (slack ",
                          result.slack_bytes() > 0 ? "+" : "", WithCommas(result.slack_bytes()), " B)");
  }
  return absl::StrCat(model, ": OK peak ", WithCommas(result.peak_bytes()), " B", budget, ", ",
                      EnumShortName(result.certificate()), ", cache ", result.cache());
}

int RunScore(const std::vector<std::string>& args) {
  ConnectionFlags connection_flags;
  RequestFlags request_flags;
  bool json = false;
  bool pretty = false;
  std::string list_file;
  double timeout = 600;
  bool rewrite = false;  // identity graph rewriting (issue 17)
  std::string rewrite_form;
  FlagSet flag_set("serenity-client score MODEL... [flags]",
                   "Scores every MODEL in one streaming call to a serenity-server (NAS pipelines):\n"
                   "the least peak activation memory found, whether it fits --budget, and the slack\n"
                   "(peak - budget; <= 0 fits). One line per model, printed as results arrive (not\n"
                   "in argument order). A file that cannot be read gets its own error line; the\n"
                   "others go on. Arena offsets are not computed (use plan for those).\n"
                   "Exit status: 0 when every model was scored, 1 when one failed, 2 on usage errors.");
  AddConnectionFlags(flag_set, &connection_flags);
  AddRequestFlags(flag_set, &request_flags, /*with_outputs=*/false);
  flag_set.AddString("from-file", &list_file, "LIST",
                     "Also score the models listed in LIST, one path per line (blank lines and lines\n"
                     "starting with # are skipped; '-' reads the list from standard input).");
  flag_set.AddBool("json", &json,
                   "One JSON object per line: schema_version, source (the MODEL argument), id, index,\n"
                   "peak_bytes, feasible, slack_bytes, certificate, ...; a failed model gives\n"
                   "{schema_version, source, model, id, index, error: {code, message}}\n"
                   "(docs/json-format.md, schema/serenity-output.schema.json).");
  flag_set.AddBool("pretty", &pretty, "The --json objects indented (implies --json).");
  flag_set.AddDouble("timeout", &timeout, "SECONDS", "Deadline of the whole streaming call.");
  flag_set.AddBool("rewrite", &rewrite,
                   "Score each model with identity graph rewriting, as plan --rewrite does: the peak\n"
                   "is then the rewritten graph's (Concat -> Conv sites rewritten where that lowers\n"
                   "it). ONNX models only (a Graph model fails on its own line); not cached.");
  flag_set.AddString("rewrite-form", &rewrite_form, "FORM",
                     "With --rewrite: standard (default; Conv + Add) or accumulate\n"
                     "(serenity.ConvAccumulate), as plan --rewrite-form.");
  absl::Status parsed = flag_set.Parse(args);
  if (flag_set.help_requested()) {
    std::cout << flag_set.Help();
    return 0;
  }
  if (!parsed.ok()) {
    std::cerr << "serenity-client score: " << parsed.message() << "\n";
    return 2;
  }
  json = json || pretty;
  std::vector<std::string> models = flag_set.positionals();
  if (!list_file.empty()) {
    if (list_file == "-" && std::find(models.begin(), models.end(), "-") != models.end()) {
      std::cerr << "serenity-client score: --from-file - and the model '-' cannot both read standard input\n";
      return 2;
    }
    absl::StatusOr<std::vector<std::string>> listed = ReadModelList(list_file);
    if (!listed.ok()) {
      std::cerr << "serenity-client score: " << listed.status().message() << "\n";
      return 2;
    }
    models.insert(models.end(), listed->begin(), listed->end());
  }
  if (models.empty()) {
    std::cerr << "serenity-client score: give at least one MODEL file, or --from-file (see --help)\n";
    return 2;
  }
  v1::PlanOptions options;
  if (absl::Status s = FillOptions(request_flags, options); !s.ok()) {
    std::cerr << "serenity-client score: " << s.message() << "\n";
    return 2;
  }
  options.set_rewrite(rewrite);
  if (!rewrite_form.empty()) {
    if (!rewrite) {
      std::cerr << "serenity-client score: --rewrite-form applies only with --rewrite\n";
      return 2;
    }
    options.set_rewrite_form(rewrite_form);
  }
  absl::StatusOr<Connection> connection = Connect(connection_flags);
  if (!connection.ok()) {
    std::cerr << "serenity-client score: " << connection.status().message() << "\n";
    return 2;
  }

  std::mutex print_mu;
  int failures = 0;
  std::vector<bool> reported(models.size(), false);
  // Prints the result for models[i] (i == models.size(): a candidate the
  // server named by an id the client never gave).
  auto print = [&](size_t i, const std::string& source, const v1::ScoreResult& result) {
    std::lock_guard<std::mutex> lock(print_mu);
    if (i < models.size()) reported[i] = true;
    if (result.code() != 0) ++failures;
    if (json) {
      std::cout << FormatJsonLine(ScoreResultJsonLine(source, result), pretty) << std::endl;
    } else {
      std::cout << ScoreResultLine(source, result) << std::endl;
    }
  };

  std::unique_ptr<v1::Scheduler::Stub> stub = v1::Scheduler::NewStub(connection->channel);
  grpc::ClientContext context;
  connection->Prepare(&context, timeout);
  auto stream = stub->Score(&context);
  // Requests go out from a second thread, so results print while later
  // files are still being read and sent.
  std::thread writer([&] {
    for (size_t i = 0; i < models.size(); ++i) {
      absl::StatusOr<v1::PlanRequest> request = ReadModelFile(models[i]);
      if (!request.ok()) {
        // Never sent, so no stream position: index -1.
        v1::ScoreResult failed;
        failed.set_id(std::to_string(i));
        failed.set_index(-1);
        failed.set_code(static_cast<int32_t>(request.status().code()));
        failed.set_error(std::string(request.status().message()));
        print(i, models[i], failed);
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
    print(known ? index : models.size(), known ? models[index] : absl::StrCat("candidate ", result.index()), result);
    ++answered;
  }
  writer.join();
  grpc::Status status = stream->Finish();
  if (!status.ok()) {
    std::cerr << "serenity-client score: the call to " << connection_flags.server << " failed after " << answered
              << " results: " << StatusCodeName(status.error_code()) << ": " << status.error_message() << "\n";
    // Under --json every model still gets its line: the call's error.
    for (size_t i = 0; json && i < models.size(); ++i) {
      if (reported[i]) continue;
      v1::ScoreResult unanswered;
      unanswered.set_id(std::to_string(i));
      unanswered.set_index(-1);
      unanswered.set_code(static_cast<int32_t>(status.error_code()));
      unanswered.set_error(status.error_message());
      print(i, models[i], unanswered);
    }
    return 1;
  }
  return failures == 0 ? 0 : 1;
}

}  // namespace serenity
