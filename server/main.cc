// serenity-server: serves the Scheduler service, gRPC health and reflection,
// and Prometheus metrics. Its flags are checked and defaulted in one step
// (server_flags.h), its credentials read in another (server_credentials.h);
// this file builds the server from them and runs it until SIGTERM or SIGINT.
#include <pthread.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <exception>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "common/command_line.h"
#include "common/job_runner.h"
#include "common/log.h"
#include "common/thread_pool.h"
#include "common/version.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/health_check_service_interface.h"
#include "prometheus/exposer.h"
#include "server/memory_admission.h"
#include "server/metrics.h"
#include "server/plan_cache.h"
#include "server/redis_store.h"
#include "server/request_memo.h"
#include "server/scheduler_service.h"
#include "server/scheduling_backend.h"
#include "server/server_credentials.h"
#include "server/server_flags.h"

namespace serenity {
namespace {

constexpr char kDescription[] =
    "Serves the serenity.v1.Scheduler gRPC service (Plan, Score, GetPlan), the gRPC\n"
    "health service (grpc.health.v1) and server reflection (v1alpha) on one port,\n"
    "over TLS (--tls-cert/--tls-key) or, only when asked, --plaintext.\n"
    "Each Plan call and Score candidate is a job: --threads jobs run at once, up to\n"
    "--max-queue wait, more are refused with RESOURCE_EXHAUSTED. Results are cached\n"
    "by a canonical hash of the graph (in process, and in Redis with --redis).\n"
    "SIGTERM or SIGINT: health turns NOT_SERVING and new calls get UNAVAILABLE while\n"
    "running jobs finish (within the grace period); then the server exits 0.";

// Exit codes: 2 for a bad command line or an unreadable file it names, 1
// when the server cannot listen.
int Fail(absl::string_view message) {
  std::cerr << "serenity-server: " << message << "\n";
  return 2;
}

// Serves Prometheus metrics on --metrics-port (when >= 0) and writes the
// port to --metrics-port-file; null when there is no endpoint.
absl::StatusOr<std::unique_ptr<prometheus::Exposer>> ServeMetrics(const ServerFlags& flags, ServerMetrics* metrics) {
  if (flags.metrics_port < 0) return nullptr;
  const std::string address = absl::StrCat(flags.host, ":", flags.metrics_port);
  std::unique_ptr<prometheus::Exposer> exposer;
  try {
    exposer = std::make_unique<prometheus::Exposer>(address, 1);
  } catch (const std::exception& e) {
    return absl::UnavailableError(absl::StrCat("cannot serve metrics on ", address, ": ", e.what()));
  }
  exposer->RegisterCollectable(metrics->registry());
  const std::vector<int> ports = exposer->GetListeningPorts();
  const int port = ports.empty() ? static_cast<int>(flags.metrics_port) : ports[0];
  Log("info", "metrics_listening", {{"address", absl::StrCat(flags.host, ":", port)}});
  if (!flags.metrics_port_file.empty()) std::ofstream(flags.metrics_port_file) << port << "\n";
  return exposer;
}

// The shared cache tier (--redis), or null without one.
absl::StatusOr<std::unique_ptr<RedisStore>> ConnectRedis(const ServerFlags& flags) {
  if (flags.redis.empty()) return nullptr;
  RedisStoreOptions options;
  options.address = flags.redis;
  options.timeout = absl::Milliseconds(flags.redis_timeout_ms);
  if (!flags.redis_auth_file.empty()) {
    absl::StatusOr<RedisCredentials> credentials = ReadRedisCredentials(flags.redis_auth_file);
    if (!credentials.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("--redis-auth-file: ", credentials.status().message()));
    }
    options.username = credentials->username;
    options.password = credentials->password;
  }
  absl::StatusOr<std::unique_ptr<RedisStore>> store = RedisStore::Create(options);
  if (!store.ok()) return absl::InvalidArgumentError(absl::StrCat("--redis: ", store.status().message()));
  return store;
}

// Waits for SIGTERM or SIGINT (blocked in every thread: `stop_signals`),
// then drains: new calls get UNAVAILABLE and health turns NOT_SERVING
// while the port stays open and running and queued jobs finish (within
// the grace period), so probes and new callers get NOT_SERVING and
// UNAVAILABLE, not a refused connection; then the server shuts down, and
// calls still running at the deadline are cancelled (their searches stop at
// once).
void DrainOnStopSignal(const sigset_t& stop_signals, double grace_seconds, JobRunner* runner, SchedulerService* service,
                       grpc::Server* server, grpc::Server* health_server) {
  int signal_number = 0;
  sigwait(&stop_signals, &signal_number);
  Log("info", "draining",
      {{"signal", absl::StrCat(signal_number)},
       {"running_jobs", absl::StrCat(runner->running())},
       {"queued_jobs", absl::StrCat(runner->queued())},
       {"grace_seconds", absl::StrCat(grace_seconds)}});
  service->StartDraining();
  server->GetHealthCheckService()->SetServingStatus(false);
  if (health_server != nullptr) health_server->GetHealthCheckService()->SetServingStatus(false);
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(static_cast<int64_t>(grace_seconds * 1000));
  while (runner->running() + runner->queued() > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  server->Shutdown(std::chrono::system_clock::now() +
                   std::chrono::duration_cast<std::chrono::system_clock::duration>(std::max(
                       deadline - std::chrono::steady_clock::now(), std::chrono::steady_clock::duration::zero())));
  if (health_server != nullptr) health_server->Shutdown();
}

// A plaintext server with only the health service (--health-port), or null
// without one. Its status follows the API server's (DrainOnStopSignal).
absl::StatusOr<std::unique_ptr<grpc::Server>> ServeHealth(const ServerFlags& flags) {
  if (flags.health_port < 0) return nullptr;
  grpc::ServerBuilder builder;
  int bound_port = 0;
  const std::string address = absl::StrCat(flags.host, ":", flags.health_port);
  builder.AddListeningPort(address, grpc::InsecureServerCredentials(), &bound_port);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || bound_port == 0) return absl::UnavailableError(absl::StrCat("cannot listen on ", address));
  Log("info", "health_listening", {{"address", absl::StrCat(flags.host, ":", bound_port)}});
  if (!flags.health_port_file.empty()) std::ofstream(flags.health_port_file) << bound_port << "\n";
  return server;
}

// Builds the server of sanitized `flags` with `credentials` and serves
// until a stop signal has drained it.
int Serve(const ServerFlags& flags, ServerCredentials credentials, const sigset_t& stop_signals) {
  ServerMetrics metrics;
  absl::StatusOr<std::unique_ptr<prometheus::Exposer>> exposer = ServeMetrics(flags, &metrics);
  if (!exposer.ok()) {
    std::cerr << "serenity-server: " << exposer.status().message() << "\n";
    return 1;
  }
  absl::StatusOr<std::unique_ptr<RedisStore>> redis = ConnectRedis(flags);
  if (!redis.ok()) return Fail(redis.status().message());

  const CacheBytes cache_bytes = CacheBytesOf(flags);
  PlanCache cache(cache_bytes.plans, std::move(redis).value(), &metrics, cache_bytes.per_tenant);
  RequestMemo memo(cache_bytes.memo);
  ThreadPool pool(static_cast<int>(flags.threads));
  BackendOptions backend_options;
  backend_options.cache_scope = flags.cache_scope == "shared" ? CacheScope::kShared : CacheScope::kTenant;
  backend_options.plan_id_secret = std::move(credentials.plan_id_secret);
  backend_options.max_ops = flags.max_ops;
  backend_options.max_job_seconds = flags.max_job_seconds;
  backend_options.max_search_states = flags.max_search_states;
  // A quarter of the server's memory holds requests as received, the rest
  // their jobs (MemoryBytesOf; see ServiceOptions).
  const ServerMemoryBytes memory = MemoryBytesOf(flags);
  backend_options.max_job_bytes = memory.per_job;
  MemoryAdmission received(memory.received);
  MemoryAdmission admission(memory.jobs, memory.per_job);
  ServiceOptions service_options;
  service_options.max_jobs_per_connection = flags.max_jobs_per_connection;
  service_options.max_jobs_per_tenant = flags.max_jobs_per_tenant;
  service_options.tokens = std::move(credentials.tokens);
  service_options.tenant_from_certificate = credentials.tenant_from_certificate;
  service_options.admission = &admission;
  service_options.received = &received;
  SchedulingBackend backend(&pool, &cache, &metrics, backend_options, &memo);
  JobRunner runner(static_cast<int>(flags.threads), flags.max_queue,
                   [&metrics](int64_t queued, int64_t running) { metrics.SetLoad(queued, running); });
  SchedulerService service(&runner, &backend, &metrics, service_options);

  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  int bound_port = 0;
  const std::string address = absl::StrCat(flags.host, ":", flags.port);
  builder.AddListeningPort(address, credentials.transport, &bound_port);
  const int max_bytes = static_cast<int>(flags.max_message_mb * 1024 * 1024);
  builder.SetMaxReceiveMessageSize(max_bytes);
  builder.SetMaxSendMessageSize(max_bytes);
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, static_cast<int>(flags.max_streams_per_connection));
  if (flags.max_connection_age_seconds > 0) {
    builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_MS,
                               static_cast<int>(std::max(1.0, flags.max_connection_age_seconds * 1000)));
    builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_GRACE_MS,
                               static_cast<int>(std::min(2e9, (flags.max_job_seconds + 5) * 1000)));
  }
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || bound_port == 0) {
    std::cerr << "serenity-server: cannot listen on " << address << "\n";
    return 1;
  }
  Log("info", "listening",
      {{"address", absl::StrCat(flags.host, ":", bound_port)},
       {"transport", credentials.transport_name},
       {"auth", service_options.tokens.has_value()        ? "bearer"
                : service_options.tenant_from_certificate ? "client_certificate"
                                                          : "none"},
       {"cache_scope", flags.cache_scope},
       {"threads", absl::StrCat(flags.threads)},
       {"max_queue", absl::StrCat(flags.max_queue)},
       {"cache_mb", absl::StrCat(flags.cache_mb)},
       {"max_server_mb", absl::StrCat(flags.max_server_mb)},
       {"max_job_mb", absl::StrCat(flags.max_job_mb)},
       {"redis", flags.redis.empty() ? "off" : flags.redis}});
  absl::StatusOr<std::unique_ptr<grpc::Server>> health_server = ServeHealth(flags);
  if (!health_server.ok()) {
    std::cerr << "serenity-server: " << health_server.status().message() << " (--health-port)\n";
    server->Shutdown();
    return 1;
  }
  if (!flags.port_file.empty()) std::ofstream(flags.port_file) << bound_port << "\n";

  std::thread stopper([&] {
    DrainOnStopSignal(stop_signals, flags.shutdown_grace_seconds, &runner, &service, server.get(),
                      health_server->get());
  });
  server->Wait();
  stopper.join();
  Log("info", "stopped", {});
  return 0;
}

