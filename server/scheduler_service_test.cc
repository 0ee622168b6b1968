#include "server/scheduler_service.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/job_runner.h"
#include "core/plan_proto.h"
#include "gmock/gmock.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "serenity/v1/scheduler.grpc.pb.h"
#include "tests/testing/test_graph.h"

namespace serenity {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// A backend whose every answer fails the way only a bug could: by throwing.
class ThrowingBackend : public SchedulingBackend {
 public:
  ThrowingBackend() : SchedulingBackend(nullptr, nullptr, nullptr, {}) {}
  absl::StatusOr<v1::Plan> Answer(const v1::PlanRequest&, bool, const CallContext&) override {
    throw std::runtime_error("injected failure 7f3a");
  }
};

// A backend that answers at once, with the request's model name as the
// plan's model: the service's own bookkeeping is all that runs.
class EchoBackend : public SchedulingBackend {
 public:
  explicit EchoBackend(BackendOptions options = {}) : SchedulingBackend(nullptr, nullptr, nullptr, options) {}
  absl::StatusOr<v1::Plan> Answer(const v1::PlanRequest& request, bool, const CallContext&) override {
    v1::Plan plan;
    plan.set_model(request.model_name());
    plan.set_peak_bytes(static_cast<int64_t>(request.model_name().size()));
    return plan;
  }
};

// EchoBackend that counts its answers.
class CountingBackend : public EchoBackend {
 public:
  using EchoBackend::EchoBackend;
  absl::StatusOr<v1::Plan> Answer(const v1::PlanRequest& request, bool score_only, const CallContext& call) override {
    ++answers;
    return EchoBackend::Answer(request, score_only, call);
  }
  std::atomic<int> answers{0};
};

// EchoBackend that answers only once the call has been cancelled (by its
// client or its deadline), and then answers OK as if it had not noticed:
// the reply is finished but never reaches the caller.
class AnswersAfterTheCancelBackend : public EchoBackend {
 public:
  absl::StatusOr<v1::Plan> Answer(const v1::PlanRequest& request, bool score_only, const CallContext& call) override {
    entered.store(true);
    for (int i = 0; i < 1000 && call.cancelled != nullptr && !call.cancelled->load(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return EchoBackend::Answer(request, score_only, call);
  }
  std::atomic<bool> entered{false};
};

// EchoBackend that holds requests for models named "gate..." until Open(),
// and records how many it held at once.
class GateBackend : public EchoBackend {
 public:
  absl::StatusOr<v1::Plan> Answer(const v1::PlanRequest& request, bool score_only, const CallContext& call) override {
    if (request.model_name().rfind("gate", 0) == 0) {
      std::unique_lock<std::mutex> lock(mu_);
      ++held_;
      most_held_ = std::max(most_held_, held_);
      changed_.notify_all();
      changed_.wait(lock, [&] { return open_; });
      --held_;
    }
    ++answers_;
    return EchoBackend::Answer(request, score_only, call);
  }
  int answers() const { return answers_.load(); }
  void Open() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
    changed_.notify_all();
  }
  // Waits up to 10 s until `n` requests are held; false if they never are.
  bool AwaitHeld(int n) {
    std::unique_lock<std::mutex> lock(mu_);
    return changed_.wait_for(lock, std::chrono::seconds(10), [&] { return held_ == n; });
  }
  int held() {
    std::lock_guard<std::mutex> lock(mu_);
    return held_;
  }
  int most_held() {
    std::lock_guard<std::mutex> lock(mu_);
    return most_held_;
  }

 private:
  std::mutex mu_;
  std::condition_variable changed_;
  int held_ = 0, most_held_ = 0;
  bool open_ = false;
  std::atomic<int> answers_{0};
};

// The service in this process on a loopback port, with `backend` and
// `workers` job threads.
class InProcessServer {
 public:
  explicit InProcessServer(SchedulingBackend* backend, int workers = 1, ServiceOptions options = {},
                           int max_receive_bytes = -1)
      : runner_(workers, 64), service_(&runner_, backend, nullptr, std::move(options)) {
    grpc::ServerBuilder builder;
    if (max_receive_bytes > 0) builder.SetMaxReceiveMessageSize(max_receive_bytes);
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    stub_ = v1::Scheduler::NewStub(
        grpc::CreateChannel(absl::StrCat("127.0.0.1:", port_), grpc::InsecureChannelCredentials()));
  }
  ~InProcessServer() { server_->Shutdown(); }

