#include "server/scheduler_service.h"

#include <chrono>
#include <cmath>
#include <deque>
#include <exception>
#include <limits>
#include <memory>
#include <string>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "core/util/status_macros.h"
#include "core/request_scan.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/wire_format_lite.h"
#include "grpcpp/impl/codegen/proto_utils.h"

namespace serenity {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Seconds before the call's deadline; infinity when it has none.
double SecondsLeft(const grpc::CallbackServerContext& context) {
  const auto deadline = context.deadline();
  if (deadline >= std::chrono::system_clock::time_point::max() - std::chrono::hours(24 * 365)) {
    return std::numeric_limits<double>::infinity();
  }
  return std::chrono::duration<double>(deadline - std::chrono::system_clock::now()).count();
}

// Runs the backend, turning anything thrown (which core/ never should) into
// an internal error.
absl::StatusOr<v1::Plan> AnswerSafely(SchedulingBackend* backend, const v1::PlanRequest& request, bool score_only,
                                      const CallContext& call) {
  try {
    return backend->Answer(request, score_only, call);
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("exception: ", e.what()));
  } catch (...) {
    return absl::InternalError("unknown exception");
  }
}

// Writes the memo's answer to a repeated request to `reply` and returns
// true, or false (also when the memo lookup throws: Answer then runs and
// reports, into a cleared `reply`).
bool RepeatSafely(SchedulingBackend* backend, const v1::PlanRequest& request, bool score_only,
                  const CallContext& call, v1::Plan* reply) {
  try {
    return backend->AnswerRepeat(request, score_only, call, reply);
  } catch (...) {
    reply->Clear();
    return false;
  }
}

// The status a caller sees; internal failures name the request id that the
// log line carries, not their details.
grpc::Status ReplyStatus(const absl::Status& status, int64_t request_id) {
  grpc::Status reply = ToGrpcStatus(status);
  if (reply.error_code() == grpc::StatusCode::INTERNAL) {
    return grpc::Status(grpc::StatusCode::INTERNAL,
                        absl::StrCat("internal error; the server log has the details under request_id=", request_id));
  }
  return reply;
}

// ReplyStatus of a unary call's failure, with an internal one's details
// logged under the request id.
grpc::Status LoggedReplyStatus(const absl::Status& status, int64_t request_id) {
  if (status.code() == absl::StatusCode::kInternal) {
    Log("error", "internal_error", {{"request_id", absl::StrCat(request_id)}, {"detail", status.ToString()}});
  }
  return ReplyStatus(status, request_id);
}

// The slot key of a connection's Score candidates: apart from its Plan
// calls' (the peer string), so that a stream holding every one of its
// slots never makes the connection's Plan calls fail.
std::string ScoreSlotKey(const std::string& peer) { return peer + " score"; }

// The bytes of a raw request, in one piece: the scan and the parse read
// them in place (a request gRPC received in one slice is not copied).
absl::StatusOr<absl::string_view> Contiguous(const grpc::ByteBuffer& buffer, grpc::Slice* slice) {
  if (!buffer.DumpToSingleSlice(slice).ok()) return absl::InvalidArgumentError("the request could not be read");
  return absl::string_view(reinterpret_cast<const char*>(slice->begin()), slice->size());
}

// Refuses, before it is parsed, a request whose graph is above the
// server's op limit (it could never be planned here: not to be retried).
absl::Status CheckShape(const RequestShape& shape, int64_t max_ops) {
  if (shape.ops > max_ops) {
    return absl::InvalidArgumentError(absl::StrCat("the graph has ", shape.ops, " ops; this server accepts at most ",
                                                   max_ops, " (--max-ops)"));
  }
  return absl::OkStatus();
}

// Requests up to this size are parsed on the gRPC thread, so that a repeat
// is answered from the memo without a job; larger ones are parsed by their
// job once their memory is admitted.
constexpr int64_t kParseInlineBytes = 256 << 10;

