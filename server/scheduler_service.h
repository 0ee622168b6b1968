// The gRPC Scheduler service: a thin shell around ExecutePlanRequest.
#ifndef SERENITY_SERVER_SCHEDULER_SERVICE_H_
#define SERENITY_SERVER_SCHEDULER_SERVICE_H_

#include "absl/status/status.h"
#include "core/util/executor.h"
#include "grpcpp/grpcpp.h"
#include "serenity/v1/scheduler.grpc.pb.h"

namespace serenity {

// Maps an absl::Status to the gRPC status a client sees. Problems with the
// request (InvalidArgument, OutOfRange, FailedPrecondition) become
// INVALID_ARGUMENT with the same message.
grpc::Status ToGrpcStatus(const absl::Status& status);

class SchedulerService final : public v1::Scheduler::Service {
 public:
  // Searches run their independent parts on `executor` (may be null).
  explicit SchedulerService(Executor* executor) : executor_(executor) {}

  // Plans one model. Bad input of any kind is INVALID_ARGUMENT with a message
  // naming the problem; the server keeps serving. The search's time limit is
  // cut to 80% of the time left before the call's deadline.
  grpc::Status Plan(grpc::ServerContext* context, const v1::PlanRequest* request,
                    v1::Plan* response) override;

 private:
  Executor* executor_;
};

}  // namespace serenity

#endif  // SERENITY_SERVER_SCHEDULER_SERVICE_H_
