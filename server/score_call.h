// The Score method of the Scheduler service: one bidirectional stream of
// candidates, each its own job, results written in the order they finish
// (ScoreCall in score_call.cc).
#ifndef SERENITY_SERVER_SCORE_CALL_H_
#define SERENITY_SERVER_SCORE_CALL_H_

#include "grpcpp/grpcpp.h"
#include "server/scheduler_service.h"

namespace serenity {

// Starts a Score stream on `context` for `service`; gRPC owns the reactor
// returned (it deletes itself in OnDone).
grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* StartScoreCall(SchedulerService* service,
                                                                            grpc::CallbackServerContext* context);

}  // namespace serenity

#endif  // SERENITY_SERVER_SCORE_CALL_H_