// The memory a request's job is admitted with, from its scanned shape.
struct JobMemory {
  int64_t estimate = 0;  // EstimatePlanningBytes
  int64_t build = 0;     // EstimateBuildBytes
};

JobMemory MemoryOf(const RequestShape& shape) { return {EstimatePlanningBytes(shape), EstimateBuildBytes(shape)}; }

// The time a job may wait for memory: 90% of the call's time left, so that
// a refusal (RESOURCE_EXHAUSTED, retry later) reaches the caller before its
// deadline does.
absl::Time AbslDeadline(const grpc::CallbackServerContext& context) {
  const double left = SecondsLeft(context);
  return std::isfinite(left) ? absl::Now() + absl::Seconds(std::max(0.0, left * 0.9)) : absl::InfiniteFuture();
}

// The bytes of one request as received, held from its arrival until its
// job ends: a ticket of the pool of received requests, counted in its
// tenant's share of that pool. Move-only; gives both back when released.
class ReceivedBytes {
 public:
  ReceivedBytes() = default;
  ReceivedBytes(SchedulerService* service, std::string tenant, MemoryAdmission::Ticket ticket)
      : service_(service), tenant_(std::move(tenant)), ticket_(std::move(ticket)) {}
  ReceivedBytes(ReceivedBytes&& other) noexcept
      : service_(std::exchange(other.service_, nullptr)),
        tenant_(std::move(other.tenant_)),
        ticket_(std::move(other.ticket_)) {}
  ReceivedBytes& operator=(ReceivedBytes&& other) noexcept {
    if (this != &other) {
      Release();
      service_ = std::exchange(other.service_, nullptr);
      tenant_ = std::move(other.tenant_);
      ticket_ = std::move(other.ticket_);
    }
    return *this;
  }
  ~ReceivedBytes() { Release(); }

  void Release() {
    if (service_ != nullptr) service_->ReturnReceived(tenant_, ticket_.bytes());
    service_ = nullptr;
    ticket_.Release();
  }

 private:
  SchedulerService* service_ = nullptr;
  std::string tenant_;
  MemoryAdmission::Ticket ticket_;
};

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

// Everything a request must pass before it is parsed: its graph within
// --max-ops, its estimated memory within a job's, and its bytes taken from
// the pool of received requests. Sets `memory` and `arrival` when it does.
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

// Waits (on this job's thread) for the job's memory; with no admission,
// an empty ticket at once.
absl::StatusOr<MemoryAdmission::Ticket> AdmitJob(MemoryAdmission* admission, const JobMemory& memory,
                                                  const grpc::CallbackServerContext& context,
                                                  const std::atomic<bool>* cancelled) {
  if (admission == nullptr) return MemoryAdmission::Ticket();
  return admission->Admit(memory.estimate, AbslDeadline(context), cancelled);
}

// The call context of a job holding `ticket` (may be empty).
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

// A Score candidate as read: its bytes, parsed only by its job once its
// memory is admitted, and the fields its result needs before that.
struct ScoreCandidate {
  grpc::Slice bytes;  // in one piece (Contiguous)
  std::string id;          // ScoreRequest.id
  bool full_plan = false;  // ScoreRequest.full_plan
  JobMemory memory;
  ReceivedBytes arrival;  // the bytes as received
};

// Reads ScoreRequest.id and .full_plan off the wire (skipping the request
// itself); false for bytes that are no ScoreRequest.
bool ReadScoreHead(absl::string_view bytes, ScoreCandidate* candidate) {
  google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t*>(bytes.data()),
                                            static_cast<int>(bytes.size()));
  using google::protobuf::internal::WireFormatLite;
  for (uint32_t tag = in.ReadTag(); tag != 0; tag = in.ReadTag()) {
    const int field = WireFormatLite::GetTagFieldNumber(tag);
    const auto type = WireFormatLite::GetTagWireType(tag);
    if (field == v1::ScoreRequest::kIdFieldNumber && type == WireFormatLite::WIRETYPE_LENGTH_DELIMITED) {
      uint32_t length;
      if (!in.ReadVarint32(&length) || !in.ReadString(&candidate->id, static_cast<int>(length))) return false;
    } else if (field == v1::ScoreRequest::kFullPlanFieldNumber && type == WireFormatLite::WIRETYPE_VARINT) {
      uint64_t value;
      if (!in.ReadVarint64(&value)) return false;
      candidate->full_plan = value != 0;
    } else if (!WireFormatLite::SkipField(&in, tag)) {
      return false;
    }
  }
  return in.ConsumedEntireMessage();
}

