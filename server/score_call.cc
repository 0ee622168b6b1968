#include "server/score_call.h"

#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "core/request_scan.h"
#include "core/util/status_macros.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/wire_format_lite.h"
#include "server/call_common.h"
#include "server/grpc_status.h"

namespace serenity {
namespace {

// The result of a candidate that failed with `status`.
v1::ScoreResult FailedResult(const std::string& id, int32_t index, const grpc::Status& status) {
  v1::ScoreResult result;
  result.set_id(id);
  result.set_index(index);
  result.set_code(static_cast<int32_t>(status.error_code()));
  result.set_error(status.error_message());
  return result;
}

// The slot key of a connection's Score candidates: apart from its Plan
// calls' (the peer string), so that a stream holding every one of its
// slots never makes the connection's Plan calls fail.
std::string ScoreSlotKey(const std::string& peer) { return peer + " score"; }

// A Score candidate as read: its bytes, parsed only by its job once its
// memory is admitted, and the fields its result needs before that.
struct ScoreCandidate {
  grpc::Slice bytes;       // in one piece (Contiguous)
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
        start_(CallClock::now()) {}

  void Begin() {
    grpc::Status auth = service_->AcceptCall(*context_, &tenant_);
    if (!auth.ok()) {
      final_status_ = auth;
      reading_ = Reading::kDone;
      MaybeFinish();
      return;
    }
    reading_ = Reading::kOutstanding;
    StartRead(&incoming_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {
      // A failed read is the client's half-close, or its cancel (which
      // OnCancel may report only later): then stop the running searches.
      if (context_->IsCancelled()) cancelled_.store(true);
      {
        std::lock_guard<std::mutex> lock(mu_);
        reading_ = Reading::kDone;
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
      reading_ = Reading::kIdle;
      parked = open();
      if (parked) {
        // Parked before asking for a slot: the grant may come on another
        // thread as soon as we are in line.
        parked_ = std::move(candidate);
        parked_index_ = next_index_++;
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
      reading_ = Reading::kIdle;
      broken = !open();
      if (!broken) {
        index = next_index_++;
        ++in_flight_;  // until Deliver: the stream cannot finish meanwhile
        read = ReadNextOrPauseLocked();
      }
    }
    if (broken) return MaybeFinish();
    Deliver(FailedResult(id, index, ToGrpcStatus(status)), /*holds_slot=*/false);  // `this` may be gone unless `read`
    if (read) StartRead(&incoming_);
  }

  // The parked candidate now holds a slot: run it and read the next one.
  void OnSlotGranted() override {
    bool broken;
    {
      std::lock_guard<std::mutex> lock(mu_);
      broken = !open();
    }
    if (broken) {
      // parked_ (still set) keeps the stream from finishing meanwhile.
      slots_->Release(slot_key_);
      grpc::Status status;
      bool finish;
      {
        std::lock_guard<std::mutex> lock(mu_);
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
      ++in_flight_;
      // The outstanding read keeps `this` alive; without it, the job may
      // finish the stream as soon as it is submitted.
      read = ReadNextOrPauseLocked();
    }
    // Every candidate is a job, repeats too: answering memoized ones here
    // would serialize them on this stream's reaction (measured: 19k/s as
    // jobs on two threads, 12-14k/s here).
    // A candidate parked before the drain began does not start after it.
    const bool tenant_slot = !service_->draining() && service_->AcquireTenantSlot(tenant_);
    absl::Status queued = tenant_slot ? service_->runner()->Submit([this, candidate, index] { Run(*candidate, index); })
                          : service_->draining() ? absl::UnavailableError("the server is shutting down")
                                                 : absl::ResourceExhaustedError(service_->TenantBusy().error_message());
    if (!queued.ok()) {
      if (tenant_slot) service_->ReleaseTenantSlot(tenant_);
      Deliver(FailedResult(candidate->id, index,
                           grpc::Status(ToGrpcStatus(queued).error_code(),
                                        std::string(queued.message()))));  // `this` may be gone unless `read`
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
        BreakLocked();
        cancelled_.store(true);
        if (final_status_.ok()) final_status_ = grpc::Status(grpc::StatusCode::CANCELLED, "the client went away");
      }
      if (!open()) outgoing_.clear();
      if (!outgoing_.empty()) next = &outgoing_.front();
      resume_read = ResumeReadingLocked();
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
      BreakLocked();
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
    const CallClock::time_point start = CallClock::now();
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
                           CallClock::time_point start) {
    v1::ScoreResult result;
    result.set_id(candidate.id);
    result.set_index(index);
    if (!plan.ok()) {
      if (plan.status().code() == absl::StatusCode::kInternal) {
        Log("error", "internal_error",
            {{"request_id", absl::StrCat(request_id_)},
             {"candidate", absl::StrCat(index)},
             {"detail", plan.status().ToString()}});
      }
      result = FailedResult(candidate.id, index, ReplyStatus(plan.status(), request_id_));
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
      if (open()) {
        const bool writing = !outgoing_.empty();
        outgoing_.push_back(std::move(serialized));
        if (!writing) write = &outgoing_.front();
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
      if (open() || parked_ == nullptr) return false;
    }
    if (!slots_->CancelWait(slot_key_, this)) return false;
    std::lock_guard<std::mutex> lock(mu_);
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
  bool HasRoomLocked() const { return in_flight_ + static_cast<int64_t>(outgoing_.size()) < slots_->per_connection(); }

  // The transitions of the stream's state (ScoreCall::Reading and Phase),
  // all under mu_.

  // Whether the client is still there and the stream not finished.
  bool open() const { return phase_ == Phase::kOpen; }

  // The client is gone: results are dropped and nothing more is read.
  void BreakLocked() {
    if (phase_ == Phase::kOpen) phase_ = Phase::kBroken;
  }

  // After a candidate was read and handed on: reads the next one when the
  // stream has room (true: the caller must StartRead), else pauses.
  bool ReadNextOrPauseLocked() {
    reading_ = HasRoomLocked() ? Reading::kOutstanding : Reading::kPaused;
    return reading_ == Reading::kOutstanding;
  }

  // After a result was written: a paused stream of an open call that has
  // room again reads on (true: the caller must StartRead).
  bool ResumeReadingLocked() {
    if (reading_ != Reading::kPaused || !open() || !HasRoomLocked()) return false;
    reading_ = Reading::kOutstanding;
    return true;
  }

  // True, with the final status, for the one caller that finds nothing
  // outstanding (no read, job, write or wait for a slot) once reading is
  // over or the client gone; that caller must call FinishStream.
  bool TakeFinishLocked(grpc::Status* status) {
    if (phase_ == Phase::kFinished || in_flight_ > 0 || !outgoing_.empty() || parked_ != nullptr ||
        reading_ == Reading::kOutstanding) {
      return false;
    }
    if (reading_ != Reading::kDone && phase_ != Phase::kBroken) return false;
    phase_ = Phase::kFinished;
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
    const bool ended_by_client_or_transport = status.ok() || status.error_code() == grpc::StatusCode::CANCELLED;
    if (ended_by_client_or_transport && context_->IsCancelled()) {
      status = grpc::Status(grpc::StatusCode::CANCELLED, "");
      note = "the client cancelled, its deadline passed, or a candidate or result exceeded --max-message-mb";
    }
    const std::string code = GrpcCodeName(status.error_code());
    if (service_->metrics() != nullptr) service_->metrics()->RecordCall("Score", "bidi_stream", code, seconds);
    const std::string request_id = absl::StrCat(request_id_), candidates = absl::StrCat(answered_),
                      ms = absl::StrCat(seconds * 1000);
    if (note.empty()) {
      Log("info", "score",
          {{"request_id", request_id}, {"peer", peer_}, {"code", code}, {"candidates", candidates}, {"ms", ms}});
    } else {
      Log("info", "score",
          {{"request_id", request_id},
           {"peer", peer_},
           {"code", code},
           {"candidates", candidates},
           {"ms", ms},
           {"note", note}});
    }
  }

  SchedulerService* const service_;
  ConnectionSlots* const slots_;
  grpc::CallbackServerContext* const context_;
  const std::string peer_;
  const std::string slot_key_;  // the connection's Score slots
  const int64_t request_id_;
  const CallClock::time_point start_;
  std::string tenant_;  // set by Begin
  std::atomic<bool> cancelled_{false};
  grpc::ByteBuffer incoming_;  // only touched by the one outstanding read
  int32_t next_index_ = 0;     // likewise

  // The stream's state, under mu_: what its reading side does, whether the
  // client is still there, and what keeps it from finishing (a read, a
  // parked candidate in the slot line, a job, an unwritten result). It
  // changes only through the transitions above (and Begin, before any other
  // thread sees the stream).
  enum class Reading {
    kIdle,         // the candidate just read is being handed on (or waits in parked_)
    kOutstanding,  // a read is outstanding
    kPaused,       // no read until the stream has room again (ResumeReadingLocked)
    kDone,         // no more reads: the client half-closed, or the call was refused
  };
  enum class Phase {
    kOpen,
    kBroken,    // the client cancelled or went away: results are dropped, nothing more is read
    kFinished,  // Finish was called (TakeFinishLocked)
  };

  std::mutex mu_;
  Reading reading_ = Reading::kIdle;
  Phase phase_ = Phase::kOpen;
  // Serialized results; front() is being written while it is not empty.
  std::deque<grpc::ByteBuffer> outgoing_;
  // Read, waiting in the slot line for a slot while it is set.
  std::shared_ptr<ScoreCandidate> parked_;
  int32_t parked_index_ = 0;
  int64_t in_flight_ = 0;
  int64_t answered_ = 0;
  grpc::Status final_status_;
  grpc::Status finish_status_;  // as passed to Finish
};

}  // namespace

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* StartScoreCall(SchedulerService* service,
                                                                            grpc::CallbackServerContext* context) {
  auto* call = new ScoreCall(service, context);
  call->Begin();
  return call;
}

}  // namespace serenity
