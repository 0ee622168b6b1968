#include "server/metrics.h"

#include "common/version.h"

namespace serenity {
namespace {

const prometheus::Histogram::BucketBoundaries& LatencyBuckets() {
  static const prometheus::Histogram::BucketBoundaries kBuckets = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                                                   0.5,   1,      2.5,   5,    10,    30,   60};
  return kBuckets;
}

}  // namespace

ServerMetrics::ServerMetrics()
    : registry_(std::make_shared<prometheus::Registry>()),
      handled_(prometheus::BuildCounter()
                   .Name("grpc_server_handled_total")
                   .Help("RPCs completed on the server, by method and status code.")
                   .Register(*registry_)),
      handling_seconds_(prometheus::BuildHistogram()
                            .Name("grpc_server_handling_seconds")
                            .Help("Time from the start of an RPC to its status, in seconds.")
                            .Register(*registry_)),
      candidates_(prometheus::BuildCounter()
                      .Name("serenity_score_candidates_total")
                      .Help("Candidates of Score streams answered, by their own status code.")
                      .Register(*registry_)),
      queued_(prometheus::BuildGauge()
                  .Name("serenity_jobs_queued")
                  .Help("Jobs waiting for a job thread.")
                  .Register(*registry_)
                  .Add({})),
      running_(prometheus::BuildGauge()
                   .Name("serenity_jobs_active")
                   .Help("Jobs running on a job thread.")
                   .Register(*registry_)
                   .Add({})),
      cache_lookups_(prometheus::BuildCounter()
                         .Name("serenity_cache_lookups_total")
                         .Help("Plan cache lookups by tier (request, local, shared) and result (hit, miss, error).")
                         .Register(*registry_)),
      shared_writes_(prometheus::BuildCounter()
                         .Name("serenity_cache_shared_writes_total")
                         .Help("Plans written to the shared cache tier (Redis), by result (ok, error).")
                         .Register(*registry_)),
      cache_bytes_(prometheus::BuildGauge()
                       .Name("serenity_cache_local_bytes")
                       .Help("Bytes held by the in-process plan cache.")
                       .Register(*registry_)
                       .Add({})),
      cache_entries_(prometheus::BuildGauge()
                         .Name("serenity_cache_local_entries")
                         .Help("Plans held by the in-process plan cache.")
                         .Register(*registry_)
                         .Add({})),
      states_(prometheus::BuildCounter()
                  .Name("serenity_search_states_explored_total")
                  .Help("Search states expanded by all searches.")
                  .Register(*registry_)
                  .Add({})),
      searches_(prometheus::BuildCounter()
                    .Name("serenity_searches_total")
                    .Help("Searches run (cache misses that planned).")
                    .Register(*registry_)
                    .Add({})),
      timeouts_(prometheus::BuildCounter()
                    .Name("serenity_search_timeouts_total")
                    .Help("Searches that stopped on a time or state limit (best_found plans).")
                    .Register(*registry_)
                    .Add({})),
      infeasible_(prometheus::BuildCounter()
                      .Name("serenity_infeasible_budgets_total")
                      .Help("Plans whose best peak exceeds the requested memory budget.")
                      .Register(*registry_)
                      .Add({})) {
  for (const char* tier : {"local", "shared"}) {
    for (const char* result : {"hit", "miss", "error"}) cache_lookups_.Add({{"tier", tier}, {"result", result}});
  }
  for (const char* result : {"ok", "error"}) shared_writes_.Add({{"result", result}});
  prometheus::BuildGauge()
      .Name("serenity_build_info")
      .Help("The version and commit of this build, as labels; always 1.")
      .Register(*registry_)
      .Add({{"version", SerenityVersion()}, {"commit", SerenityCommit()}})
      .Set(1);
}

void ServerMetrics::RecordCall(const std::string& method, const std::string& type, const std::string& code,
                               double seconds) {
  const prometheus::Labels labels = {
      {"grpc_service", "serenity.v1.Scheduler"}, {"grpc_method", method}, {"grpc_type", type}};
  prometheus::Labels with_code = labels;
  with_code.emplace("grpc_code", code);
  handled_.Add(with_code).Increment();
  handling_seconds_.Add(labels, LatencyBuckets()).Observe(seconds);
}

void ServerMetrics::RecordCandidate(const std::string& code) { candidates_.Add({{"code", code}}).Increment(); }

void ServerMetrics::SetLoad(int64_t queued, int64_t running) {
  queued_.Set(static_cast<double>(queued));
  running_.Set(static_cast<double>(running));
}

void ServerMetrics::RecordCacheLookup(const std::string& tier, const std::string& result) {
  cache_lookups_.Add({{"tier", tier}, {"result", result}}).Increment();
}

void ServerMetrics::RecordSharedWrite(bool ok) { shared_writes_.Add({{"result", ok ? "ok" : "error"}}).Increment(); }

void ServerMetrics::SetLocalCacheSize(int64_t bytes, int64_t entries) {
  cache_bytes_.Set(static_cast<double>(bytes));
  cache_entries_.Set(static_cast<double>(entries));
}

void ServerMetrics::RecordSearch(int64_t states, bool hit_limit, bool infeasible) {
  searches_.Increment();
  states_.Increment(static_cast<double>(states));
  if (hit_limit) timeouts_.Increment();
  if (infeasible) infeasible_.Increment();
}

}  // namespace serenity
