#include "server/scheduler_service.h"

#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "server/get_plan_call.h"
#include "server/plan_call.h"
#include "server/score_call.h"

namespace serenity {

SchedulerService::SchedulerService(JobRunner* runner, SchedulingBackend* backend, ServerMetrics* metrics,
                                   ServiceOptions options)
    : runner_(runner),
      backend_(backend),
      metrics_(metrics),
      options_(std::move(options)),
      slots_(options_.max_jobs_per_connection),
      tenant_slots_(options_.max_jobs_per_tenant) {}

grpc::Status SchedulerService::AcquireJobSlots(const std::string& peer, const std::string& tenant) {
  if (!slots_.TryAcquire(peer)) {
    return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                        absl::StrCat("this connection already has ", options_.max_jobs_per_connection,
                                     " jobs queued or running (--max-jobs-per-connection)"));
  }
  if (!AcquireTenantSlot(tenant)) {
    slots_.Release(peer);
    return TenantBusy();
  }
  return grpc::Status::OK;
}

void SchedulerService::ReleaseJobSlots(const std::string& peer, const std::string& tenant) {
  slots_.Release(peer);
  ReleaseTenantSlot(tenant);
}

bool SchedulerService::TakeReceived(const std::string& tenant, int64_t bytes) {
  if (tenant.empty() || options_.received == nullptr) return true;
  const int64_t share = options_.received->capacity() / 2;
  std::lock_guard<std::mutex> lock(received_mu_);
  int64_t& held = received_by_tenant_[tenant];
  if (held > share - bytes) {
    if (held == 0) received_by_tenant_.erase(tenant);
    return false;
  }
  held += bytes;
  return true;
}

void SchedulerService::ReturnReceived(const std::string& tenant, int64_t bytes) {
  if (tenant.empty() || options_.received == nullptr) return;
  std::lock_guard<std::mutex> lock(received_mu_);
  auto it = received_by_tenant_.find(tenant);
  if (it != received_by_tenant_.end() && (it->second -= bytes) <= 0) received_by_tenant_.erase(it);
}

grpc::Status SchedulerService::TenantBusy() const {
  return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                      absl::StrCat("this tenant already has ", options_.max_jobs_per_tenant,
                                   " jobs queued or running (--max-jobs-per-tenant)"));
}

grpc::Status SchedulerService::AcceptCall(const grpc::CallbackServerContext& context, std::string* tenant) const {
  if (draining()) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "the server is shutting down");
  return Authenticate(context, tenant);
}

grpc::Status SchedulerService::Authenticate(const grpc::CallbackServerContext& context, std::string* tenant) const {
  tenant->clear();
  if (options_.tokens.has_value()) {
    const auto& metadata = context.client_metadata();
    auto it = metadata.find("authorization");
    if (it == metadata.end()) {
      return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "this server needs 'authorization: Bearer <token>'");
    }
    const absl::string_view given(it->second.data(), it->second.size());
    *tenant = absl::StartsWith(given, "Bearer ") ? options_.tokens->TenantOf(given.substr(7)) : "";
    if (tenant->empty()) return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "the bearer token is not valid");
    return grpc::Status::OK;
  }
  if (options_.tenant_from_certificate) {
    std::shared_ptr<const grpc::AuthContext> auth = context.auth_context();
    std::vector<grpc::string_ref> subject =
        auth != nullptr ? auth->FindPropertyValues(GRPC_X509_SUBJECT_PROPERTY_NAME) : std::vector<grpc::string_ref>{};
    if (subject.empty() || subject[0].empty()) {
      return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "this server needs a client certificate");
    }
    *tenant = CertificateTenant(absl::string_view(subject[0].data(), subject[0].size()));
  }
  return grpc::Status::OK;
}

grpc::ServerUnaryReactor* SchedulerService::Plan(grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
                                                 grpc::ByteBuffer* response) {
  return StartPlanCall(this, context, request, response);
}

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* SchedulerService::Score(
    grpc::CallbackServerContext* context) {
  return StartScoreCall(this, context);
}

grpc::ServerUnaryReactor* SchedulerService::GetPlan(grpc::CallbackServerContext* context,
                                                    const v1::GetPlanRequest* request, v1::Plan* response) {
  return StartGetPlanCall(this, context, request, response);
}

}  // namespace serenity
