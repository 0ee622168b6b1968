// serenity-server: serves the Scheduler service, gRPC health and reflection,
// and Prometheus metrics.
#include <algorithm>
#include <csignal>
#include <fstream>
#include <iostream>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/command_line.h"
#include "common/job_runner.h"
#include "common/log.h"
#include "common/thread_pool.h"
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
#include "server/tenants.h"

namespace {

struct ServerFlags {
  std::string host = "127.0.0.1";
  int64_t port = 50051;
  std::string port_file;
  int64_t max_message_mb = 64;
  double shutdown_grace_seconds = 5;
  int64_t threads = std::max(1u, std::thread::hardware_concurrency());
  int64_t max_queue = 256;
  int64_t max_ops = 20000;
  double max_job_seconds = 60;
  int64_t max_server_mb = 0;
  int64_t max_job_mb = 0;
  int64_t max_jobs_per_connection = 16;
  int64_t max_jobs_per_tenant = 0;
  int64_t max_streams_per_connection = 100;
  int64_t cache_mb = 256;
  std::string cache_scope;
  int64_t cache_mb_per_tenant = 0;
  std::string plan_id_secret_file;
  int64_t max_search_states = serenity::SearchOptions().max_states;
  std::string redis;
  std::string redis_auth_file;
  double redis_timeout_ms = 50;
  int64_t metrics_port = -1;
  std::string metrics_port_file;
  bool plaintext = false;
  std::string tls_cert, tls_key, tls_client_ca, token_file;
};

absl::StatusOr<std::string> ReadWholeFile(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::InvalidArgumentError(absl::StrCat("cannot read the ", what, " file '", path, "'"));
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// 32 random hex digits from the system's entropy source.
std::string RandomSecret() {
  std::random_device device;
  std::string secret;
  for (int i = 0; i < 4; ++i) absl::StrAppend(&secret, absl::Hex(device(), absl::kZeroPad8));
  return secret;
}

int Fail(const std::string& message) {
  std::cerr << "serenity-server: " << message << "\n";
  return 2;
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
  serenity::FlagSet flag_set(
      "serenity-server [flags]",
      "Serves the serenity.v1.Scheduler gRPC service (Plan, Score, GetPlan), the gRPC\n"
      "health service (grpc.health.v1) and server reflection (v1alpha) on one port,\n"
      "over TLS (--tls-cert/--tls-key) or, only when asked, --plaintext.\n"
      "Each Plan call and Score candidate is a job: --threads jobs run at once, up to\n"
      "--max-queue wait, more are refused with RESOURCE_EXHAUSTED. Results are cached\n"
      "by a canonical hash of the graph (in process, and in Redis with --redis).\n"
      "SIGTERM or SIGINT: health turns NOT_SERVING and new calls get UNAVAILABLE while\n"
      "running jobs finish (within the grace period); then the server exits 0.");
  flag_set.AddString("host", &flags.host, "ADDR", "Address to listen on; 0.0.0.0 for all interfaces.");
  flag_set.AddInt("port", &flags.port, "N", "Port to listen on; 0 picks a free port.");
  flag_set.AddString("port-file", &flags.port_file, "PATH",
                     "Write the bound port number to PATH once serving (useful with --port 0).");
  flag_set.AddBool("plaintext", &flags.plaintext, "Serve without TLS (only for loopback or a trusted network).");
  flag_set.AddString("tls-cert", &flags.tls_cert, "PEM", "Server certificate chain (PEM file).");
  flag_set.AddString("tls-key", &flags.tls_key, "PEM", "Server private key (PEM file).");
  flag_set.AddString("tls-client-ca", &flags.tls_client_ca, "PEM",
                     "Require client certificates signed by this CA (mutual TLS).");
  flag_set.AddString("token-file", &flags.token_file, "PATH",
                     "Require 'authorization: Bearer <token>' with a token in PATH (health checks exempt):\n"
                     "one 'TENANT TOKEN' pair per line (a tenant may have several tokens: rotate by adding\n"
                     "the new one first); a file of one bare token serves the tenant 'default'. Without it,\n"
                     "and with --tls-client-ca, a call's tenant is its client certificate's subject.");
  flag_set.AddInt("max-message-mb", &flags.max_message_mb, "MB", "Largest request or reply accepted.");
  flag_set.AddInt("threads", &flags.threads, "N",
                  "Jobs run at once, and worker threads for their parallel parts (default: the core count).");
  flag_set.AddInt("max-queue", &flags.max_queue, "N", "Jobs that may wait for a thread before calls are refused.");
  flag_set.AddInt("max-ops", &flags.max_ops, "N", "Largest graph accepted, in ops, checked before the request is parsed\n"
                  "(planning keeps n^2/4 bytes of reachability: 100 MB at 20,000 ops).");
  flag_set.AddDouble("max-job-seconds", &flags.max_job_seconds, "S",
                     "Longest search one job may run, whatever the request asks.");
  flag_set.AddInt("max-server-mb", &flags.max_server_mb, "MB",
                  "Memory for requests and their jobs (default: 3/4 of the smaller of the cgroup memory\n"
                  "limit and MemTotal). A quarter holds requests as received (a request beyond it gets\n"
                  "RESOURCE_EXHAUSTED at once); the rest is for jobs: each waits for its estimated memory\n"
                  "(from its request's size, read before it is parsed) and draws from there as it grows.");
  flag_set.AddInt("max-job-mb", &flags.max_job_mb, "MB",
                  "Memory one job may hold (its estimate and what its planner charges: search memo,\n"
                  "reachability, arena search); beyond it the job falls back to cheaper methods or fails\n"
                  "alone with RESOURCE_EXHAUSTED. A request whose estimate exceeds it is refused\n"
                  "(INVALID_ARGUMENT). Default: 3/4 of --max-server-mb / --threads.");
  flag_set.AddInt("max-jobs-per-connection", &flags.max_jobs_per_connection, "N",
                  "Jobs one connection may hold: Plan calls and Score candidates queued or running (a Plan\n"
                  "call beyond gets RESOURCE_EXHAUSTED, a Score stream waits for a slot); also the unwritten\n"
                  "results one Score stream may hold before it stops reading.");
  flag_set.AddInt("max-jobs-per-tenant", &flags.max_jobs_per_tenant, "N",
                  "Jobs one tenant may hold over all its connections (Plan, GetPlan and Score candidates,\n"
                  "queued or running); beyond it RESOURCE_EXHAUSTED, so one tenant cannot fill the queue for\n"
                  "the others. Only with tenants (--token-file or --tls-client-ca). Default: half of\n"
                  "--max-queue plus --threads.");
  flag_set.AddInt("max-streams-per-connection", &flags.max_streams_per_connection, "N",
                  "Calls one connection may have open at once (HTTP/2 concurrent streams); the client\n"
                  "holds further calls until one ends. With --max-jobs-per-connection it bounds what one\n"
                  "connection's unread Score results take in the server.");
  flag_set.AddInt("cache-mb", &flags.cache_mb, "MB", "Size of the in-process plan cache (an eighth of it remembers replies to\n"
                  "byte-identical requests); 0 turns it off.");
  flag_set.AddString("cache-scope", &flags.cache_scope, "tenant|shared",
                     "Whether tenants share cached plans. 'tenant' (the default when tenants are configured by\n"
                     "--token-file or --tls-client-ca): a request is answered only from its own tenant's plans, so\n"
                     "stats.cache reveals nothing across tenants. 'shared': any tenant's plan of the same\n"
                     "structure answers (renamed; names never cross), and a hit shows the structure was planned.");
  flag_set.AddInt("cache-mb-per-tenant", &flags.cache_mb_per_tenant, "MB",
                  "Most of the in-process cache the plans and receipts one tenant stored may take; beyond\n"
                  "it that tenant's own least recently used entries go first, so one tenant cannot flush\n"
                  "the others' (default: half of --cache-mb with tenants, all of it without).");
  flag_set.AddString("plan-id-secret-file", &flags.plan_id_secret_file, "PATH",
                     "A secret mixed into every plan_id, so that replicas sharing it (and Redis) give one\n"
                     "request the same plan_id (default: a random secret per process).");
  flag_set.AddInt("max-search-states", &flags.max_search_states, "N",
                  "Most search states one request may ask for (options.max_search_states; larger asks are\n"
                  "lowered to N). Each state takes roughly 30-50 bytes.");
  flag_set.AddString("redis", &flags.redis, "HOST:PORT", "Share plans with other replicas through this Redis.");
  flag_set.AddString("redis-auth-file", &flags.redis_auth_file, "PATH",
                     "Authenticate to Redis with the credentials in PATH: one line, PASSWORD (requirepass) or\n"
                     "USERNAME PASSWORD (an ACL user). Keep it readable only by the server's user.");
  flag_set.AddDouble("redis-timeout-ms", &flags.redis_timeout_ms, "MS",
                     "Longest wait for Redis per command; after a failure Redis is skipped for a second.");
  flag_set.AddInt("metrics-port", &flags.metrics_port, "N",
                  "Serve Prometheus metrics on http://HOST:N/metrics (0 picks a free port; default: off).");
  flag_set.AddString("metrics-port-file", &flags.metrics_port_file, "PATH", "Write the metrics port to PATH.");
  flag_set.AddDouble("shutdown-grace-seconds", &flags.shutdown_grace_seconds, "S",
                     "How long running calls may take to finish after SIGTERM.");
  std::vector<std::string> args(argv + 1, argv + argc);
  absl::Status parsed = flag_set.Parse(args);
  if (flag_set.help_requested()) {
    std::cout << flag_set.Help();
    return 0;
  }
  if (!parsed.ok()) return Fail(std::string(parsed.message()));
  if (!flag_set.positionals().empty()) return Fail("unexpected argument '" + flag_set.positionals()[0] + "'");
  if (flags.port < 0 || flags.port > 65535) return Fail("--port must be 0..65535");
  if (flags.max_message_mb < 1 || flags.max_message_mb > 2047) return Fail("--max-message-mb must be 1..2047");
  if (flags.threads < 1 || flags.threads > 1024) return Fail("--threads must be 1..1024");
  if (flags.max_queue < 0 || flags.max_ops < 1 || flags.max_job_seconds <= 0 || flags.max_jobs_per_connection < 1 ||
      flags.cache_mb < 0 || flags.redis_timeout_ms <= 0) {
    return Fail("--max-queue and --cache-mb must be >= 0; --max-ops, --max-job-seconds, "
                "--max-jobs-per-connection and --redis-timeout-ms must be positive");
  }
  if (flags.max_streams_per_connection < 1 || flags.max_streams_per_connection > 1000000) {
    return Fail("--max-streams-per-connection must be 1..1000000");
  }
  if (flags.max_search_states < 1) return Fail("--max-search-states must be positive");
  if (flags.max_server_mb < 0 || flags.max_job_mb < 0 || flags.max_server_mb > (int64_t{1} << 40) ||
      flags.max_job_mb > (int64_t{1} << 40)) {
    return Fail("--max-server-mb and --max-job-mb must be 0..2^40");
  }
  if (flags.max_server_mb == 0) {
    flags.max_server_mb = serenity::DefaultMemoryLimitBytes() >> 20;
    if (flags.max_server_mb == 0) return Fail("cannot read this machine's memory size: give --max-server-mb");
  }
  if (flags.max_server_mb < 4) return Fail("--max-server-mb must be at least 4");
  // Jobs get 3/4 of --max-server-mb, received requests 1/4.
  const int64_t jobs_mb = flags.max_server_mb - flags.max_server_mb / 4;
  if (flags.max_job_mb == 0) flags.max_job_mb = std::max<int64_t>(1, jobs_mb / flags.threads);
  if (flags.max_job_mb > jobs_mb) return Fail("--max-job-mb cannot exceed 3/4 of --max-server-mb");
  if (!flags.redis_auth_file.empty() && flags.redis.empty()) return Fail("--redis-auth-file needs --redis");
  if (!flags.cache_scope.empty() && flags.cache_scope != "tenant" && flags.cache_scope != "shared") {
    return Fail("--cache-scope must be tenant or shared");
  }
  if (flags.metrics_port < -1 || flags.metrics_port > 65535) return Fail("--metrics-port must be 0..65535");
  const bool tls = !flags.tls_cert.empty() || !flags.tls_key.empty();
  if (tls && (flags.tls_cert.empty() || flags.tls_key.empty())) return Fail("--tls-cert and --tls-key go together");
  if (tls && flags.plaintext) return Fail("--plaintext contradicts --tls-cert/--tls-key");
  if (!tls && !flags.tls_client_ca.empty()) return Fail("--tls-client-ca needs --tls-cert and --tls-key");
  if (!tls && !flags.plaintext) {
    return Fail("give --tls-cert and --tls-key, or --plaintext to serve without encryption");
  }

  std::shared_ptr<grpc::ServerCredentials> credentials = grpc::InsecureServerCredentials();
  if (tls) {
    grpc::SslServerCredentialsOptions ssl(flags.tls_client_ca.empty()
                                              ? GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE
                                              : GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
    absl::StatusOr<std::string> cert = ReadWholeFile(flags.tls_cert, "--tls-cert");
    absl::StatusOr<std::string> key = ReadWholeFile(flags.tls_key, "--tls-key");
    if (!cert.ok()) return Fail(std::string(cert.status().message()));
    if (!key.ok()) return Fail(std::string(key.status().message()));
    ssl.pem_key_cert_pairs.push_back({*key, *cert});
    if (!flags.tls_client_ca.empty()) {
      absl::StatusOr<std::string> ca = ReadWholeFile(flags.tls_client_ca, "--tls-client-ca");
      if (!ca.ok()) return Fail(std::string(ca.status().message()));
      ssl.pem_root_certs = *ca;
    }
    credentials = grpc::SslServerCredentials(ssl);
  }
  serenity::ServiceOptions service_options;
  service_options.max_jobs_per_connection = flags.max_jobs_per_connection;
  if (flags.max_jobs_per_tenant < 0) return Fail("--max-jobs-per-tenant must be >= 0");
  service_options.max_jobs_per_tenant =
      flags.max_jobs_per_tenant > 0 ? flags.max_jobs_per_tenant : std::max<int64_t>(1, flags.max_queue / 2 + flags.threads);
  if (!flags.token_file.empty()) {
    absl::StatusOr<std::string> text = ReadWholeFile(flags.token_file, "--token-file");
    if (!text.ok()) return Fail(std::string(text.status().message()));
    absl::StatusOr<serenity::TenantTokens> tokens = serenity::TenantTokens::Parse(*text);
    if (!tokens.ok()) return Fail(absl::StrCat("--token-file ", flags.token_file, ": ", tokens.status().message()));
    service_options.tokens = std::move(tokens).value();
  } else if (!flags.tls_client_ca.empty()) {
    service_options.tenant_from_certificate = true;
  }
  const bool tenants = service_options.tokens.has_value() || service_options.tenant_from_certificate;
  serenity::BackendOptions backend_options;
  backend_options.cache_scope = flags.cache_scope == "shared" || (flags.cache_scope.empty() && !tenants)
                                    ? serenity::CacheScope::kShared
                                    : serenity::CacheScope::kTenant;
  if (!flags.plan_id_secret_file.empty()) {
    absl::StatusOr<std::string> secret = ReadWholeFile(flags.plan_id_secret_file, "--plan-id-secret-file");
    if (!secret.ok()) return Fail(std::string(secret.status().message()));
    backend_options.plan_id_secret = std::string(absl::StripAsciiWhitespace(*secret));
    if (backend_options.plan_id_secret.size() < 16) return Fail("the --plan-id-secret-file needs at least 16 characters");
  } else {
    backend_options.plan_id_secret = RandomSecret();
  }

  serenity::ServerMetrics metrics;
  std::unique_ptr<prometheus::Exposer> exposer;
  if (flags.metrics_port >= 0) {
    const std::string metrics_address = absl::StrCat(flags.host, ":", flags.metrics_port);
    try {
      exposer = std::make_unique<prometheus::Exposer>(metrics_address, 1);
    } catch (const std::exception& e) {
      std::cerr << "serenity-server: cannot serve metrics on " << metrics_address << ": " << e.what() << "\n";
      return 1;
    }
    exposer->RegisterCollectable(metrics.registry());
    const std::vector<int> ports = exposer->GetListeningPorts();
    const int metrics_port = ports.empty() ? static_cast<int>(flags.metrics_port) : ports[0];
    serenity::Log("info", "metrics_listening", {{"address", absl::StrCat(flags.host, ":", metrics_port)}});
    if (!flags.metrics_port_file.empty()) std::ofstream(flags.metrics_port_file) << metrics_port << "\n";
  }

  std::unique_ptr<serenity::RedisStore> redis;
  if (!flags.redis.empty()) {
    serenity::RedisStoreOptions redis_options;
    redis_options.address = flags.redis;
    redis_options.timeout = absl::Milliseconds(flags.redis_timeout_ms);
    if (!flags.redis_auth_file.empty()) {
      absl::StatusOr<serenity::RedisCredentials> credentials = serenity::ReadRedisCredentials(flags.redis_auth_file);
      if (!credentials.ok()) return Fail(absl::StrCat("--redis-auth-file: ", credentials.status().message()));
      redis_options.username = credentials->username;
      redis_options.password = credentials->password;
    }
    absl::StatusOr<std::unique_ptr<serenity::RedisStore>> store = serenity::RedisStore::Create(redis_options);
    if (!store.ok()) return Fail(absl::StrCat("--redis: ", store.status().message()));
    redis = std::move(store).value();
  }
  // An eighth of --cache-mb keeps replies to byte-identical requests.
  const int64_t cache_bytes = flags.cache_mb * 1024 * 1024;
  if (flags.cache_mb_per_tenant < 0) return Fail("--cache-mb-per-tenant must be >= 0");
  const int64_t plan_bytes = cache_bytes - cache_bytes / 8;
  const int64_t per_tenant_bytes = flags.cache_mb_per_tenant > 0 ? flags.cache_mb_per_tenant * 1024 * 1024
                                   : tenants                    ? plan_bytes / 2
                                                                : 0;
  serenity::PlanCache cache(plan_bytes, std::move(redis), &metrics, per_tenant_bytes);
  serenity::RequestMemo memo(cache_bytes / 8);
  serenity::ThreadPool pool(static_cast<int>(flags.threads));
  backend_options.max_ops = flags.max_ops;
  backend_options.max_job_seconds = flags.max_job_seconds;
  backend_options.max_search_states = flags.max_search_states;
  backend_options.max_job_bytes = flags.max_job_mb << 20;
  // A quarter of the server's memory holds requests as received, the rest
  // their jobs (see ServiceOptions).
  const int64_t server_bytes = flags.max_server_mb << 20;
  serenity::MemoryAdmission received(server_bytes / 4);
  serenity::MemoryAdmission admission(server_bytes - server_bytes / 4, flags.max_job_mb << 20);
  service_options.admission = &admission;
  service_options.received = &received;
  serenity::SchedulingBackend backend(&pool, &cache, &metrics, backend_options, &memo);
  serenity::JobRunner runner(static_cast<int>(flags.threads), flags.max_queue,
                             [&metrics](int64_t queued, int64_t running) { metrics.SetLoad(queued, running); });
  serenity::SchedulerService service(&runner, &backend, &metrics, service_options);

  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  int bound_port = 0;
  const std::string address = absl::StrCat(flags.host, ":", flags.port);
  builder.AddListeningPort(address, credentials, &bound_port);
  const int max_bytes = static_cast<int>(flags.max_message_mb * 1024 * 1024);
  builder.SetMaxReceiveMessageSize(max_bytes);
  builder.SetMaxSendMessageSize(max_bytes);
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, static_cast<int>(flags.max_streams_per_connection));
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || bound_port == 0) {
    std::cerr << "serenity-server: cannot listen on " << address << "\n";
    return 1;
  }
  serenity::Log("info", "listening",
                {{"address", absl::StrCat(flags.host, ":", bound_port)},
                 {"transport", tls ? (flags.tls_client_ca.empty() ? "tls" : "mtls") : "plaintext"},
                 {"auth", service_options.tokens.has_value()            ? "bearer"
                          : service_options.tenant_from_certificate ? "client_certificate"
                                                                    : "none"},
                 {"cache_scope", backend_options.cache_scope == serenity::CacheScope::kShared ? "shared" : "tenant"},
                 {"threads", absl::StrCat(flags.threads)},
                 {"max_queue", absl::StrCat(flags.max_queue)},
                 {"cache_mb", absl::StrCat(flags.cache_mb)},
                 {"max_server_mb", absl::StrCat(flags.max_server_mb)},
                 {"max_job_mb", absl::StrCat(flags.max_job_mb)},
                 {"redis", flags.redis.empty() ? "off" : flags.redis}});
  if (!flags.port_file.empty()) {
    std::ofstream(flags.port_file) << bound_port << "\n";
  }

  std::thread stopper([&] {
    int signal_number = 0;
    sigwait(&stop_signals, &signal_number);
    serenity::Log("info", "draining",
                  {{"signal", absl::StrCat(signal_number)},
                   {"running_jobs", absl::StrCat(runner.running())},
                   {"queued_jobs", absl::StrCat(runner.queued())},
                   {"grace_seconds", absl::StrCat(flags.shutdown_grace_seconds)}});
    service.StartDraining();
    server->GetHealthCheckService()->SetServingStatus(false);
    // The drain: the port stays open while running and queued jobs finish
    // (within the grace period), so probes and new callers get NOT_SERVING
    // and UNAVAILABLE, not a refused connection; then the server shuts
    // down, and calls still running at the deadline are cancelled (their
    // searches stop at once).
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::milliseconds(static_cast<int64_t>(flags.shutdown_grace_seconds * 1000));
    while (runner.running() + runner.queued() > 0 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    server->Shutdown(std::chrono::system_clock::now() +
                     std::chrono::duration_cast<std::chrono::system_clock::duration>(
                         std::max(deadline - std::chrono::steady_clock::now(), std::chrono::steady_clock::duration::zero())));
  });
  server->Wait();
  stopper.join();
  serenity::Log("info", "stopped", {});
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return Run(argc, argv); }