// Serializes `message` into a reply buffer.
void SerializeTo(const google::protobuf::Message& message, grpc::ByteBuffer* buffer) {
  bool own = false;
  grpc::Status status = grpc::SerializationTraits<google::protobuf::Message>::Serialize(message, buffer, &own);
  (void)status;  // only fails above 2 GB, which --max-message-mb rules out
}

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
        start_(Clock::now()) {}

  void Start() {
    if (service_->draining()) {
      return Complete(grpc::Status(grpc::StatusCode::UNAVAILABLE, "the server is shutting down"), "");
    }
    grpc::Status auth = service_->Authenticate(*context_, &tenant_);
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
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "the request is not a valid serenity.v1.PlanRequest message");
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
    const char* code = GrpcCodeName(status.error_code());
    if (service_->metrics() != nullptr) service_->metrics()->RecordCall("Plan", "unary", code, seconds_);
    if (status.ok()) {
      Log("info", "plan",
          {{"request_id", absl::StrCat(request_id_)}, {"peer", peer_}, {"model", response_->model()},
           {"code", code}, {"ms", absl::StrCat(seconds_ * 1000)}, {"cache", cache_},
           {"nodes", absl::StrCat(response_->nodes())}, {"peak_bytes", absl::StrCat(response_->peak_bytes())},
           {"certificate", v1::Certificate_Name(response_->certificate())}});
    } else {
      Log("info", "plan",
          {{"request_id", absl::StrCat(request_id_)}, {"peer", peer_}, {"model", request_->model_name()},
           {"code", code}, {"ms", absl::StrCat(seconds_ * 1000)}, {"error", status.error_message()}});
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
  JobMemory memory_;                  // set by Start
  ReceivedBytes arrival_;  // the request's bytes as received; set by Start
  const std::string peer_;
  const int64_t request_id_;
  const Clock::time_point start_;
  std::string tenant_;  // set by Start
  std::atomic<bool> cancelled_{false};
  // Set by Complete, read by Report (OnDone comes after Finish).
  double seconds_ = 0;
  grpc::Status finish_status_;
  std::string cache_;
};

