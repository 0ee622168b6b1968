// The server's Prometheus metrics. One ServerMetrics per process; every
// method is thread-safe and cheap (prometheus-cpp's atomics).
#ifndef SERENITY_SERVER_METRICS_H_
#define SERENITY_SERVER_METRICS_H_

#include <cstdint>
#include <memory>
#include <string>

#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace serenity {

class ServerMetrics {
 public:
  // Also sets serenity_build_info{version, commit} (common/version.h) to 1.
  ServerMetrics();

  // The registry to expose (prometheus::Exposer::RegisterCollectable).
  std::shared_ptr<prometheus::Registry> registry() const { return registry_; }

  // One finished call: grpc_server_handled_total{grpc_service, grpc_method,
  // grpc_type, grpc_code} and grpc_server_handling_seconds. `code` is the
  // upper-case gRPC code name ("OK", "INVALID_ARGUMENT", ...); `type` is
  // "unary" or "bidi_stream".
  void RecordCall(const std::string& method, const std::string& type, const std::string& code, double seconds);
  // One candidate of a Score stream, by its own status code.
  void RecordCandidate(const std::string& code);
  // Jobs waiting for a thread and jobs running.
  void SetLoad(int64_t queued, int64_t running);
  // A cache lookup: tier "request" (byte-identical requests), "local" or
  // "shared"; result "hit", "miss" or
  // "error" (the tier failed or returned garbage).
  void RecordCacheLookup(const std::string& tier, const std::string& result);
  // A plan written to the shared tier (Redis): ok or not.
  void RecordSharedWrite(bool ok);
  // Bytes held by the in-process cache and its entries.
  void SetLocalCacheSize(int64_t bytes, int64_t entries);
  // A search that ran: its states; `hit_limit` when it stopped on a time or
  // state limit; `infeasible` when the best peak exceeds the budget.
  void RecordSearch(int64_t states, bool hit_limit, bool infeasible);

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Counter>& handled_;
  prometheus::Family<prometheus::Histogram>& handling_seconds_;
  prometheus::Family<prometheus::Counter>& candidates_;
  prometheus::Gauge& queued_;
  prometheus::Gauge& running_;
  prometheus::Family<prometheus::Counter>& cache_lookups_;
  prometheus::Family<prometheus::Counter>& shared_writes_;
  prometheus::Gauge& cache_bytes_;
  prometheus::Gauge& cache_entries_;
  prometheus::Counter& states_;
  prometheus::Counter& searches_;
  prometheus::Counter& timeouts_;
  prometheus::Counter& infeasible_;
};

}  // namespace serenity

#endif  // SERENITY_SERVER_METRICS_H_