  bool started() const { return server_ != nullptr && port_ > 0; }
  int port() const { return port_; }
  v1::Scheduler::Stub& stub() { return *stub_; }
  SchedulerService& service() { return service_; }
  // A stub on a connection of its own.
  std::unique_ptr<v1::Scheduler::Stub> NewConnection() const {
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    return v1::Scheduler::NewStub(
        grpc::CreateCustomChannel(absl::StrCat("127.0.0.1:", port_), grpc::InsecureChannelCredentials(), args));
  }

 private:
  JobRunner runner_;
  SchedulerService service_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<v1::Scheduler::Stub> stub_;
};

// A failure inside the backend reaches the caller as INTERNAL naming the
// request id, never its details; the log line under that id has them.
// A Plan call answered OK after its caller cancelled, or after its deadline
// passed, is logged and counted as the caller saw it, not OK.
TEST(SchedulerServiceTest, AReplyFinishedAfterTheCallerLeftIsNotLoggedOk) {
  AnswersAfterTheCancelBackend backend;
  ::testing::internal::CaptureStderr();
  {
    InProcessServer server(&backend, /*workers=*/2);
    ASSERT_TRUE(server.started());
    v1::PlanRequest request;
    request.set_model_name("left");
    v1::Plan plan;
    grpc::ClientContext cancelled_context;
    std::thread canceller([&] {
      for (int i = 0; i < 1000 && !backend.entered.load(); ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      cancelled_context.TryCancel();
    });
    EXPECT_EQ(server.stub().Plan(&cancelled_context, request, &plan).error_code(), grpc::StatusCode::CANCELLED);
    canceller.join();
    grpc::ClientContext expired_context;
    expired_context.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(300));
    EXPECT_EQ(server.stub().Plan(&expired_context, request, &plan).error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  }  // the server's shutdown waits for both calls to be done
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(log, ::testing::ContainsRegex("event=plan request_id=1 [^\n]* code=CANCELLED "));
  EXPECT_THAT(log, ::testing::ContainsRegex("event=plan request_id=2 [^\n]* code=DEADLINE_EXCEEDED "));
  EXPECT_THAT(log, Not(HasSubstr(" code=OK ")));
}

TEST(SchedulerServiceTest, InternalFailuresNameTheRequestIdOfTheirLogLine) {
  ThrowingBackend backend;
  InProcessServer server(&backend);
  ASSERT_TRUE(server.started());

  ::testing::internal::CaptureStderr();
  grpc::ClientContext plan_context;
  v1::Plan plan;
  const grpc::Status plan_status = server.stub().Plan(&plan_context, v1::PlanRequest(), &plan);

  grpc::ClientContext score_context;
  auto stream = server.stub().Score(&score_context);
  v1::ScoreRequest candidate;
  candidate.set_id("c1");
  ASSERT_TRUE(stream->Write(candidate));
  stream->WritesDone();
  v1::ScoreResult result;
  ASSERT_TRUE(stream->Read(&result));
  const grpc::Status score_status = stream->Finish();
  const std::string log = ::testing::internal::GetCapturedStderr();

  EXPECT_EQ(plan_status.error_code(), grpc::StatusCode::INTERNAL);
  EXPECT_THAT(plan_status.error_message(), HasSubstr("request_id=1"));
  EXPECT_THAT(plan_status.error_message(), Not(HasSubstr("7f3a")));
  EXPECT_THAT(log, HasSubstr("event=internal_error request_id=1 "));

  // One failing candidate fails only itself; the stream ends OK.
  EXPECT_TRUE(score_status.ok()) << score_status.error_message();
  EXPECT_EQ(result.id(), "c1");
  EXPECT_EQ(result.code(), static_cast<int32_t>(grpc::StatusCode::INTERNAL));
  EXPECT_THAT(result.error(), HasSubstr("request_id=2"));
  EXPECT_THAT(result.error(), Not(HasSubstr("7f3a")));
  EXPECT_THAT(log, HasSubstr("event=internal_error request_id=2 candidate=0"));
  EXPECT_THAT(log, HasSubstr("injected failure 7f3a"));
}

// Many short Score streams at once, answered by several job threads: every
// candidate gets exactly one result, and every stream ends OK. Streams whose
// jobs, writes and reads end at nearly the same time are where a reactor
// could be touched after it finished: a job thread used to take the stream's
// lock after delivering its result, when another thread could already have
// finished the stream. Under ASan this test reported that use after free
// every time with a 2 ms sleep placed in that window, and rarely without.
// The six clients share one connection with 3 job slots, so most candidates
// wait for a slot that another stream frees.
TEST(SchedulerServiceTest, ConcurrentScoreStreamsAnswerEveryCandidateOnce) {
  EchoBackend backend;
  ServiceOptions options;
  options.max_jobs_per_connection = 3;
  InProcessServer server(&backend, /*workers=*/4, options);
  ASSERT_TRUE(server.started());
  constexpr int kClients = 6, kStreams = 40, kCandidates = 6;
  std::vector<std::thread> clients;
  std::vector<int> bad_streams(kClients, 0);
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      for (int s = 0; s < kStreams; ++s) {
        grpc::ClientContext context;
        auto stream = server.stub().Score(&context);
        for (int k = 0; k < kCandidates; ++k) {
          v1::ScoreRequest candidate;
          candidate.set_id(absl::StrCat(c, "/", s, "/", k));
          candidate.mutable_request()->set_model_name(std::string(static_cast<size_t>(k + 1), 'm'));
          stream->Write(candidate);
        }
        stream->WritesDone();
        std::vector<int> seen(kCandidates, 0);
        v1::ScoreResult result;
        bool consistent = true;
        while (stream->Read(&result)) {
          if (result.index() < 0 || result.index() >= kCandidates || result.code() != 0 ||
              result.peak_bytes() != result.index() + 1 ||
              result.id() != absl::StrCat(c, "/", s, "/", result.index())) {
            consistent = false;
            continue;
          }
          ++seen[result.index()];
        }
        const bool all_once = std::all_of(seen.begin(), seen.end(), [](int n) { return n == 1; });
        if (!stream->Finish().ok() || !consistent || !all_once) ++bad_streams[c];
      }
    });
  }
  for (std::thread& t : clients) t.join();
  for (int c = 0; c < kClients; ++c) EXPECT_EQ(bad_streams[c], 0) << "client " << c;
  EXPECT_EQ(server.service().slots()->Connections(), 0u);
}

