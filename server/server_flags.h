// serenity-server's flags: their values, their registration on a FlagSet
// (with the help texts), and the one step that checks them and fills in
// the defaults that depend on other flags or on the machine
// (SanitizeServerFlags, as leveldb's SanitizeOptions).
#ifndef SERENITY_SERVER_SERVER_FLAGS_H_
#define SERENITY_SERVER_SERVER_FLAGS_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "common/command_line.h"

namespace serenity {

struct ServerFlags {
  std::string host = "127.0.0.1";
  int64_t port = 50051;
  std::string port_file;
  int64_t max_message_mb = 64;
  double shutdown_grace_seconds = 5;
  int64_t threads;  // the core count (set by the constructor)
  int64_t max_queue = 256;
  int64_t max_ops = 200000;
  double max_job_seconds = 60;
  int64_t max_server_mb = 0;  // 0: from the machine's memory
  int64_t max_job_mb = 0;     // 0: from --max-server-mb and --threads
  int64_t max_jobs_per_connection = 16;
  int64_t max_jobs_per_tenant = 0;  // 0: from --max-queue and --threads
  int64_t max_streams_per_connection = 100;
  int64_t cache_mb = 256;
  std::string cache_scope;          // "": from whether there are tenants
  int64_t cache_mb_per_tenant = 0;  // 0: from --cache-mb and whether there are tenants
  std::string plan_id_secret_file;
  int64_t max_search_states;  // SearchOptions' default (set by the constructor)
  std::string redis;
  std::string redis_auth_file;
  double redis_timeout_ms = 50;
  int64_t metrics_port = -1;  // -1: no metrics endpoint
  std::string metrics_port_file;
  int64_t health_port = -1;  // -1: health only on --port
  std::string health_port_file;
  double max_connection_age_seconds = 0;  // 0: connections live as long as the client keeps them
  bool plaintext = false;
  std::string tls_cert, tls_key, tls_client_ca, token_file;
  bool version = false;  // --version: print VersionLine and exit

  ServerFlags();

  // Whether the server serves TLS (--tls-cert and --tls-key).
  bool tls() const { return !tls_cert.empty() || !tls_key.empty(); }
  // Whether calls have tenants: named by their token (--token-file) or by
  // their client certificate (--tls-client-ca).
  bool tenants() const { return !token_file.empty() || !tls_client_ca.empty(); }
};

// Registers every flag of serenity-server on `flag_set`, writing into
// `flags` (whose values are the defaults --help shows).
void RegisterServerFlags(ServerFlags* flags, FlagSet* flag_set);

// Checks the flags' ranges and combinations (InvalidArgument naming the
// flag at the first one that is wrong) and fills in the defaults left at 0
// or empty: --max-server-mb from `default_memory_bytes`
// (DefaultMemoryLimitBytes; 0 when unknown, and then --max-server-mb must be
// given), --max-job-mb, --max-jobs-per-tenant and --cache-scope.
absl::Status SanitizeServerFlags(int64_t default_memory_bytes, ServerFlags* flags);

// How the in-process cache's --cache-mb is shared out.
struct CacheBytes {
  int64_t plans = 0;       // the plan cache: 7/8 of --cache-mb
  int64_t memo = 0;        // replies to byte-identical requests: 1/8
  int64_t per_tenant = 0;  // what one tenant's entries may hold of `plans` (0: all)
};

// How --max-server-mb is shared out: a quarter for requests as received,
// the rest for jobs, each holding at most --max-job-mb.
struct ServerMemoryBytes {
  int64_t received = 0;
  int64_t jobs = 0;
  int64_t per_job = 0;
};

// The memory split of `flags` (SanitizeMemory checks --max-job-mb against
// it; the server sizes its pools from it).
ServerMemoryBytes MemoryBytesOf(const ServerFlags& flags);

// The cache sizes of sanitized `flags`.
CacheBytes CacheBytesOf(const ServerFlags& flags);

}  // namespace serenity

#endif  // SERENITY_SERVER_SERVER_FLAGS_H_