int Run(int argc, char** argv) {
  // Block the stop signals before any thread starts (gRPC starts some as soon
  // as credentials are made), so every thread inherits the mask; a dedicated
  // thread waits for them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  ServerFlags flags;
  FlagSet flag_set("serenity-server [flags]", kDescription);
  RegisterServerFlags(&flags, &flag_set);
  absl::Status parsed = flag_set.Parse(std::vector<std::string>(argv + 1, argv + argc));
  if (flag_set.help_requested()) {
    std::cout << flag_set.Help();
    return 0;
  }
  if (!parsed.ok()) return Fail(parsed.message());
  if (flags.version) {
    std::cout << VersionLine("serenity-server") << "\n";
    return 0;
  }
  if (!flag_set.positionals().empty()) return Fail("unexpected argument '" + flag_set.positionals()[0] + "'");
  // Only when no --max-server-mb is given: it reads the machine's memory.
  const int64_t default_memory_bytes = flags.max_server_mb == 0 ? DefaultMemoryLimitBytes() : 0;
  if (absl::Status sane = SanitizeServerFlags(default_memory_bytes, &flags); !sane.ok()) return Fail(sane.message());
  absl::StatusOr<ServerCredentials> credentials = LoadServerCredentials(flags);
  if (!credentials.ok()) return Fail(credentials.status().message());
  return Serve(flags, std::move(credentials).value(), stop_signals);
}

}  // namespace
}  // namespace serenity

int main(int argc, char** argv) { return serenity::Run(argc, argv); }
