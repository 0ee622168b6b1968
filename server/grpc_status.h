// The status a gRPC caller of the Scheduler service sees for an
// absl::Status, and the code names the log lines and metrics carry.
#ifndef SERENITY_SERVER_GRPC_STATUS_H_
#define SERENITY_SERVER_GRPC_STATUS_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "grpcpp/grpcpp.h"

namespace serenity {

// Maps an absl::Status to the gRPC status a client sees. Problems with the
// request (InvalidArgument, OutOfRange, FailedPrecondition) become
// INVALID_ARGUMENT with the same message.
grpc::Status ToGrpcStatus(const absl::Status& status);

// Upper-case gRPC code name ("OK", "INVALID_ARGUMENT", ...; "UNKNOWN" for a
// value that is no code): absl::StatusCodeToString, as gRPC's codes and
// absl's share their values and names.
std::string GrpcCodeName(grpc::StatusCode code);

// ToGrpcStatus, except that an internal failure names the request id that
// the server log carries, not its details.
grpc::Status ReplyStatus(const absl::Status& status, int64_t request_id);

// ReplyStatus of a unary call's failure, with an internal one's details
// logged under the request id.
grpc::Status LoggedReplyStatus(const absl::Status& status, int64_t request_id);

}  // namespace serenity

#endif  // SERENITY_SERVER_GRPC_STATUS_H_
