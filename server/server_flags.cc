#include "server/server_flags.h"

#include <algorithm>
#include <thread>

#include "absl/strings/str_cat.h"
#include "core/schedule/budget_search.h"
#include "core/util/status_macros.h"

namespace serenity {

ServerFlags::ServerFlags()
    : threads(std::max(1u, std::thread::hardware_concurrency())), max_search_states(SearchOptions().max_states) {}

void RegisterServerFlags(ServerFlags* flags, FlagSet* flag_set) {
  flag_set->AddString("host", &flags->host, "ADDR", "Address to listen on; 0.0.0.0 for all interfaces.");
  flag_set->AddInt("port", &flags->port, "N", "Port to listen on; 0 picks a free port.");
  flag_set->AddString("port-file", &flags->port_file, "PATH",
                      "Write the bound port number to PATH once serving (useful with --port 0).");
  flag_set->AddBool("plaintext", &flags->plaintext, "Serve without TLS (only for loopback or a trusted network).");
  flag_set->AddString("tls-cert", &flags->tls_cert, "PEM", "Server certificate chain (PEM file).");
  flag_set->AddString("tls-key", &flags->tls_key, "PEM", "Server private key (PEM file).");
  flag_set->AddString("tls-client-ca", &flags->tls_client_ca, "PEM",
                      "Require client certificates signed by this CA (mutual TLS).");
  flag_set->AddString("token-file", &flags->token_file, "PATH",
                      "Require 'authorization: Bearer <token>' with a token in PATH (health checks exempt):\n"
                      "one 'TENANT TOKEN' pair per line (a tenant may have several tokens: rotate by adding\n"
                      "the new one first); a file of one bare token serves the tenant 'default'. Without it,\n"
                      "and with --tls-client-ca, a call's tenant is its client certificate's subject.");
  flag_set->AddInt("max-message-mb", &flags->max_message_mb, "MB", "Largest request or reply accepted.");
  flag_set->AddInt("threads", &flags->threads, "N",
                   "Jobs run at once, and worker threads for their parallel parts (default: the core count).");
  flag_set->AddInt("max-queue", &flags->max_queue, "N", "Jobs that may wait for a thread before calls are refused.");
  flag_set->AddInt("max-ops", &flags->max_ops, "N",
                   "Largest graph accepted, in ops, checked before the request is parsed\n"
                   "(planning keeps reachability bitsets only within the segments between cut points, m^2/4\n"
                   "bytes for a segment of m ops and at most 256 MB in all: a 200,000-op graph plans in\n"
                   "under 1 GB, bench/RESULTS.md \"Long graphs (issue 18)\").");
  flag_set->AddDouble("max-job-seconds", &flags->max_job_seconds, "S",
                      "Longest search one job may run, whatever the request asks.");
  flag_set->AddInt("max-server-mb", &flags->max_server_mb, "MB",
                   "Memory for requests and their jobs (default: 3/4 of the smaller of the cgroup memory\n"
                   "limit and MemTotal). A quarter holds requests as received (a request beyond it gets\n"
                   "RESOURCE_EXHAUSTED at once); the rest is for jobs: each waits for its estimated memory\n"
                   "(from its request's size, read before it is parsed) and draws from there as it grows.");
  flag_set->AddInt("max-job-mb", &flags->max_job_mb, "MB",
                   "Memory one job may hold (its estimate and what its planner charges: search memo,\n"
                   "reachability, arena search); beyond it the job falls back to cheaper methods or fails\n"
                   "alone with RESOURCE_EXHAUSTED. A request whose estimate exceeds it is refused\n"
                   "(INVALID_ARGUMENT) (default: 3/4 of --max-server-mb / --threads).");
  flag_set->AddInt("max-jobs-per-connection", &flags->max_jobs_per_connection, "N",
                   "Jobs one connection may hold: Plan calls and Score candidates queued or running (a Plan\n"
                   "call beyond gets RESOURCE_EXHAUSTED, a Score stream waits for a slot); also the unwritten\n"
                   "results one Score stream may hold before it stops reading.");
  flag_set->AddInt("max-jobs-per-tenant", &flags->max_jobs_per_tenant, "N",
                   "Jobs one tenant may hold over all its connections (Plan, GetPlan and Score candidates,\n"
                   "queued or running); beyond it RESOURCE_EXHAUSTED, so one tenant cannot fill the queue for\n"
                   "the others. Only with tenants (--token-file or --tls-client-ca)\n"
                   "(default: half of --max-queue plus --threads).");
  flag_set->AddInt("max-streams-per-connection", &flags->max_streams_per_connection, "N",
                   "Calls one connection may have open at once (HTTP/2 concurrent streams); the client\n"
                   "holds further calls until one ends. With --max-jobs-per-connection it bounds what one\n"
                   "connection's unread Score results take in the server.");
  flag_set->AddInt("cache-mb", &flags->cache_mb, "MB",
                   "Size of the in-process plan cache (an eighth of it remembers replies to\n"
                   "byte-identical requests); 0 turns it off.");
  flag_set->AddString("cache-scope", &flags->cache_scope, "tenant|shared",
                      "Whether tenants share cached plans. 'tenant': a request is answered only from its own\n"
                      "tenant's plans, so stats.cache reveals nothing across tenants. 'shared': any tenant's plan\n"
                      "of the same structure answers (renamed; names never cross), and a hit shows the structure\n"
                      "was planned (default: tenant when tenants are configured by --token-file or\n"
                      "--tls-client-ca, shared without).");
  flag_set->AddInt("cache-mb-per-tenant", &flags->cache_mb_per_tenant, "MB",
                   "Most of the in-process cache the plans and receipts one tenant stored may take; beyond\n"
                   "it that tenant's own least recently used entries go first, so one tenant cannot flush\n"
                   "the others' (default: half of --cache-mb with tenants, all of it without).");
  flag_set->AddString("plan-id-secret-file", &flags->plan_id_secret_file, "PATH",
                      "A secret mixed into every plan_id, so that replicas sharing it (and Redis) give one\n"
                      "request the same plan_id (default: a random secret per process).");
  flag_set->AddInt("max-search-states", &flags->max_search_states, "N",
                   "Most search states one request may ask for (options.max_search_states; larger asks are\n"
                   "lowered to N). Each state takes roughly 30-50 bytes.");
  flag_set->AddString("redis", &flags->redis, "HOST:PORT", "Share plans with other replicas through this Redis.");
  flag_set->AddString("redis-auth-file", &flags->redis_auth_file, "PATH",
                      "Authenticate to Redis with the credentials in PATH: one line, PASSWORD (requirepass) or\n"
                      "USERNAME PASSWORD (an ACL user). Keep it readable only by the server's user.");
  flag_set->AddDouble("redis-timeout-ms", &flags->redis_timeout_ms, "MS",
                      "Longest wait for Redis per command; after a failure Redis is skipped for a second.");
  flag_set->AddInt("metrics-port", &flags->metrics_port, "N",
                   "Serve Prometheus metrics on http://HOST:N/metrics; 0 picks a free port (default: off).");
  flag_set->AddString("metrics-port-file", &flags->metrics_port_file, "PATH", "Write the metrics port to PATH.");
  flag_set->AddInt("health-port", &flags->health_port, "N",
                   "Also serve grpc.health.v1, and nothing else, in plaintext on HOST:N (0 picks a free port):\n"
                   "for probes that cannot speak the API port's TLS, such as the kubelet's gRPC probes. It\n"
                   "turns NOT_SERVING with the API port on SIGTERM (default: off).");
  flag_set->AddString("health-port-file", &flags->health_port_file, "PATH", "Write the health port to PATH.");
  flag_set->AddDouble("max-connection-age-seconds", &flags->max_connection_age_seconds, "S",
                      "Close each client connection after S seconds (HTTP/2 GOAWAY; its calls in flight get\n"
                      "--max-job-seconds more to finish), so that clients balancing over a headless Service\n"
                      "re-resolve it and reach new replicas (default: 0, never).");
  flag_set->AddDouble("shutdown-grace-seconds", &flags->shutdown_grace_seconds, "S",
                      "How long running calls may take to finish after SIGTERM.");
  flag_set->AddBool("version", &flags->version, "Print the version and exit.");
}

namespace {

absl::Status Bad(absl::string_view message) { return absl::InvalidArgumentError(message); }

// The ranges of single flags, checked in the order serenity-server always
// checked them (the first wrong one is reported).
absl::Status CheckRanges(const ServerFlags& flags) {
  if (flags.port < 0 || flags.port > 65535) return Bad("--port must be 0..65535");
  if (flags.max_message_mb < 1 || flags.max_message_mb > 2047) return Bad("--max-message-mb must be 1..2047");
  if (flags.threads < 1 || flags.threads > 1024) return Bad("--threads must be 1..1024");
  if (flags.max_queue < 0 || flags.max_ops < 1 || flags.max_job_seconds <= 0 || flags.max_jobs_per_connection < 1 ||
      flags.cache_mb < 0 || flags.redis_timeout_ms <= 0) {
    return Bad(
        "--max-queue and --cache-mb must be >= 0; --max-ops, --max-job-seconds, "
        "--max-jobs-per-connection and --redis-timeout-ms must be positive");
  }
  if (flags.max_streams_per_connection < 1 || flags.max_streams_per_connection > 1000000) {
    return Bad("--max-streams-per-connection must be 1..1000000");
  }
  if (flags.max_search_states < 1) return Bad("--max-search-states must be positive");
  if (flags.max_server_mb < 0 || flags.max_job_mb < 0 || flags.max_server_mb > (int64_t{1} << 40) ||
      flags.max_job_mb > (int64_t{1} << 40)) {
    return Bad("--max-server-mb and --max-job-mb must be 0..2^40");
  }
  return absl::OkStatus();
}

// --max-server-mb (from the machine when 0) and --max-job-mb (from it and
// --threads when 0): jobs get 3/4 of --max-server-mb, received requests 1/4.
absl::Status SanitizeMemory(int64_t default_memory_bytes, ServerFlags* flags) {
  if (flags->max_server_mb == 0) {
    flags->max_server_mb = default_memory_bytes >> 20;
    if (flags->max_server_mb == 0) return Bad("cannot read this machine's memory size: give --max-server-mb");
  }
  if (flags->max_server_mb < 4) return Bad("--max-server-mb must be at least 4");
  const int64_t jobs_bytes = MemoryBytesOf(*flags).jobs;
  if (flags->max_job_mb == 0) flags->max_job_mb = std::max<int64_t>(1, (jobs_bytes >> 20) / flags->threads);
  if ((flags->max_job_mb << 20) > jobs_bytes) return Bad("--max-job-mb cannot exceed 3/4 of --max-server-mb");
  return absl::OkStatus();
}

// The transport: TLS (with client certificates or not), or plaintext only
// when asked.
absl::Status CheckTransport(const ServerFlags& flags) {
  const bool tls = flags.tls();
  if (tls && (flags.tls_cert.empty() || flags.tls_key.empty())) return Bad("--tls-cert and --tls-key go together");
  if (tls && flags.plaintext) return Bad("--plaintext contradicts --tls-cert/--tls-key");
  if (!tls && !flags.tls_client_ca.empty()) return Bad("--tls-client-ca needs --tls-cert and --tls-key");
  if (!tls && !flags.plaintext) return Bad("give --tls-cert and --tls-key, or --plaintext to serve without encryption");
  return absl::OkStatus();
}

}  // namespace

absl::Status SanitizeServerFlags(int64_t default_memory_bytes, ServerFlags* flags) {
  RETURN_IF_ERROR(CheckRanges(*flags));
  RETURN_IF_ERROR(SanitizeMemory(default_memory_bytes, flags));
  if (!flags->redis_auth_file.empty() && flags->redis.empty()) return Bad("--redis-auth-file needs --redis");
  if (!flags->cache_scope.empty() && flags->cache_scope != "tenant" && flags->cache_scope != "shared") {
    return Bad("--cache-scope must be tenant or shared");
  }
  if (flags->metrics_port < -1 || flags->metrics_port > 65535) return Bad("--metrics-port must be 0..65535");
  if (flags->health_port < -1 || flags->health_port > 65535) return Bad("--health-port must be 0..65535");
  if (flags->health_port > 0 && flags->health_port == flags->port) {
    return Bad("--health-port must differ from --port (the API port already serves health)");
  }
  if (!(flags->max_connection_age_seconds >= 0) || flags->max_connection_age_seconds > 1e6) {
    return Bad("--max-connection-age-seconds must be between 0 (never) and 1000000");
  }
  RETURN_IF_ERROR(CheckTransport(*flags));
  if (flags->max_jobs_per_tenant < 0) return Bad("--max-jobs-per-tenant must be >= 0");
  if (flags->cache_mb_per_tenant < 0) return Bad("--cache-mb-per-tenant must be >= 0");
  if (flags->max_jobs_per_tenant == 0) {
    flags->max_jobs_per_tenant = std::max<int64_t>(1, flags->max_queue / 2 + flags->threads);
  }
  if (flags->cache_scope.empty()) flags->cache_scope = flags->tenants() ? "tenant" : "shared";
  return absl::OkStatus();
}

ServerMemoryBytes MemoryBytesOf(const ServerFlags& flags) {
  const int64_t server_bytes = flags.max_server_mb << 20;
  ServerMemoryBytes bytes;
  bytes.received = server_bytes / 4;
  bytes.jobs = server_bytes - bytes.received;
  bytes.per_job = flags.max_job_mb << 20;
  return bytes;
}

CacheBytes CacheBytesOf(const ServerFlags& flags) {
  const int64_t cache_bytes = flags.cache_mb * 1024 * 1024;
  CacheBytes bytes;
  bytes.plans = cache_bytes - cache_bytes / 8;
  bytes.memo = cache_bytes / 8;
  bytes.per_tenant = flags.cache_mb_per_tenant > 0 ? flags.cache_mb_per_tenant * 1024 * 1024
                     : flags.tenants()             ? bytes.plans / 2
                                                   : 0;
  return bytes;
}

}  // namespace serenity
