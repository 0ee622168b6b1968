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
