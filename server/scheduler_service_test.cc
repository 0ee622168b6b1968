#include "server/scheduler_service.h"

#include <memory>
#include <stdexcept>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/job_runner.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "serenity/v1/scheduler.grpc.pb.h"

namespace serenity {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// A backend whose every answer fails the way only a bug could: by throwing.
class ThrowingBackend : public SchedulingBackend {
 public:
  ThrowingBackend() : SchedulingBackend(nullptr, nullptr, nullptr, {}) {}
  absl::StatusOr<v1::Plan> Answer(const v1::PlanRequest&, bool, double, const std::atomic<bool>*) override {
    throw std::runtime_error("injected failure 7f3a");
  }
};

// The service in this process on a loopback port, with `backend`.
class InProcessServer {
 public:
  explicit InProcessServer(SchedulingBackend* backend) : runner_(1, 8), service_(&runner_, backend, nullptr, {}) {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    stub_ = v1::Scheduler::NewStub(
        grpc::CreateChannel(absl::StrCat("127.0.0.1:", port_), grpc::InsecureChannelCredentials()));
  }
  ~InProcessServer() { server_->Shutdown(); }

  bool started() const { return server_ != nullptr && port_ > 0; }
  v1::Scheduler::Stub& stub() { return *stub_; }

 private:
  JobRunner runner_;
  SchedulerService service_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<v1::Scheduler::Stub> stub_;
};

// A failure inside the backend reaches the caller as INTERNAL naming the
// request id, never its details; the log line under that id has them.
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

}  // namespace
}  // namespace serenity
