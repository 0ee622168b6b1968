#include "server/scheduler_service.h"

#include <algorithm>
#include <chrono>
#include <exception>
#include <iostream>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/plan_proto.h"

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
    case absl::StatusCode::kUnimplemented:
      return grpc::Status(grpc::StatusCode::UNIMPLEMENTED, message);
    case absl::StatusCode::kDeadlineExceeded:
      return grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, message);
    case absl::StatusCode::kCancelled:
      return grpc::Status(grpc::StatusCode::CANCELLED, message);
    case absl::StatusCode::kResourceExhausted:
      return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, message);
    default:
      return grpc::Status(grpc::StatusCode::INTERNAL, message);
  }
}

grpc::Status SchedulerService::Plan(grpc::ServerContext* context, const v1::PlanRequest* request,
                                    v1::Plan* response) {
  try {
    // The search must end before the caller's deadline: keep a fifth of the
    // remaining time for import, arena planning and the reply.
    v1::PlanRequest bounded = *request;
    const auto deadline = context->deadline();
    if (deadline != std::chrono::system_clock::time_point::max()) {
      const double remaining =
          std::chrono::duration<double>(deadline - std::chrono::system_clock::now()).count() * 0.8;
      if (remaining <= 0) return grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "the deadline had passed");
      const double asked = request->options().time_limit_seconds() > 0 ? request->options().time_limit_seconds()
                                                                       : kDefaultTimeLimitSeconds;
      bounded.mutable_options()->set_time_limit_seconds(std::min(asked, remaining));
    }
    absl::StatusOr<v1::Plan> plan = ExecutePlanRequest(bounded, executor_);
    if (!plan.ok()) {
      std::cerr << "plan peer=" << context->peer() << " model='" << request->model_name()
                << "' error=" << plan.status() << "\n";
      return ToGrpcStatus(plan.status());
    }
    *response = std::move(plan).value();
    std::cerr << "plan peer=" << context->peer() << " model='" << response->model()
              << "' nodes=" << response->nodes() << " peak=" << response->peak_bytes()
              << " total_ms=" << response->stats().total_ms() << "\n";
    return grpc::Status::OK;
  } catch (const std::exception& e) {
    // core/ reports errors as Status; this is a last line of defence.
    std::cerr << "plan internal error: " << e.what() << "\n";
    return grpc::Status(grpc::StatusCode::INTERNAL, absl::StrCat("internal error: ", e.what()));
  }
}

}  // namespace serenity
