// serenity-server: serves the Scheduler service, gRPC health and reflection.
#include <algorithm>
#include <csignal>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/command_line.h"
#include "common/thread_pool.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/health_check_service_interface.h"
#include "grpcpp/grpcpp.h"
#include "server/scheduler_service.h"

namespace {

struct ServerFlags {
  std::string host = "127.0.0.1";
  int64_t port = 50051;
  std::string port_file;
  int64_t max_message_mb = 64;
  double shutdown_grace_seconds = 5;
  int64_t threads = std::max(1u, std::thread::hardware_concurrency());
};

int Run(int argc, char** argv) {
  ServerFlags flags;
  serenity::FlagSet flag_set(
      "serenity-server [flags]",
      "Serves the serenity.v1.Scheduler gRPC service (Plan), the gRPC health service\n"
      "(grpc.health.v1) and server reflection (v1alpha) on one plaintext port.\n"
      "SIGTERM or SIGINT stops accepting calls, lets running calls finish within the\n"
      "grace period, and exits 0.");
  flag_set.AddString("host", &flags.host, "ADDR", "Address to listen on; 0.0.0.0 for all interfaces.");
  flag_set.AddInt("port", &flags.port, "N", "Port to listen on; 0 picks a free port.");
  flag_set.AddString("port-file", &flags.port_file, "PATH",
                     "Write the bound port number to PATH once serving (useful with --port 0).");
  flag_set.AddInt("max-message-mb", &flags.max_message_mb, "MB", "Largest request or reply accepted.");
  flag_set.AddInt("threads", &flags.threads, "N",
                  "Worker threads for the parallel parts of searches (default: the core count).");
  flag_set.AddDouble("shutdown-grace-seconds", &flags.shutdown_grace_seconds, "S",
                     "How long running calls may take to finish after SIGTERM.");
  std::vector<std::string> args(argv + 1, argv + argc);
  absl::Status parsed = flag_set.Parse(args);
  if (flag_set.help_requested()) {
    std::cout << flag_set.Help();
    return 0;
  }
  if (!parsed.ok() || !flag_set.positionals().empty()) {
    std::cerr << "serenity-server: "
              << (parsed.ok() ? "unexpected argument '" + flag_set.positionals()[0] + "'"
                              : std::string(parsed.message()))
              << "\n";
    return 2;
  }
  if (flags.port < 0 || flags.port > 65535 || flags.max_message_mb < 1 || flags.threads < 1 || flags.threads > 1024) {
    std::cerr << "serenity-server: --port must be 0..65535, --max-message-mb at least 1, --threads 1..1024\n";
    return 2;
  }

  // Block the stop signals in every thread; a dedicated thread waits for them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  serenity::ThreadPool pool(static_cast<int>(flags.threads));
  serenity::SchedulerService service(&pool);
  grpc::ServerBuilder builder;
  int bound_port = 0;
  const std::string address = absl::StrCat(flags.host, ":", flags.port);
  builder.AddListeningPort(address, grpc::InsecureServerCredentials(), &bound_port);
  const int max_bytes = static_cast<int>(flags.max_message_mb * 1024 * 1024);
  builder.SetMaxReceiveMessageSize(max_bytes);
  builder.SetMaxSendMessageSize(max_bytes);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || bound_port == 0) {
    std::cerr << "serenity-server: cannot listen on " << address << "\n";
    return 1;
  }
  std::cerr << "serenity-server listening on " << flags.host << ":" << bound_port << "\n";
  if (!flags.port_file.empty()) {
    std::ofstream(flags.port_file) << bound_port << "\n";
  }

  std::thread stopper([&] {
    int signal_number = 0;
    sigwait(&stop_signals, &signal_number);
    std::cerr << "serenity-server: signal " << signal_number << ", draining\n";
    server->GetHealthCheckService()->SetServingStatus(false);
    server->Shutdown(std::chrono::system_clock::now() +
                     std::chrono::milliseconds(static_cast<int64_t>(flags.shutdown_grace_seconds * 1000)));
  });
  server->Wait();
  stopper.join();
  std::cerr << "serenity-server: stopped\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return Run(argc, argv); }
