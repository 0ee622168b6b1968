// What the Scheduler service's calls (plan_call.cc, score_call.cc,
// get_plan_call.cc) share: the call's clock, admission of a request before
// it is parsed (its shape, its memory, its bytes as received), the call
// context of its job, and running the backend so that nothing it throws
// escapes.
#ifndef SERENITY_SERVER_CALL_COMMON_H_
#define SERENITY_SERVER_CALL_COMMON_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "core/request_scan.h"
#include "google/protobuf/message.h"
#include "grpcpp/grpcpp.h"
#include "serenity/v1/scheduler.pb.h"
#include "server/memory_admission.h"
#include "server/scheduler_service.h"
#include "server/scheduling_backend.h"

namespace serenity {

using CallClock = std::chrono::steady_clock;

// Seconds from `start` to now.
double SecondsSince(CallClock::time_point start);

// Seconds before the call's deadline; infinity when it has none.
double SecondsLeft(const grpc::CallbackServerContext& context);

// The time a job may wait for memory: 90% of the call's time left, so that
// a refusal (RESOURCE_EXHAUSTED, retry later) reaches the caller before its
// deadline does.
absl::Time AbslDeadline(const grpc::CallbackServerContext& context);

// Runs `answer` (a callable returning absl::StatusOr<v1::Plan>), turning
// anything thrown (which core/ never should) into an internal error.
template <typename Answer>
absl::StatusOr<v1::Plan> Safely(const Answer& answer) {
  try {
    return answer();
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("exception: ", e.what()));
  } catch (...) {
    return absl::InternalError("unknown exception");
  }
}

// backend->Answer(...), Safely.
absl::StatusOr<v1::Plan> AnswerSafely(SchedulingBackend* backend, const v1::PlanRequest& request, bool score_only,
                                      const CallContext& call);

// Writes the memo's answer to a repeated request to `reply` and returns
// true, or false (also when the memo lookup throws: Answer then runs and
// reports, into a cleared `reply`).
bool RepeatSafely(SchedulingBackend* backend, const v1::PlanRequest& request, bool score_only, const CallContext& call,
                  v1::Plan* reply);

// The bytes of a raw request, in one piece: the scan and the parse read
// them in place (a request gRPC received in one slice is not copied).
absl::StatusOr<absl::string_view> Contiguous(const grpc::ByteBuffer& buffer, grpc::Slice* slice);

// Serializes `message` into a reply buffer.
void SerializeTo(const google::protobuf::Message& message, grpc::ByteBuffer* buffer);

// Requests up to this size are parsed on the gRPC thread, so that a repeat
// is answered from the memo without a job; larger ones are parsed by their
// job once their memory is admitted.
inline constexpr int64_t kParseInlineBytes = 256 << 10;

// The memory a request's job is admitted with, from its scanned shape.
struct JobMemory {
  int64_t estimate = 0;  // EstimatePlanningBytes
  int64_t build = 0;     // EstimateBuildBytes
};

// The bytes of one request as received, held from its arrival until its
// job ends: a ticket of the pool of received requests, counted in its
// tenant's share of that pool. Move-only; gives both back when released.
class ReceivedBytes {
 public:
  ReceivedBytes() = default;
  ReceivedBytes(SchedulerService* service, std::string tenant, MemoryAdmission::Ticket ticket);
  ReceivedBytes(ReceivedBytes&& other) noexcept;
  ReceivedBytes& operator=(ReceivedBytes&& other) noexcept;
  ~ReceivedBytes() { Release(); }

  // Gives the bytes back (once; later calls do nothing).
  void Release();

 private:
  SchedulerService* service_ = nullptr;
  std::string tenant_;
  MemoryAdmission::Ticket ticket_;
};

// Everything a request must pass before it is parsed: its graph within
// --max-ops (INVALID_ARGUMENT), its estimated memory within a job's, and
// its bytes taken from the pool of received requests, at once or not at
// all (RESOURCE_EXHAUSTED: it, or the tenant's half of it, is full). Sets
// `memory` and `arrival` when it passes. With no pool, `arrival` holds
// nothing.
absl::Status AdmitRequest(SchedulerService* service, const std::string& tenant, const RequestShape& shape,
                          JobMemory* memory, ReceivedBytes* arrival);

// Waits (on this job's thread) for the job's memory; with no admission,
// an empty ticket at once.
absl::StatusOr<MemoryAdmission::Ticket> AdmitJob(MemoryAdmission* admission, const JobMemory& memory,
                                                 const grpc::CallbackServerContext& context,
                                                 const std::atomic<bool>* cancelled);

// The call context of a job holding `ticket` (may be null or empty).
CallContext JobCall(const grpc::CallbackServerContext& context, const std::atomic<bool>* cancelled,
                    const std::string& tenant, MemoryAdmission::Ticket* ticket, const JobMemory& memory);

}  // namespace serenity

#endif  // SERENITY_SERVER_CALL_COMMON_H_
