#include "server/grpc_status.h"

#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace serenity {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// The names are the grpc_code label of grpc_server_handled_total and the
// "code" field of the log lines: they must stay gRPC's own spellings.
TEST(GrpcCodeNameTest, NamesEveryGrpcCodeAsGrpcSpellsIt) {
  const std::vector<std::pair<grpc::StatusCode, std::string>> expected = {
      {grpc::StatusCode::OK, "OK"},
      {grpc::StatusCode::CANCELLED, "CANCELLED"},
      {grpc::StatusCode::UNKNOWN, "UNKNOWN"},
      {grpc::StatusCode::INVALID_ARGUMENT, "INVALID_ARGUMENT"},
      {grpc::StatusCode::DEADLINE_EXCEEDED, "DEADLINE_EXCEEDED"},
      {grpc::StatusCode::NOT_FOUND, "NOT_FOUND"},
      {grpc::StatusCode::ALREADY_EXISTS, "ALREADY_EXISTS"},
      {grpc::StatusCode::PERMISSION_DENIED, "PERMISSION_DENIED"},
      {grpc::StatusCode::RESOURCE_EXHAUSTED, "RESOURCE_EXHAUSTED"},
      {grpc::StatusCode::FAILED_PRECONDITION, "FAILED_PRECONDITION"},
      {grpc::StatusCode::ABORTED, "ABORTED"},
      {grpc::StatusCode::OUT_OF_RANGE, "OUT_OF_RANGE"},
      {grpc::StatusCode::UNIMPLEMENTED, "UNIMPLEMENTED"},
      {grpc::StatusCode::INTERNAL, "INTERNAL"},
      {grpc::StatusCode::UNAVAILABLE, "UNAVAILABLE"},
      {grpc::StatusCode::DATA_LOSS, "DATA_LOSS"},
      {grpc::StatusCode::UNAUTHENTICATED, "UNAUTHENTICATED"},
  };
  for (const auto& [code, name] : expected) EXPECT_EQ(GrpcCodeName(code), name) << static_cast<int>(code);
}

TEST(GrpcCodeNameTest, AValueThatIsNoCodeIsUnknown) {
  EXPECT_EQ(GrpcCodeName(static_cast<grpc::StatusCode>(17)), "UNKNOWN");
  EXPECT_EQ(GrpcCodeName(static_cast<grpc::StatusCode>(-1)), "UNKNOWN");
}

TEST(ToGrpcStatusTest, RequestProblemsBecomeInvalidArgumentWithTheirMessage) {
  for (const absl::Status& status :
       {absl::InvalidArgumentError("bad"), absl::OutOfRangeError("bad"), absl::FailedPreconditionError("bad")}) {
    const grpc::Status mapped = ToGrpcStatus(status);
    EXPECT_EQ(mapped.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_EQ(mapped.error_message(), "bad");
  }
}

TEST(ToGrpcStatusTest, KeepsTheCodesACallerActsOnAndHidesTheRest) {
  EXPECT_TRUE(ToGrpcStatus(absl::OkStatus()).ok());
  EXPECT_EQ(ToGrpcStatus(absl::ResourceExhaustedError("x")).error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(ToGrpcStatus(absl::UnavailableError("x")).error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(ToGrpcStatus(absl::NotFoundError("x")).error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(ToGrpcStatus(absl::DeadlineExceededError("x")).error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_EQ(ToGrpcStatus(absl::CancelledError("x")).error_code(), grpc::StatusCode::CANCELLED);
  EXPECT_EQ(ToGrpcStatus(absl::UnauthenticatedError("x")).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(ToGrpcStatus(absl::UnimplementedError("x")).error_code(), grpc::StatusCode::UNIMPLEMENTED);
  EXPECT_EQ(ToGrpcStatus(absl::DataLossError("x")).error_code(), grpc::StatusCode::INTERNAL);
  EXPECT_EQ(ToGrpcStatus(absl::AbortedError("x")).error_code(), grpc::StatusCode::INTERNAL);
}

TEST(ReplyStatusTest, AnInternalFailureNamesTheRequestIdNotItsDetails) {
  const grpc::Status reply = ReplyStatus(absl::InternalError("secret detail"), 42);
  EXPECT_EQ(reply.error_code(), grpc::StatusCode::INTERNAL);
  EXPECT_THAT(reply.error_message(), HasSubstr("request_id=42"));
  EXPECT_THAT(reply.error_message(), Not(HasSubstr("secret detail")));
  EXPECT_EQ(ReplyStatus(absl::InvalidArgumentError("bad graph"), 42).error_message(), "bad graph");
}

}  // namespace
}  // namespace serenity
