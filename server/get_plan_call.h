// The GetPlan method of the Scheduler service: a stored plan by its plan_id,
// rebuilt by a job (GetPlanCall in get_plan_call.cc).
#ifndef SERENITY_SERVER_GET_PLAN_CALL_H_
#define SERENITY_SERVER_GET_PLAN_CALL_H_

#include "grpcpp/grpcpp.h"
#include "server/scheduler_service.h"

namespace serenity {

// Starts a GetPlan call on `context` for `service`; gRPC owns the reactor
// returned (it deletes itself in OnDone).
grpc::ServerUnaryReactor* StartGetPlanCall(SchedulerService* service, grpc::CallbackServerContext* context,
                                           const v1::GetPlanRequest* request, v1::Plan* response);

}  // namespace serenity

#endif  // SERENITY_SERVER_GET_PLAN_CALL_H_
