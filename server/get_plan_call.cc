#include "server/get_plan_call.h"

#include <atomic>
#include <cstdint>
#include <exception>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "core/util/status_macros.h"
#include "server/call_common.h"
#include "server/grpc_status.h"

namespace serenity {
namespace {

// One GetPlan call: a job like a Plan call's (it rebuilds the request's
// graph and may recompute its baselines), holding one of the connection's
// Plan slots and one of its tenant's, a place in the job queue and a job's
// full memory (--max-job-mb), ending by the call's deadline and stopping
// when the call is cancelled.
class GetPlanCall final : public grpc::ServerUnaryReactor {
 public:
  GetPlanCall(SchedulerService* service, grpc::CallbackServerContext* context, const v1::GetPlanRequest* request,
              v1::Plan* response)
      : service_(service),
        context_(context),
        request_(request),
        response_(response),
        peer_(context->peer()),
        request_id_(service->NextRequestId()),
        start_(CallClock::now()) {}

  void Start() {
    grpc::Status status = service_->AcceptCall(*context_, &tenant_);
    if (!status.ok()) return Complete(status);
    if (grpc::Status slots = service_->AcquireJobSlots(peer_, tenant_); !slots.ok()) return Complete(slots);
    absl::Status queued = service_->runner()->Submit([this] { Run(); });
    if (!queued.ok()) {
      service_->ReleaseJobSlots(peer_, tenant_);
      Complete(ToGrpcStatus(queued));
    }
  }

  void OnCancel() override { cancelled_.store(true); }
  void OnDone() override { delete this; }

 private:
  void Run() {
    absl::StatusOr<v1::Plan> plan = Answer();
    service_->ReleaseJobSlots(peer_, tenant_);
    if (!plan.ok()) return Complete(LoggedReplyStatus(plan.status(), request_id_));
    *response_ = std::move(plan).value();
    Complete(grpc::Status::OK);
  }

  absl::StatusOr<v1::Plan> Answer() {
    // GetPlan's estimate is a whole job's allowance: a stored plan is
    // re-mapped (and its baselines may be refreshed) without a request to
    // estimate from.
    MemoryAdmission* admission = service_->options().admission;
    const JobMemory memory{admission != nullptr ? admission->max_job_bytes() : 0, 0};
    ASSIGN_OR_RETURN(MemoryAdmission::Ticket ticket, AdmitJob(admission, memory, *context_, &cancelled_));
    const CallContext call = JobCall(*context_, &cancelled_, tenant_, /*ticket=*/nullptr, memory);
    return Safely([&] { return service_->backend()->GetPlan(request_->plan_id(), call); });
  }

  // Logs, counts and finishes the call; `this` may be gone afterwards.
  void Complete(const grpc::Status& status) {
    const std::string code = GrpcCodeName(status.error_code());
    if (service_->metrics() != nullptr) service_->metrics()->RecordCall("GetPlan", "unary", code, SecondsSince(start_));
    Log("info", "get_plan",
        {{"request_id", absl::StrCat(request_id_)}, {"peer", peer_}, {"plan_id", request_->plan_id()}, {"code", code}});
    Finish(status);
  }

  SchedulerService* const service_;
  grpc::CallbackServerContext* const context_;
  const v1::GetPlanRequest* const request_;
  v1::Plan* const response_;
  const std::string peer_;
  const int64_t request_id_;
  const CallClock::time_point start_;
  std::string tenant_;  // set by Start
  std::atomic<bool> cancelled_{false};
};

}  // namespace

grpc::ServerUnaryReactor* StartGetPlanCall(SchedulerService* service, grpc::CallbackServerContext* context,
                                           const v1::GetPlanRequest* request, v1::Plan* response) {
  auto* call = new GetPlanCall(service, context, request, response);
  call->Start();
  return call;
}

}  // namespace serenity