// One Score stream. Each candidate takes one of its connection's job slots
// from when it is read until its search is done; a stream that finds its
// connection full parks the candidate it just read and reads no further
// until ConnectionSlots hands it a slot. Results are written in the order
// they finish. A stream also stops reading while its own running candidates
// and unwritten results reach the per-connection limit, so a client that
// does not read its results holds that many in the server at most, and
// stalls only that stream: its slots are free for the connection's others.
class ScoreCall final : public grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>,
                        public ConnectionSlots::Waiter {
 public:
  ScoreCall(SchedulerService* service, grpc::CallbackServerContext* context)
      : service_(service),
        slots_(service->slots()),
        context_(context),
        peer_(context->peer()),
        slot_key_(ScoreSlotKey(peer_)),
        request_id_(service->NextRequestId()),
        start_(Clock::now()) {}

  void Begin() {
    grpc::Status auth = service_->draining()
                            ? grpc::Status(grpc::StatusCode::UNAVAILABLE, "the server is shutting down")
                            : service_->Authenticate(*context_, &tenant_);
    if (!auth.ok()) {
      final_status_ = auth;
      reading_done_ = true;
      MaybeFinish();
      return;
    }
    read_outstanding_ = true;
    StartRead(&incoming_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {
      // A failed read is the client's half-close, or its cancel (which
      // OnCancel may report only later): then stop the running searches.
      if (context_->IsCancelled()) cancelled_.store(true);
      {
        std::lock_guard<std::mutex> lock(mu_);
        read_outstanding_ = false;
        reading_done_ = true;
      }
      MaybeFinish();
      return;
    }
    // Refuse before building: a candidate that is not a ScoreRequest, whose
    // graph is above --max-ops or whose memory can never be admitted fails
    // alone, unparsed and without a slot. The rest is parsed by its job.
    auto candidate = std::make_shared<ScoreCandidate>();
    absl::Status readable;
    {
      absl::StatusOr<absl::string_view> bytes = Contiguous(incoming_, &candidate->bytes);
      absl::StatusOr<RequestShape> shape = bytes.ok() ? ScanScoreRequest(*bytes) : bytes.status();
      readable = shape.ok() ? AdmitRequest(service_, tenant_, *shape, &candidate->memory, &candidate->arrival)
                            : shape.status();
      if (shape.ok() && !ReadScoreHead(*bytes, candidate.get()) && readable.ok()) {
        readable = absl::InvalidArgumentError("the candidate is not a valid serenity.v1.ScoreRequest message");
      }
    }
    incoming_.Clear();
    // While the server drains, a stream already open gets no new work: each
    // further candidate fails alone, at once.
    if (readable.ok() && service_->draining()) readable = absl::UnavailableError("the server is shutting down");
    if (!readable.ok()) return Refuse(readable, candidate->id);
    bool parked;
    {
      std::lock_guard<std::mutex> lock(mu_);
      read_outstanding_ = false;
      parked = !broken_;
      if (parked) {
        // Parked before asking for a slot: the grant may come on another
        // thread as soon as we are in line.
        parked_ = std::move(candidate);
        parked_index_ = next_index_++;
        waiting_ = true;
      }
    }
    if (!parked) return MaybeFinish();
    if (slots_->AcquireOrWait(slot_key_, this)) return OnSlotGranted();
    // In line. A cancel that came before we were in line could not take us
    // out of it: do it here.
    if (AbandonWaitIfBroken()) MaybeFinish();
  }

  // Answers the candidate just read with `status`, without a slot, and
  // reads the next one when there is room.
  void Refuse(const absl::Status& status, const std::string& id) {
    bool broken, read = false;
    int32_t index = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      read_outstanding_ = false;
      broken = broken_;
      if (!broken) {
        index = next_index_++;
        ++in_flight_;  // until Deliver: the stream cannot finish meanwhile
        read = HasRoomLocked();
        read_outstanding_ = read;
        read_paused_ = !read;
      }
    }
    if (broken) return MaybeFinish();
    v1::ScoreResult result;
    result.set_id(id);
    result.set_index(index);
    const grpc::Status refused = ToGrpcStatus(status);
    result.set_code(static_cast<int32_t>(refused.error_code()));
    result.set_error(refused.error_message());
    Deliver(std::move(result), /*holds_slot=*/false);  // `this` may be gone unless `read`
    if (read) StartRead(&incoming_);
  }

  // The parked candidate now holds a slot: run it and read the next one.
  void OnSlotGranted() override {
    bool broken;
    {
      std::lock_guard<std::mutex> lock(mu_);
      broken = broken_;
    }
    if (broken) {
      // waiting_ (still true) keeps the stream from finishing meanwhile.
      slots_->Release(slot_key_);
      grpc::Status status;
      bool finish;
      {
        std::lock_guard<std::mutex> lock(mu_);
        waiting_ = false;
        parked_.reset();
        finish = TakeFinishLocked(&status);
      }
      if (finish) FinishStream(status);
      return;
    }
    std::shared_ptr<ScoreCandidate> candidate;
    int32_t index;
    bool read;
    {
      std::lock_guard<std::mutex> lock(mu_);
      candidate = std::move(parked_);
      index = parked_index_;
      waiting_ = false;
      ++in_flight_;
      read = HasRoomLocked();
      // The outstanding read keeps `this` alive; without it, the job may
      // finish the stream as soon as it is submitted.
      read_outstanding_ = read;
      read_paused_ = !read;
    }
    // Every candidate is a job, repeats too: answering memoized ones here
    // would serialize them on this stream's reaction (measured: 19k/s as
    // jobs on two threads, 12-14k/s here).
    // A candidate parked before the drain began does not start after it.
    const bool tenant_slot = !service_->draining() && service_->AcquireTenantSlot(tenant_);
    absl::Status queued = tenant_slot ? service_->runner()->Submit([this, candidate, index] { Run(*candidate, index); })
                          : service_->draining()
                              ? absl::UnavailableError("the server is shutting down")
                              : absl::ResourceExhaustedError(service_->TenantBusy().error_message());
    if (!queued.ok()) {
      if (tenant_slot) service_->ReleaseTenantSlot(tenant_);
      v1::ScoreResult result;
      result.set_id(candidate->id);
      result.set_index(index);
      result.set_code(static_cast<int32_t>(ToGrpcStatus(queued).error_code()));
      result.set_error(std::string(queued.message()));
      Deliver(std::move(result));  // `this` may be gone unless `read`
    }
    if (read) StartRead(&incoming_);
  }

  void OnWriteDone(bool ok) override {
    const grpc::ByteBuffer* next = nullptr;
    bool resume_read = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      outgoing_.pop_front();
      if (!ok) {
        // The client went away: drop the rest, stop the running searches,
        // and say so in the log and the metrics even if OnCancel comes later.
        broken_ = true;
        cancelled_.store(true);
        if (final_status_.ok()) final_status_ = grpc::Status(grpc::StatusCode::CANCELLED, "the client went away");
      }
      if (broken_) outgoing_.clear();
      if (!outgoing_.empty()) next = &outgoing_.front();
      writing_ = next != nullptr;
      if (read_paused_ && !broken_ && HasRoomLocked()) {
        read_paused_ = false;
        read_outstanding_ = resume_read = true;
      }
    }
    if (resume_read) StartRead(&incoming_);
    if (next != nullptr) {
      StartWrite(next);
      return;
    }
    AbandonWaitIfBroken();
    MaybeFinish();
  }

  void OnCancel() override {
    cancelled_.store(true);
    {
      std::lock_guard<std::mutex> lock(mu_);
      broken_ = true;
    }
    AbandonWaitIfBroken();
    MaybeFinish();
  }

  void OnDone() override {
    Report();
    delete this;
  }

 private:
  void Run(ScoreCandidate& candidate, int32_t index) {
    const Clock::time_point start = Clock::now();
    absl::StatusOr<v1::Plan> plan = Answer(candidate);
    candidate.arrival.Release();
    service_->ReleaseTenantSlot(tenant_);
    Deliver(ResultOf(candidate, index, std::move(plan), start));
  }

  // The candidate's job: waits for its memory, parses it and plans it.
  absl::StatusOr<v1::Plan> Answer(const ScoreCandidate& candidate) {
    ASSIGN_OR_RETURN(MemoryAdmission::Ticket ticket,
                     AdmitJob(service_->options().admission, candidate.memory, *context_, &cancelled_));
    v1::ScoreRequest request;
    if (!request.ParseFromArray(candidate.bytes.begin(), static_cast<int>(candidate.bytes.size()))) {
      return absl::InvalidArgumentError("the candidate is not a valid serenity.v1.ScoreRequest message");
    }
    return AnswerSafely(service_->backend(), request.request(), !request.full_plan(),
                        JobCall(*context_, &cancelled_, tenant_, &ticket, candidate.memory));
  }

  // The result line of one candidate answered with `plan`.
  v1::ScoreResult ResultOf(const ScoreCandidate& candidate, int32_t index, absl::StatusOr<v1::Plan> plan,
                           Clock::time_point start) {
    v1::ScoreResult result;
    result.set_id(candidate.id);
    result.set_index(index);
    if (!plan.ok()) {
      if (plan.status().code() == absl::StatusCode::kInternal) {
        Log("error", "internal_error",
            {{"request_id", absl::StrCat(request_id_)}, {"candidate", absl::StrCat(index)},
             {"detail", plan.status().ToString()}});
      }
      grpc::Status status = ReplyStatus(plan.status(), request_id_);
      result.set_code(static_cast<int32_t>(status.error_code()));
      result.set_error(status.error_message());
    } else {
      result.set_peak_bytes(plan->peak_bytes());
      result.set_feasible(plan->feasible());
      if (plan->memory_budget_bytes() > 0) result.set_slack_bytes(plan->peak_bytes() - plan->memory_budget_bytes());
      result.set_certificate(plan->certificate());
      result.set_lower_bound_bytes(plan->lower_bound_bytes());
      result.set_cache(plan->stats().cache());
      result.set_plan_id(plan->plan_id());
      if (candidate.full_plan) *result.mutable_plan() = std::move(plan).value();
    }
    result.set_total_ms(SecondsSince(start) * 1000);
    return result;
  }

  // Frees a finished candidate's slot (when it holds one), then queues its
  // result for writing, or drops it when the client is gone.
  void Deliver(v1::ScoreResult result, bool holds_slot = true) {
    if (service_->metrics() != nullptr) {
      service_->metrics()->RecordCandidate(GrpcCodeName(static_cast<grpc::StatusCode>(result.code())));
    }
    grpc::ByteBuffer serialized;
    SerializeTo(result, &serialized);
    // While this candidate counts in in_flight_ the stream cannot finish,
    // so the slot is free before anyone can see the stream end. Release may
    // grant it to this very stream (OnSlotGranted takes mu_ itself).
    if (holds_slot) slots_->Release(slot_key_);
    const grpc::ByteBuffer* write = nullptr;
    bool finish = false;
    grpc::Status status;
    {
      std::lock_guard<std::mutex> lock(mu_);
      --in_flight_;
      ++answered_;
      if (!broken_) {
        outgoing_.push_back(std::move(serialized));
        if (!writing_) {
          writing_ = true;
          write = &outgoing_.front();
        }
      }
      // Decided here, in the same critical section: this runs on a job
      // thread, which gRPC does not wait for, so once the lock is released
      // another thread may finish the stream and the reactor be deleted.
      // Past this point only an outstanding write or read of our own, or a
      // finish we decided, keeps `this` alive.
      finish = write == nullptr && TakeFinishLocked(&status);
    }
    if (write != nullptr) StartWrite(write);
    if (finish) FinishStream(status);
  }

  // Takes a broken stream out of the slot line, dropping its parked
  // candidate; true if it did (false also when the slot was granted
  // already: OnSlotGranted then gives it back).
  bool AbandonWaitIfBroken() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!broken_ || !waiting_) return false;
    }
    if (!slots_->CancelWait(slot_key_, this)) return false;
    std::lock_guard<std::mutex> lock(mu_);
    waiting_ = false;
    parked_.reset();
    return true;
  }

  // Finishes once no read, job, write or wait for a slot is outstanding.
  // Only for gRPC's reactions (and Begin), which gRPC lets complete before
  // OnDone.
  void MaybeFinish() {
    grpc::Status status;
    bool finish;
    {
      std::lock_guard<std::mutex> lock(mu_);
      finish = TakeFinishLocked(&status);
    }
    if (finish) FinishStream(status);
  }

  // Under mu_: whether the stream may read another candidate: its running
  // candidates and unwritten results are below the per-connection limit.
  bool HasRoomLocked() const {
    return in_flight_ + static_cast<int64_t>(outgoing_.size()) < slots_->per_connection();
  }

  // Under mu_: true, with the final status, for the one caller that finds
  // nothing outstanding; that caller must call FinishStream.
  bool TakeFinishLocked(grpc::Status* status) {
    if (finished_ || in_flight_ > 0 || writing_ || waiting_ || read_outstanding_) return false;
    if (!reading_done_ && !broken_) return false;
    finished_ = true;
    *status = final_status_;
    if (status->ok() && (cancelled_.load() || context_->IsCancelled())) {
      *status = grpc::Status(grpc::StatusCode::CANCELLED, "the call was cancelled");
    }
    return true;
  }

  // Finishes the stream; `this` may be gone afterwards.
  void FinishStream(const grpc::Status& status) {
    finish_status_ = status;
    Finish(status);
  }

  // Logs and counts the stream once gRPC is done with it. Only then is it
  // known for sure whether the call was cancelled: a read can fail before
  // OnCancel says why, and when gRPC refuses a candidate above the message
  // limit the call ends RESOURCE_EXHAUSTED for the client while the stream
  // saw only a failed read.
  void Report() {
    const double seconds = SecondsSince(start_);
    grpc::Status status = finish_status_;
    std::string note;
    // The stream may already have finished CANCELLED itself if it saw the
    // cancellation first; the note is due either way.
    const bool ended_by_client_or_transport =
        status.ok() || status.error_code() == grpc::StatusCode::CANCELLED;
    if (ended_by_client_or_transport && context_->IsCancelled()) {
      status = grpc::Status(grpc::StatusCode::CANCELLED, "");
      note = "the client cancelled, its deadline passed, or a candidate or result exceeded --max-message-mb";
    }
    const char* code = GrpcCodeName(status.error_code());
    if (service_->metrics() != nullptr) service_->metrics()->RecordCall("Score", "bidi_stream", code, seconds);
    const std::string request_id = absl::StrCat(request_id_), candidates = absl::StrCat(answered_),
                      ms = absl::StrCat(seconds * 1000);
    if (note.empty()) {
      Log("info", "score",
          {{"request_id", request_id}, {"peer", peer_}, {"code", code}, {"candidates", candidates}, {"ms", ms}});
    } else {
      Log("info", "score",
          {{"request_id", request_id}, {"peer", peer_}, {"code", code}, {"candidates", candidates}, {"ms", ms},
           {"note", note}});
    }
  }

  SchedulerService* const service_;
  ConnectionSlots* const slots_;
  grpc::CallbackServerContext* const context_;
  const std::string peer_;
  const std::string slot_key_;  // the connection's Score slots
  const int64_t request_id_;
  const Clock::time_point start_;
  std::string tenant_;  // set by Begin
  std::atomic<bool> cancelled_{false};
  grpc::ByteBuffer incoming_;  // only touched by the one outstanding read
  int32_t next_index_ = 0;     // likewise

  std::mutex mu_;
  std::deque<grpc::ByteBuffer> outgoing_;  // serialized results; front() is being written
  std::shared_ptr<ScoreCandidate> parked_;  // read, waiting for a slot
  int32_t parked_index_ = 0;
  int64_t in_flight_ = 0;
  int64_t answered_ = 0;
  bool read_outstanding_ = false, read_paused_ = false, reading_done_ = false, waiting_ = false;
  bool writing_ = false, broken_ = false, finished_ = false;
  grpc::Status final_status_;
  grpc::Status finish_status_;  // as passed to Finish
};

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
        start_(Clock::now()) {}

  void Start() {
    grpc::Status status = service_->draining()
                              ? grpc::Status(grpc::StatusCode::UNAVAILABLE, "the server is shutting down")
                              : service_->Authenticate(*context_, &tenant_);
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
    MemoryAdmission* admission = service_->options().admission;
    MemoryAdmission::Ticket ticket;
    if (admission != nullptr) {
      ASSIGN_OR_RETURN(ticket, admission->Admit(admission->max_job_bytes(), AbslDeadline(*context_), &cancelled_));
    }
    CallContext call;
    call.seconds_left = SecondsLeft(*context_);
    call.cancelled = &cancelled_;
    call.tenant = tenant_;
    try {
      return service_->backend()->GetPlan(request_->plan_id(), call);
    } catch (const std::exception& e) {
      return absl::InternalError(absl::StrCat("exception: ", e.what()));
    } catch (...) {
      return absl::InternalError("unknown exception");
    }
  }

  // Logs, counts and finishes the call; `this` may be gone afterwards.
  void Complete(const grpc::Status& status) {
    const char* code = GrpcCodeName(status.error_code());
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
  const Clock::time_point start_;
  std::string tenant_;  // set by Start
  std::atomic<bool> cancelled_{false};
};

}  // namespace

