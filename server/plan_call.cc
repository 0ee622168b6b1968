#include "server/plan_call.h"

#include <atomic>
#include <cstdint>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "core/request_scan.h"
#include "core/util/status_macros.h"
#include "server/call_common.h"
#include "server/grpc_status.h"
#include "server/plan_messages.h"

namespace serenity {
namespace {

// One Plan call. Its request and reply messages live on a pooled arena
// (PlanMessages), held from the start of the call to OnDone.
class PlanCall final : public grpc::ServerUnaryReactor {
 public:
  PlanCall(SchedulerService* service, grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
           grpc::ByteBuffer* response)
      : service_(service),
        context_(context),
        request_bytes_(request),
        response_bytes_(response),
        messages_(static_cast<PlanMessages*>(service->plan_messages()->AllocateMessages())),
        request_(messages_->request()),
        response_(messages_->response()),
        peer_(context->peer()),
        request_id_(service->NextRequestId()),
        start_(CallClock::now()) {}

  void Start() {
    grpc::Status auth = service_->AcceptCall(*context_, &tenant_);
    if (!auth.ok()) return Complete(auth, "");
    // Refuse before building: the request's size is read off the wire.
    absl::StatusOr<absl::string_view> bytes = Contiguous(*request_bytes_, &request_slice_);
    absl::StatusOr<RequestShape> shape = bytes.ok() ? ScanPlanRequest(*bytes) : bytes.status();
    absl::Status fits = shape.ok() ? AdmitRequest(service_, tenant_, *shape, &memory_, &arrival_) : shape.status();
    if (!fits.ok()) return Complete(ToGrpcStatus(fits), "");
    if (shape->wire_bytes <= kParseInlineBytes) {
      if (!Parse()) return Complete(NotARequest(), "");
      // A repeat of a memoized request is answered here, without a job.
      // Copied straight into the response, which lives on the call's arena.
      if (RepeatSafely(service_->backend(), *request_, false, JobCall(*context_, &cancelled_, tenant_, nullptr, {}),
                       response_)) {
        return Reply();
      }
    }
    if (grpc::Status slots = service_->AcquireJobSlots(peer_, tenant_); !slots.ok()) return Complete(slots, "");
    absl::Status queued = service_->runner()->Submit([this] { Run(); });
    if (!queued.ok()) {
      service_->ReleaseJobSlots(peer_, tenant_);
      Complete(ToGrpcStatus(queued), "");
    }
  }

  void OnCancel() override { cancelled_.store(true); }
  void OnDone() override {
    Report();
    messages_->Release();
    delete this;
  }

 private:
  void Run() {
    absl::StatusOr<v1::Plan> plan = Answer();
    service_->ReleaseJobSlots(peer_, tenant_);
    if (!plan.ok()) return Complete(LoggedReplyStatus(plan.status(), request_id_), "");
    *response_ = std::move(plan).value();
    Reply();
  }

  // The job: waits for its memory, parses the request if Start did not,
  // and plans it; the memory is returned before the reply is sent.
  absl::StatusOr<v1::Plan> Answer() {
    ASSIGN_OR_RETURN(MemoryAdmission::Ticket ticket,
                     AdmitJob(service_->options().admission, memory_, *context_, &cancelled_));
    if (!parsed_ && !Parse()) return absl::InvalidArgumentError(NotARequest().error_message());
    return AnswerSafely(service_->backend(), *request_, /*score_only=*/false,
                        JobCall(*context_, &cancelled_, tenant_, &ticket, memory_));
  }

  // Parses the request from the bytes Start made contiguous.
  bool Parse() {
    parsed_ = request_->ParseFromArray(request_slice_.begin(), static_cast<int>(request_slice_.size()));
    return parsed_;
  }

  static grpc::Status NotARequest() {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "the request is not a valid serenity.v1.PlanRequest message");
  }

  // Sends the plan in response_.
  void Reply() {
    SerializeTo(*response_, response_bytes_);
    Complete(grpc::Status::OK, response_->stats().cache());
  }

  // Finishes the call; `this` may be gone afterwards.
  void Complete(const grpc::Status& status, const std::string& cache) {
    arrival_.Release();
    seconds_ = SecondsSince(start_);  // the handling time, without the send
    finish_status_ = status;
    cache_ = cache;
    Finish(status);
  }

  // Logs and counts the call once gRPC is done with it: only then is it
  // known whether the reply reached a caller that was still waiting. A
  // call cancelled before its reply went out (OK or not) is counted as
  // its caller saw it: DEADLINE_EXCEEDED when the deadline had passed, by
  // the server's clock, or was at most kDeadlineSlackSeconds away (the
  // caller's deadline fires a transit time before the server's), else
  // CANCELLED.
  void Report() {
    constexpr double kDeadlineSlackSeconds = 0.01;
    grpc::Status status = finish_status_;
    if (context_->IsCancelled()) {
      status = SecondsLeft(*context_) <= kDeadlineSlackSeconds
                   ? grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "the deadline passed before the reply was sent")
                   : grpc::Status(grpc::StatusCode::CANCELLED,
                                  "the call was cancelled (by the caller, or by a shutdown past its grace period) "
                                  "before the reply was sent");
    }
    const std::string code = GrpcCodeName(status.error_code());
    if (service_->metrics() != nullptr) service_->metrics()->RecordCall("Plan", "unary", code, seconds_);
    if (status.ok()) {
      Log("info", "plan",
          {{"request_id", absl::StrCat(request_id_)},
           {"peer", peer_},
           {"model", response_->model()},
           {"code", code},
           {"ms", absl::StrCat(seconds_ * 1000)},
           {"cache", cache_},
           {"nodes", absl::StrCat(response_->nodes())},
           {"peak_bytes", absl::StrCat(response_->peak_bytes())},
           {"certificate", v1::Certificate_Name(response_->certificate())}});
    } else {
      Log("info", "plan",
          {{"request_id", absl::StrCat(request_id_)},
           {"peer", peer_},
           {"model", request_->model_name()},
           {"code", code},
           {"ms", absl::StrCat(seconds_ * 1000)},
           {"error", status.error_message()}});
    }
  }

  SchedulerService* const service_;
  grpc::CallbackServerContext* const context_;
  const grpc::ByteBuffer* const request_bytes_;
  grpc::Slice request_slice_;  // the request in one piece; set by Start
  grpc::ByteBuffer* const response_bytes_;
  PlanMessages* const messages_;
  v1::PlanRequest* const request_;  // parsed once the scan let it through
  v1::Plan* const response_;
  bool parsed_ = false;
  JobMemory memory_;       // set by Start
  ReceivedBytes arrival_;  // the request's bytes as received; set by Start
  const std::string peer_;
  const int64_t request_id_;
  const CallClock::time_point start_;
  std::string tenant_;  // set by Start
  std::atomic<bool> cancelled_{false};
  // Set by Complete, read by Report (OnDone comes after Finish).
  double seconds_ = 0;
  grpc::Status finish_status_;
  std::string cache_;
};

}  // namespace

grpc::ServerUnaryReactor* StartPlanCall(SchedulerService* service, grpc::CallbackServerContext* context,
                                        const grpc::ByteBuffer* request, grpc::ByteBuffer* response) {
  auto* call = new PlanCall(service, context, request, response);
  call->Start();
  return call;
}

}  // namespace serenity