using ScoreStream = grpc::ClientReaderWriter<v1::ScoreRequest, v1::ScoreResult>;

// Sends `count` candidates on `stream` from a thread of its own, each asking
// for the full plan under a 256 KiB model name that the EchoBackend's
// result repeats, so that a few unread results fill the transport's window.
// Half-closes after the last unless `half_close` is false.
std::thread WriteLargeCandidates(ScoreStream* stream, int count, bool half_close = true) {
  return std::thread([stream, count, half_close] {
    const std::string name(256 * 1024, 'm');
    for (int k = 0; k < count; ++k) {
      v1::ScoreRequest candidate;
      candidate.set_id(absl::StrCat(k));
      candidate.mutable_request()->set_model_name(name);
      candidate.set_full_plan(true);
      if (!stream->Write(candidate)) return;
    }
    if (half_close) stream->WritesDone();
  });
}

// Waits until `backend` stops answering (no new answer in 200 ms; at most
// 10 s) and returns how many it answered.
int AwaitAnswersSettle(const CountingBackend& backend) {
  int answered = -1;
  for (int i = 0; i < 50 && backend.answers.load() != answered; ++i) {
    answered = backend.answers.load();
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return answered;
}

// A client that sends candidates but does not read its results stops the
// server reading candidates once the stream holds max_jobs_per_connection
// results it cannot write: the server's memory for one stream is bounded.
// When the client reads again, every candidate is answered once.
TEST(SchedulerServiceTest, AScoreStreamWhoseResultsAreNotReadStopsBeingRead) {
  CountingBackend backend;
  ServiceOptions options;
  options.max_jobs_per_connection = 2;
  InProcessServer server(&backend, /*workers=*/2, options);
  ASSERT_TRUE(server.started());
  constexpr int kCandidates = 400;
  grpc::ClientContext context;
  auto stream = server.stub().Score(&context);
  std::thread writer = WriteLargeCandidates(stream.get(), kCandidates);
  // Unbounded, the server would answer all 400 (the backend answers at
  // once); bounded, only what fits in flight, in the stream's queue and in
  // the transport's buffers.
  const int answered = AwaitAnswersSettle(backend);
  EXPECT_EQ(backend.answers.load(), answered) << "still answering after 10 s";
  EXPECT_LT(answered, 64);
  std::vector<int> seen(kCandidates, 0);
  v1::ScoreResult result;
  while (stream->Read(&result)) {
    ASSERT_GE(result.index(), 0);
    ASSERT_LT(result.index(), kCandidates);
    ++seen[result.index()];
  }
  writer.join();
  EXPECT_TRUE(stream->Finish().ok());
  EXPECT_TRUE(std::all_of(seen.begin(), seen.end(), [](int n) { return n == 1; }));
  EXPECT_EQ(backend.answers.load(), kCandidates);
}

// Results waiting to be written hold no job slot: a stream whose client
// does not read its results stalls itself only, and another stream on the
// same connection is still answered.
TEST(SchedulerServiceTest, UnreadResultsOfOneStreamDoNotStallTheOthersOnItsConnection) {
  CountingBackend backend;
  ServiceOptions options;
  options.max_jobs_per_connection = 2;
  InProcessServer server(&backend, /*workers=*/2, options);
  ASSERT_TRUE(server.started());
  grpc::ClientContext unread_context;
  auto unread = server.stub().Score(&unread_context);
  std::thread writer = WriteLargeCandidates(unread.get(), 100, /*half_close=*/false);
  EXPECT_LT(AwaitAnswersSettle(backend), 100);

  grpc::ClientContext other_context;
  other_context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  auto other = server.stub().Score(&other_context);
  v1::ScoreRequest small;
  small.set_id("small");
  small.mutable_request()->set_model_name("small");
  EXPECT_TRUE(other->Write(small));
  other->WritesDone();
  v1::ScoreResult result;
  std::vector<std::string> answered_ids;
  while (other->Read(&result)) answered_ids.push_back(result.id());
  const grpc::Status other_status = other->Finish();
  EXPECT_TRUE(other_status.ok()) << "the other stream got no answer: " << other_status.error_message();
  EXPECT_EQ(answered_ids, std::vector<std::string>{"small"});

  unread_context.TryCancel();
  writer.join();
  while (unread->Read(&result)) {
  }
  EXPECT_EQ(unread->Finish().error_code(), grpc::StatusCode::CANCELLED);
}

// A client that cancels a stream whose results it never read is logged as
// CANCELLED, not OK (the write that fails can come before OnCancel).
TEST(SchedulerServiceTest, AStreamCancelledWithUnreadResultsIsLoggedCancelled) {
  CountingBackend backend;
  ::testing::internal::CaptureStderr();
  {
    InProcessServer server(&backend, /*workers=*/2);
    ASSERT_TRUE(server.started());
    grpc::ClientContext context;
    auto stream = server.stub().Score(&context);
    std::thread writer = WriteLargeCandidates(stream.get(), 100, /*half_close=*/false);
    for (int i = 0; i < 1000 && backend.answers.load() == 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ASSERT_GT(backend.answers.load(), 0);
    context.TryCancel();
    writer.join();
    EXPECT_EQ(stream->Finish().error_code(), grpc::StatusCode::CANCELLED);
  }  // the server's shutdown waits for the stream to finish
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(log, HasSubstr("event=score request_id=1 "));
  EXPECT_THAT(log, HasSubstr(" code=CANCELLED "));
  EXPECT_THAT(log, Not(HasSubstr(" code=OK ")));
}

// Sends `count` candidates named "gate<k>" on `stream` from a thread of its
// own, then half-closes.
std::thread WriteGatedCandidates(ScoreStream* stream, int count) {
  return std::thread([stream, count] {
    for (int k = 0; k < count; ++k) {
      v1::ScoreRequest candidate;
      candidate.set_id(absl::StrCat(k));
      candidate.mutable_request()->set_model_name(absl::StrCat("gate", k));
      if (!stream->Write(candidate)) return;
    }
    stream->WritesDone();
  });
}

// Score streams sharing one connection share its Score slots: with a limit
// of 2, four streams of three candidates each never run more than two at
// once, a Plan call on that connection is still answered while they hold
// both (Plan calls have slots of their own: a NAS client's stream must not
// starve its own Plan calls), another connection is not affected, and once
// the jobs can finish every candidate of every stream is answered once (the
// waiting streams take their turns).
TEST(SchedulerServiceTest, StreamsOnOneConnectionShareItsScoreSlotsButNotItsPlanSlots) {
  GateBackend backend;
  ServiceOptions options;
  options.max_jobs_per_connection = 2;
  InProcessServer server(&backend, /*workers=*/4, options);
  ASSERT_TRUE(server.started());
  constexpr int kStreams = 4, kCandidates = 3;
  std::vector<std::unique_ptr<grpc::ClientContext>> contexts;
  std::vector<std::unique_ptr<ScoreStream>> streams;
  std::vector<std::thread> writers;
  for (int s = 0; s < kStreams; ++s) {
    contexts.push_back(std::make_unique<grpc::ClientContext>());
    streams.push_back(server.stub().Score(contexts.back().get()));
    writers.push_back(WriteGatedCandidates(streams.back().get(), kCandidates));
  }
  ASSERT_TRUE(backend.AwaitHeld(2));

  grpc::ClientContext same_context;
  v1::PlanRequest request;
  request.set_model_name("plan");
  v1::Plan plan;
  const grpc::Status same_connection = server.stub().Plan(&same_context, request, &plan);
  EXPECT_TRUE(same_connection.ok()) << same_connection.error_message();
  EXPECT_EQ(backend.held(), 2);

  std::unique_ptr<v1::Scheduler::Stub> other = server.NewConnection();
  grpc::ClientContext other_context;
  const grpc::Status answered = other->Plan(&other_context, request, &plan);
  EXPECT_TRUE(answered.ok()) << answered.error_message();
  EXPECT_EQ(backend.held(), 2);

  backend.Open();
  for (int s = 0; s < kStreams; ++s) {
    std::vector<int> seen(kCandidates, 0);
    v1::ScoreResult result;
    while (streams[s]->Read(&result)) {
      ASSERT_EQ(result.code(), 0) << result.error();
      ASSERT_GE(result.index(), 0);
      ASSERT_LT(result.index(), kCandidates);
      ++seen[result.index()];
    }
    writers[s].join();
    EXPECT_TRUE(streams[s]->Finish().ok());
    EXPECT_EQ(seen, std::vector<int>(kCandidates, 1)) << "stream " << s;
  }
  EXPECT_EQ(backend.most_held(), 2);
  EXPECT_EQ(server.service().slots()->Connections(), 0u);
}

// A stream cancelled while it waits for a slot ends CANCELLED without its
// parked candidate ever running, and gives back nothing it did not hold: the
// stream that held the slots still finishes, and nothing is left held.
TEST(SchedulerServiceTest, AStreamCancelledWhileWaitingForASlotNeverRunsItsCandidate) {
  GateBackend backend;
  int results = 0;
  {
    ServiceOptions options;
    options.max_jobs_per_connection = 2;
    InProcessServer server(&backend, /*workers=*/4, options);
    ASSERT_TRUE(server.started());
    grpc::ClientContext holder_context;
    auto holder = server.stub().Score(&holder_context);
    std::thread holder_writer = WriteGatedCandidates(holder.get(), 2);
    ASSERT_TRUE(backend.AwaitHeld(2));

    grpc::ClientContext waiting_context;
    auto waiting = server.stub().Score(&waiting_context);
    std::thread waiting_writer = WriteGatedCandidates(waiting.get(), 1);
    waiting_writer.join();
    for (int i = 0; i < 1000 && server.service().slots()->Waiting() == 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ASSERT_EQ(server.service().slots()->Waiting(), 1u);
    ::testing::internal::CaptureStderr();
    waiting_context.TryCancel();
    v1::ScoreResult result;
    EXPECT_FALSE(waiting->Read(&result));
    EXPECT_EQ(waiting->Finish().error_code(), grpc::StatusCode::CANCELLED);
    for (int i = 0; i < 1000 && server.service().slots()->Waiting() != 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    EXPECT_EQ(server.service().slots()->Waiting(), 0u);

    backend.Open();
    while (holder->Read(&result)) ++results;
    holder_writer.join();
    EXPECT_TRUE(holder->Finish().ok());
    EXPECT_EQ(server.service().slots()->Connections(), 0u);
  }  // the server's shutdown waits for both streams to be logged
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(results, 2);
  EXPECT_EQ(backend.answers(), 2);
  EXPECT_THAT(log, HasSubstr("event=score request_id=2 "));
  EXPECT_THAT(log, HasSubstr(" code=CANCELLED candidates=0 "));
}

// A candidate above the server's message limit ends the whole stream: gRPC
// refuses it (RESOURCE_EXHAUSTED for the client) and the stream sees only a
// failed read, as if the client had half-closed. The log and the metrics
// must not call that stream OK.
TEST(SchedulerServiceTest, AStreamWhoseCandidateExceedsTheMessageLimitIsNotLoggedOk) {
  CountingBackend backend;
  ::testing::internal::CaptureStderr();
  {
    InProcessServer server(&backend, /*workers=*/2, {}, /*max_receive_bytes=*/1 << 20);
    ASSERT_TRUE(server.started());
    grpc::ClientContext context;
    auto stream = server.stub().Score(&context);
    v1::ScoreRequest small;
    small.set_id("small");
    small.mutable_request()->set_model_name("m");
    ASSERT_TRUE(stream->Write(small));
    v1::ScoreResult result;
    ASSERT_TRUE(stream->Read(&result));  // the first one is answered
    v1::ScoreRequest large = small;
    large.mutable_request()->set_model_name(std::string(2 << 20, 'm'));
    stream->Write(large);
    stream->WritesDone();
    while (stream->Read(&result)) {
    }
    const grpc::Status status = stream->Finish();
    EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  }  // the server's shutdown waits for the stream to be done
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(log, HasSubstr("event=score request_id=1 "));
  EXPECT_THAT(log, HasSubstr(" code=CANCELLED candidates=1 "));
  EXPECT_THAT(log, HasSubstr("--max-message-mb"));
  EXPECT_THAT(log, Not(HasSubstr(" code=OK ")));
  EXPECT_EQ(backend.answers.load(), 1);
}

}  // namespace
}  // namespace serenity

namespace serenity {
namespace {

// A Graph of `ops` chained ops.
v1::PlanRequest ChainRequest(int ops, const std::string& name) {
  v1::PlanRequest request;
  request.set_model_name(name);
  *request.mutable_graph() = GraphSpecToProto(testing::ReluChain(ops));
  return request;
}

// A request above the server's op limit is refused from its size on the
// wire: the backend (which would parse, build and plan it) never sees it,
// in a Plan call or as a Score candidate; the stream's other candidates go
// on. Bytes that are no request are refused the same way.
TEST(SchedulerServiceTest, RequestsAboveTheOpLimitAreRefusedBeforeTheBackendSeesThem) {
  BackendOptions limits;
  limits.max_ops = 5;
  CountingBackend backend(limits);
  InProcessServer server(&backend);
  ASSERT_TRUE(server.started());
  {
    grpc::ClientContext context;
    v1::Plan plan;
    const grpc::Status refused = server.stub().Plan(&context, ChainRequest(6, "big"), &plan);
    EXPECT_EQ(refused.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_THAT(refused.error_message(), HasSubstr("the graph has 6 ops; this server accepts at most 5 (--max-ops)"));
  }
  EXPECT_EQ(backend.answers.load(), 0);
  {
    grpc::ClientContext context;
    v1::Plan plan;
    EXPECT_TRUE(server.stub().Plan(&context, ChainRequest(5, "small"), &plan).ok());
    EXPECT_EQ(plan.model(), "small");
  }
  EXPECT_EQ(backend.answers.load(), 1);
  {
    // Not a PlanRequest at all: a field 2 (onnx_model) whose length runs
    // past the end.
    grpc::GenericStub generic(
        grpc::CreateChannel(absl::StrCat("127.0.0.1:", server.port()), grpc::InsecureChannelCredentials()));
    const std::string garbage("\x12\x7f\x01\x02", 4);
    grpc::Slice slice(garbage);
    grpc::ByteBuffer payload(&slice, 1), reply;
    grpc::ClientContext context;
    std::mutex mu;
    std::condition_variable done;
    bool finished = false;
    grpc::Status status;
    generic.UnaryCall(&context, "/serenity.v1.Scheduler/Plan", grpc::StubOptions(), &payload, &reply,
                      [&](grpc::Status s) {
                        std::lock_guard<std::mutex> lock(mu);
                        status = s;
                        finished = true;
                        done.notify_all();
                      });
    std::unique_lock<std::mutex> lock(mu);
    done.wait(lock, [&] { return finished; });
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_THAT(status.error_message(), HasSubstr("not a valid serenity.v1.PlanRequest"));
  }
  // A stream: small, big, small. The big one fails alone.
  grpc::ClientContext context;
  auto stream = server.stub().Score(&context);
  for (int ops : {2, 9, 3}) {
    v1::ScoreRequest candidate;
    candidate.set_id(absl::StrCat("c", ops));
    *candidate.mutable_request() = ChainRequest(ops, absl::StrCat("m", ops));
    ASSERT_TRUE(stream->Write(candidate));
  }
  stream->WritesDone();
  std::map<int, v1::ScoreResult> results;
  v1::ScoreResult result;
  while (stream->Read(&result)) results[result.index()] = result;
  EXPECT_TRUE(stream->Finish().ok());
  ASSERT_EQ(results.size(), 3u);
  EXPECT_EQ(results[0].code(), 0);
  EXPECT_EQ(results[1].code(), static_cast<int>(grpc::StatusCode::INVALID_ARGUMENT));
  EXPECT_THAT(results[1].error(), HasSubstr("at most 5 (--max-ops)"));
  EXPECT_EQ(results[2].code(), 0);
  EXPECT_EQ(backend.answers.load(), 3);  // the Plan call and two candidates
}

}  // namespace
}  // namespace serenity

namespace serenity {
namespace {

// The pool of received requests: a request whose bytes it cannot hold now
// gets RESOURCE_EXHAUSTED (retry later), one larger than the whole pool
// INVALID_ARGUMENT, both before they are parsed; the bytes of one that fits
// go back when its job ends.
TEST(SchedulerServiceTest, RequestsBeyondTheReceivedPoolAreRefusedAtOnce) {
  CountingBackend backend;
  MemoryAdmission received(2000);
  ServiceOptions options;
  options.received = &received;
  InProcessServer server(&backend, /*workers=*/1, options);
  ASSERT_TRUE(server.started());
  auto plan = [&](const v1::PlanRequest& request) {
    grpc::ClientContext context;
    v1::Plan reply;
    return server.stub().Plan(&context, request, &reply);
  };
  const v1::PlanRequest big = ChainRequest(100, "big"), small = ChainRequest(5, "small");
  ASSERT_GT(big.ByteSizeLong(), 2000u);
  ASSERT_GT(small.ByteSizeLong(), 10u);
  ASSERT_LT(small.ByteSizeLong(), 500u);
  EXPECT_EQ(plan(big).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  {
    absl::StatusOr<MemoryAdmission::Ticket> held = received.TryAdmit(1990);  // others' requests
    ASSERT_TRUE(held.ok());
    const grpc::Status busy = plan(small);
    EXPECT_EQ(busy.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
    EXPECT_THAT(busy.error_message(), HasSubstr("busy"));
  }
  EXPECT_EQ(backend.answers.load(), 0);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(plan(small).ok());
  EXPECT_EQ(backend.answers.load(), 3);
  EXPECT_EQ(received.held(), 0);
}

}  // namespace
}  // namespace serenity

namespace serenity {
namespace {

// One tenant cannot fill the queue for the others: with two jobs per
// tenant, alpha's third call (on a third connection) is refused while its
// two run, and beta's call is answered meanwhile.
TEST(SchedulerServiceTest, ATenantsJobsAreCappedOverAllItsConnections) {
  GateBackend backend;
  ServiceOptions options;
  options.tokens = *TenantTokens::Parse("alpha alpha-token-1\nbeta beta-token-01\n");
  options.max_jobs_per_tenant = 2;
  InProcessServer server(&backend, /*workers=*/4, options);
  ASSERT_TRUE(server.started());
  auto call = [](v1::Scheduler::Stub& stub, const std::string& token, const std::string& model) {
    grpc::ClientContext context;
    context.AddMetadata("authorization", "Bearer " + token);
    v1::PlanRequest request;
    request.set_model_name(model);
    v1::Plan plan;
    return stub.Plan(&context, request, &plan);
  };
  std::vector<std::unique_ptr<v1::Scheduler::Stub>> connections;
  for (int i = 0; i < 4; ++i) connections.push_back(server.NewConnection());
  grpc::Status held[2];
  std::thread first([&] { held[0] = call(*connections[0], "alpha-token-1", "gate0"); });
  std::thread second([&] { held[1] = call(*connections[1], "alpha-token-1", "gate1"); });
  ASSERT_TRUE(backend.AwaitHeld(2));
  const grpc::Status third = call(*connections[2], "alpha-token-1", "plan");
  EXPECT_EQ(third.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(third.error_message(), HasSubstr("--max-jobs-per-tenant"));
  EXPECT_TRUE(call(*connections[3], "beta-token-01", "plan").ok());
  backend.Open();
  first.join();
  second.join();
  EXPECT_TRUE(held[0].ok() && held[1].ok());
  EXPECT_TRUE(call(*connections[2], "alpha-token-1", "plan").ok());  // its slots came back
}

}  // namespace
}  // namespace serenity

namespace serenity {
namespace {

// A Score stream open when the server starts draining runs no new
// candidate: each fails alone with UNAVAILABLE, and the stream still ends
// cleanly when the client half-closes.
TEST(SchedulerServiceTest, AStreamOpenDuringTheDrainRunsNoNewCandidates) {
  CountingBackend backend;
  InProcessServer server(&backend);
  ASSERT_TRUE(server.started());
  grpc::ClientContext context;
  auto stream = server.stub().Score(&context);
  v1::ScoreRequest candidate;
  *candidate.mutable_request() = ChainRequest(3, "before");
  ASSERT_TRUE(stream->Write(candidate));
  v1::ScoreResult result;
  ASSERT_TRUE(stream->Read(&result));
  EXPECT_EQ(result.code(), 0);
  server.service().StartDraining();
  candidate.set_id("late");
  ASSERT_TRUE(stream->Write(candidate));
  ASSERT_TRUE(stream->Read(&result));
  EXPECT_EQ(result.id(), "late");
  EXPECT_EQ(result.code(), static_cast<int>(grpc::StatusCode::UNAVAILABLE));
  stream->WritesDone();
  EXPECT_FALSE(stream->Read(&result));
  EXPECT_TRUE(stream->Finish().ok());
  EXPECT_EQ(backend.answers.load(), 1);
}

}  // namespace
}  // namespace serenity

namespace serenity {
namespace {

// GetPlan is a job: it waits for a job's memory like a Plan call, so while
// running jobs hold the server's memory it is refused (RESOURCE_EXHAUSTED,
// before its deadline) instead of planning beside them.
TEST(SchedulerServiceTest, GetPlanWaitsForAJobsMemory) {
  CountingBackend backend;
  MemoryAdmission admission(1000, /*max_job_bytes=*/1000);
  ServiceOptions options;
  options.admission = &admission;
  InProcessServer server(&backend, /*workers=*/1, options);
  ASSERT_TRUE(server.started());
  auto get_plan = [&] {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(500));
    v1::GetPlanRequest request;
    request.set_plan_id(std::string(32, 'a'));
    v1::Plan plan;
    return server.stub().GetPlan(&context, request, &plan);
  };
  {
    absl::StatusOr<MemoryAdmission::Ticket> held = admission.Admit(1000, absl::InfiniteFuture());
    ASSERT_TRUE(held.ok());
    const grpc::Status busy = get_plan();
    EXPECT_EQ(busy.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << busy.error_message();
  }
  EXPECT_EQ(get_plan().error_code(), grpc::StatusCode::NOT_FOUND);  // no cache behind this backend
  EXPECT_EQ(admission.held(), 0);
}

}  // namespace
}  // namespace serenity

namespace serenity {
namespace {

// One tenant's held requests fill at most half the pool of received
// requests: its next request is refused (RESOURCE_EXHAUSTED) while another
// tenant's is admitted.
TEST(SchedulerServiceTest, ATenantFillsAtMostHalfTheReceivedPool) {
  GateBackend backend;
  MemoryAdmission received(4000);
  ServiceOptions options;
  options.tokens = *TenantTokens::Parse("alpha alpha-token-1\nbeta beta-token-01\n");
  options.received = &received;
  InProcessServer server(&backend, /*workers=*/4, options);
  ASSERT_TRUE(server.started());
  auto request = [](const std::string& model) {
    v1::PlanRequest r = ChainRequest(25, model);
    return r;
  };
  const int64_t size = static_cast<int64_t>(request("gate0").ByteSizeLong());
  ASSERT_GT(size, 700);
  ASSERT_LT(size, 1000);
  auto call = [&](const std::string& token, const std::string& model) {
    auto stub = server.NewConnection();
    grpc::ClientContext context;
    context.AddMetadata("authorization", "Bearer " + token);
    v1::Plan plan;
    return stub->Plan(&context, request(model), &plan);
  };
  grpc::Status held[2];
  std::thread first([&] { held[0] = call("alpha-token-1", "gate0"); });
  std::thread second([&] { held[1] = call("alpha-token-1", "gate1"); });
  ASSERT_TRUE(backend.AwaitHeld(2));
  const grpc::Status third = call("alpha-token-1", "plan");
  EXPECT_EQ(third.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(third.error_message(), HasSubstr("this tenant's requests"));
  EXPECT_TRUE(call("beta-token-01", "plan").ok());
  backend.Open();
  first.join();
  second.join();
  EXPECT_TRUE(held[0].ok() && held[1].ok());
  EXPECT_EQ(received.held(), 0);
}

}  // namespace
}  // namespace serenity