grpc::Status ToGrpcStatus(const absl::Status& status) {
  const std::string message(status.message());
  switch (status.code()) {
    case absl::StatusCode::kOk:
      return grpc::Status::OK;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kOutOfRange:
    case absl::StatusCode::kFailedPrecondition:
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, message);
    case absl::StatusCode::kNotFound:
      return grpc::Status(grpc::StatusCode::NOT_FOUND, message);
    case absl::StatusCode::kUnimplemented:
      return grpc::Status(grpc::StatusCode::UNIMPLEMENTED, message);
    case absl::StatusCode::kDeadlineExceeded:
      return grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, message);
    case absl::StatusCode::kCancelled:
      return grpc::Status(grpc::StatusCode::CANCELLED, message);
    case absl::StatusCode::kResourceExhausted:
      return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, message);
    case absl::StatusCode::kUnauthenticated:
      return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, message);
    case absl::StatusCode::kUnavailable:
      return grpc::Status(grpc::StatusCode::UNAVAILABLE, message);
    default:
      return grpc::Status(grpc::StatusCode::INTERNAL, message);
  }
}

const char* GrpcCodeName(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK: return "OK";
    case grpc::StatusCode::CANCELLED: return "CANCELLED";
    case grpc::StatusCode::UNKNOWN: return "UNKNOWN";
    case grpc::StatusCode::INVALID_ARGUMENT: return "INVALID_ARGUMENT";
    case grpc::StatusCode::DEADLINE_EXCEEDED: return "DEADLINE_EXCEEDED";
    case grpc::StatusCode::NOT_FOUND: return "NOT_FOUND";
    case grpc::StatusCode::ALREADY_EXISTS: return "ALREADY_EXISTS";
    case grpc::StatusCode::PERMISSION_DENIED: return "PERMISSION_DENIED";
    case grpc::StatusCode::RESOURCE_EXHAUSTED: return "RESOURCE_EXHAUSTED";
    case grpc::StatusCode::FAILED_PRECONDITION: return "FAILED_PRECONDITION";
    case grpc::StatusCode::ABORTED: return "ABORTED";
    case grpc::StatusCode::OUT_OF_RANGE: return "OUT_OF_RANGE";
    case grpc::StatusCode::UNIMPLEMENTED: return "UNIMPLEMENTED";
    case grpc::StatusCode::INTERNAL: return "INTERNAL";
    case grpc::StatusCode::UNAVAILABLE: return "UNAVAILABLE";
    case grpc::StatusCode::DATA_LOSS: return "DATA_LOSS";
    case grpc::StatusCode::UNAUTHENTICATED: return "UNAUTHENTICATED";
    default: return "UNKNOWN";
  }
}

SchedulerService::SchedulerService(JobRunner* runner, SchedulingBackend* backend, ServerMetrics* metrics,
                                   ServiceOptions options)
    : runner_(runner),
      backend_(backend),
      metrics_(metrics),
      options_(std::move(options)),
      slots_(options_.max_jobs_per_connection),
      tenant_slots_(options_.max_jobs_per_tenant) {
}

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

grpc::ServerUnaryReactor* SchedulerService::Plan(grpc::CallbackServerContext* context,
                                                 const grpc::ByteBuffer* request, grpc::ByteBuffer* response) {
  auto* call = new PlanCall(this, context, request, response);
  call->Start();
  return call;
}

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* SchedulerService::Score(
    grpc::CallbackServerContext* context) {
  auto* call = new ScoreCall(this, context);
  call->Begin();
  return call;
}

grpc::ServerUnaryReactor* SchedulerService::GetPlan(grpc::CallbackServerContext* context,
                                                    const v1::GetPlanRequest* request, v1::Plan* response) {
  auto* call = new GetPlanCall(this, context, request, response);
  call->Start();
  return call;
}

}  // namespace serenity
