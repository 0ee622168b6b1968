// The gRPC Scheduler service on the callback API: calls do not hold a gRPC
// thread while they plan. Each Plan call, and each candidate of a Score
// stream, becomes one job on the JobRunner (bounded queue: RESOURCE_EXHAUSTED
// when full); the jobs' parallel parts run on the shared executor inside
// SchedulingBackend. A cancelled or expired call stops its search promptly.
#ifndef SERENITY_SERVER_SCHEDULER_SERVICE_H_
#define SERENITY_SERVER_SCHEDULER_SERVICE_H_

#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "common/job_runner.h"
#include "grpcpp/grpcpp.h"
#include "serenity/v1/scheduler.grpc.pb.h"
#include "server/connection_slots.h"
#include "server/memory_admission.h"
#include "server/metrics.h"
#include "server/plan_messages.h"
#include "server/scheduling_backend.h"
#include "server/tenants.h"

namespace serenity {

struct ServiceOptions {
  // When set, calls must carry "authorization: Bearer <token>" with one of
  // these tokens (UNAUTHENTICATED otherwise), and the token names the
  // call's tenant. The health service is not ours and stays open.
  std::optional<TenantTokens> tokens;
  // Without tokens: the tenant is the subject of the call's client
  // certificate (mutual TLS). Otherwise every call is of the tenant "".
  bool tenant_from_certificate = false;
  // Most jobs the calls of one connection (client address and port) may
  // hold at once, counted apart for Plan calls and for Score candidates
  // (so a Score stream never starves the connection's Plan calls), queued
  // or running. A Plan call beyond it gets RESOURCE_EXHAUSTED; a Score
  // stream stops reading until its connection frees a slot (streams take
  // turns). It also bounds one Score stream's running candidates plus
  // unwritten results.
  int64_t max_jobs_per_connection = 16;
  // Most jobs one tenant's calls may hold at once, over all its
  // connections (Plan calls, GetPlan calls and Score candidates, queued or
  // running); beyond it a call, or a candidate, gets RESOURCE_EXHAUSTED, so
  // one tenant cannot fill the job queue for the others. Not applied to
  // the tenant "" (a server without tenants).
  int64_t max_jobs_per_tenant = 128;
  // When set, every job first waits for its estimated memory
  // (EstimatePlanningBytes of its request, scanned before it is parsed),
  // and its planner draws from the same pool as it grows. Owned by the
  // caller; must outlive the service.
  MemoryAdmission* admission = nullptr;
  // When set, the bytes of each request as received are taken from this
  // pool (at once, or RESOURCE_EXHAUSTED) until its job ends; one tenant's
  // requests may hold half of it at most. Owned by the caller; must outlive
  // the service.
  MemoryAdmission* received = nullptr;
};

// Plan and Score take their requests as raw bytes: each request is scanned
// on the wire (core/request_scan.h) and a graph above the server's --max-ops
// is refused before it is parsed, so an oversized request never costs the
// memory of its parsed message and graph.
class SchedulerService final
    : public v1::Scheduler::WithRawCallbackMethod_Plan<v1::Scheduler::WithRawCallbackMethod_Score<
          v1::Scheduler::WithCallbackMethod_GetPlan<v1::Scheduler::Service>>> {
 public:
  // `runner`, `backend` and `metrics` (may be null) must outlive the server.
  SchedulerService(JobRunner* runner, SchedulingBackend* backend, ServerMetrics* metrics, ServiceOptions options);

  grpc::ServerUnaryReactor* Plan(grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
                                 grpc::ByteBuffer* response) override;
  grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* Score(grpc::CallbackServerContext* context) override;
  grpc::ServerUnaryReactor* GetPlan(grpc::CallbackServerContext* context, const v1::GetPlanRequest* request,
                                    v1::Plan* response) override;

  // From now on new calls get UNAVAILABLE (SIGTERM: set before health turns
  // NOT_SERVING, so a caller that saw NOT_SERVING is refused for sure).
  void StartDraining() { draining_.store(true); }
  bool draining() const { return draining_.load(); }

  // For the reactors (plan_call.cc, score_call.cc, get_plan_call.cc).
  JobRunner* runner() const { return runner_; }
  SchedulingBackend* backend() const { return backend_; }
  ServerMetrics* metrics() const { return metrics_; }
  const ServiceOptions& options() const { return options_; }
  // The call's tenant (see ServiceOptions), or UNAUTHENTICATED when the
  // call carries no valid token or certificate.
  grpc::Status Authenticate(const grpc::CallbackServerContext& context, std::string* tenant) const;
  // What every call checks first: UNAVAILABLE while the server drains,
  // else Authenticate.
  grpc::Status AcceptCall(const grpc::CallbackServerContext& context, std::string* tenant) const;
  // The job slots of each connection (keyed by gRPC's peer string for Plan
  // calls, and by ScoreSlotKey(peer) for Score candidates).
  ConnectionSlots* slots() { return &slots_; }
  // Takes one of `tenant`'s job slots (always for the tenant ""): false
  // when the tenant holds max_jobs_per_tenant already.
  bool AcquireTenantSlot(const std::string& tenant) { return tenant.empty() || tenant_slots_.TryAcquire(tenant); }
  void ReleaseTenantSlot(const std::string& tenant) {
    if (!tenant.empty()) tenant_slots_.Release(tenant);
  }
  // A unary job's slots: one of connection `peer`'s Plan slots and one of
  // `tenant`'s, both or neither (RESOURCE_EXHAUSTED naming the limit).
  grpc::Status AcquireJobSlots(const std::string& peer, const std::string& tenant);
  void ReleaseJobSlots(const std::string& peer, const std::string& tenant);
  // The RESOURCE_EXHAUSTED of a tenant at its limit.
  grpc::Status TenantBusy() const;
  // Counts `bytes` of received requests against `tenant`'s share of the
  // received pool (half of it; always true for the tenant "" or without a
  // pool): false, counting nothing, when they would exceed it.
  bool TakeReceived(const std::string& tenant, int64_t bytes);
  void ReturnReceived(const std::string& tenant, int64_t bytes);
  // Arenas for Plan calls' request and reply messages.
  PlanMessages::Pool* plan_messages() { return &plan_messages_; }
  // A fresh id for a call, used in its log lines and INTERNAL messages.
  int64_t NextRequestId() { return next_request_id_.fetch_add(1) + 1; }

 private:
  JobRunner* const runner_;
  SchedulingBackend* const backend_;
  ServerMetrics* const metrics_;
  const ServiceOptions options_;
  std::atomic<int64_t> next_request_id_{0};
  std::atomic<bool> draining_{false};
  ConnectionSlots slots_;
  ConnectionSlots tenant_slots_;
  std::mutex received_mu_;
  absl::flat_hash_map<std::string, int64_t> received_by_tenant_;  // guarded by received_mu_
  PlanMessages::Pool plan_messages_;
};

}  // namespace serenity

#endif  // SERENITY_SERVER_SCHEDULER_SERVICE_H_
