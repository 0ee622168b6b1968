// The Plan method of the Scheduler service: one job per call (PlanCall in
// plan_call.cc), a repeat of a memoized request answered without one.
#ifndef SERENITY_SERVER_PLAN_CALL_H_
#define SERENITY_SERVER_PLAN_CALL_H_

#include "grpcpp/grpcpp.h"
#include "server/scheduler_service.h"

namespace serenity {

// Starts a Plan call on `context` for `service`; gRPC owns the reactor
// returned (it deletes itself in OnDone).
grpc::ServerUnaryReactor* StartPlanCall(SchedulerService* service, grpc::CallbackServerContext* context,
                                        const grpc::ByteBuffer* request, grpc::ByteBuffer* response);

}  // namespace serenity

#endif  // SERENITY_SERVER_PLAN_CALL_H_
