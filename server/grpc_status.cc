#include "server/grpc_status.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "common/log.h"

namespace serenity {

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

std::string GrpcCodeName(grpc::StatusCode code) {
  // gRPC's codes and absl's share their values and their names.
  std::string name = absl::StatusCodeToString(static_cast<absl::StatusCode>(code));
  return name.empty() ? "UNKNOWN" : name;
}

grpc::Status ReplyStatus(const absl::Status& status, int64_t request_id) {
  grpc::Status reply = ToGrpcStatus(status);
  if (reply.error_code() == grpc::StatusCode::INTERNAL) {
    return grpc::Status(grpc::StatusCode::INTERNAL,
                        absl::StrCat("internal error; the server log has the details under request_id=", request_id));
  }
  return reply;
}

grpc::Status LoggedReplyStatus(const absl::Status& status, int64_t request_id) {
  if (status.code() == absl::StatusCode::kInternal) {
    Log("error", "internal_error", {{"request_id", absl::StrCat(request_id)}, {"detail", status.ToString()}});
  }
  return ReplyStatus(status, request_id);
}

}  // namespace serenity
