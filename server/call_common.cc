#include "server/call_common.h"

#include <algorithm>
#include <cmath>
#include <exception>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/util/status_macros.h"
#include "grpcpp/impl/codegen/proto_utils.h"

namespace serenity {
namespace {

// Refuses, before it is parsed, a request whose graph is above the
// server's op limit (it could never be planned here: not to be retried).
absl::Status CheckShape(const RequestShape& shape, int64_t max_ops) {
  if (shape.ops > max_ops) {
    return absl::InvalidArgumentError(
        absl::StrCat("the graph has ", shape.ops, " ops; this server accepts at most ", max_ops, " (--max-ops)"));
  }
  return absl::OkStatus();
}

JobMemory MemoryOf(const RequestShape& shape) { return {EstimatePlanningBytes(shape), EstimateBuildBytes(shape)}; }

// Takes the bytes of a request as received from the pool of received
// requests, at once or not at all (RESOURCE_EXHAUSTED: it, or the tenant's
// half of it, is full), so that requests waiting for a thread are counted
// too. A pool of its own: jobs waiting for memory then wait only for
// running jobs, never for requests that wait for them. With no pool,
// nothing is held.
absl::StatusOr<ReceivedBytes> AdmitArrival(SchedulerService* service, const std::string& tenant,
                                           const RequestShape& shape) {
  MemoryAdmission* received = service->options().received;
  if (received == nullptr) return ReceivedBytes();
  if (absl::Status fits = received->CheckFits(shape.wire_bytes); !fits.ok()) return fits;
  if (!service->TakeReceived(tenant, shape.wire_bytes)) {
    return absl::ResourceExhaustedError(
        "the server is busy: this tenant's requests already fill its share of the server's memory for received "
        "requests; retry later");
  }
  absl::StatusOr<MemoryAdmission::Ticket> ticket = received->TryAdmit(shape.wire_bytes);
  if (!ticket.ok()) {
    service->ReturnReceived(tenant, shape.wire_bytes);
    return ticket.status();
  }
  return ReceivedBytes(service, tenant, std::move(ticket).value());
}

}  // namespace

double SecondsSince(CallClock::time_point start) {
  return std::chrono::duration<double>(CallClock::now() - start).count();
}

double SecondsLeft(const grpc::CallbackServerContext& context) {
  const auto deadline = context.deadline();
  if (deadline >= std::chrono::system_clock::time_point::max() - std::chrono::hours(24 * 365)) {
    return std::numeric_limits<double>::infinity();
  }
  return std::chrono::duration<double>(deadline - std::chrono::system_clock::now()).count();
}

absl::Time AbslDeadline(const grpc::CallbackServerContext& context) {
  const double left = SecondsLeft(context);
  return std::isfinite(left) ? absl::Now() + absl::Seconds(std::max(0.0, left * 0.9)) : absl::InfiniteFuture();
}

absl::StatusOr<v1::Plan> AnswerSafely(SchedulingBackend* backend, const v1::PlanRequest& request, bool score_only,
                                      const CallContext& call) {
  return Safely([&] { return backend->Answer(request, score_only, call); });
}

bool RepeatSafely(SchedulingBackend* backend, const v1::PlanRequest& request, bool score_only, const CallContext& call,
                  v1::Plan* reply) {
  try {
    return backend->AnswerRepeat(request, score_only, call, reply);
  } catch (...) {
    reply->Clear();
    return false;
  }
}

absl::StatusOr<absl::string_view> Contiguous(const grpc::ByteBuffer& buffer, grpc::Slice* slice) {
  if (!buffer.DumpToSingleSlice(slice).ok()) return absl::InvalidArgumentError("the request could not be read");
  return absl::string_view(reinterpret_cast<const char*>(slice->begin()), slice->size());
}

void SerializeTo(const google::protobuf::Message& message, grpc::ByteBuffer* buffer) {
  bool own = false;
  grpc::Status status = grpc::SerializationTraits<google::protobuf::Message>::Serialize(message, buffer, &own);
  (void)status;  // only fails above 2 GB, which --max-message-mb rules out
}

ReceivedBytes::ReceivedBytes(SchedulerService* service, std::string tenant, MemoryAdmission::Ticket ticket)
    : service_(service), tenant_(std::move(tenant)), ticket_(std::move(ticket)) {}

ReceivedBytes::ReceivedBytes(ReceivedBytes&& other) noexcept
    : service_(std::exchange(other.service_, nullptr)),
      tenant_(std::move(other.tenant_)),
      ticket_(std::move(other.ticket_)) {}

ReceivedBytes& ReceivedBytes::operator=(ReceivedBytes&& other) noexcept {
  if (this != &other) {
    Release();
    service_ = std::exchange(other.service_, nullptr);
    tenant_ = std::move(other.tenant_);
    ticket_ = std::move(other.ticket_);
  }
  return *this;
}

void ReceivedBytes::Release() {
  if (service_ != nullptr) service_->ReturnReceived(tenant_, ticket_.bytes());
  service_ = nullptr;
  ticket_.Release();
}

absl::Status AdmitRequest(SchedulerService* service, const std::string& tenant, const RequestShape& shape,
                          JobMemory* memory, ReceivedBytes* arrival) {
  RETURN_IF_ERROR(CheckShape(shape, service->backend()->options().max_ops));
  *memory = MemoryOf(shape);
  if (service->options().admission != nullptr) {
    RETURN_IF_ERROR(service->options().admission->CheckFits(memory->estimate));
  }
  ASSIGN_OR_RETURN(*arrival, AdmitArrival(service, tenant, shape));
  return absl::OkStatus();
}

absl::StatusOr<MemoryAdmission::Ticket> AdmitJob(MemoryAdmission* admission, const JobMemory& memory,
                                                 const grpc::CallbackServerContext& context,
                                                 const std::atomic<bool>* cancelled) {
  if (admission == nullptr) return MemoryAdmission::Ticket();
  return admission->Admit(memory.estimate, AbslDeadline(context), cancelled);
}

CallContext JobCall(const grpc::CallbackServerContext& context, const std::atomic<bool>* cancelled,
                    const std::string& tenant, MemoryAdmission::Ticket* ticket, const JobMemory& memory) {
  CallContext call;
  call.seconds_left = SecondsLeft(context);
  call.cancelled = cancelled;
  call.tenant = tenant;
  if (ticket != nullptr && ticket->bytes() > 0) {
    call.granted_bytes = ticket->bytes();
    call.grow_memory = [ticket](int64_t more) { return ticket->TryGrow(more); };
    call.build_bytes = memory.build;
  }
  return call;
}

}  // namespace serenity
