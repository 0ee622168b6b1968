// `serenity-client plan MODEL...`: plans models on a server or in-process.
#ifndef SERENITY_CLIENT_PLAN_COMMAND_H_
#define SERENITY_CLIENT_PLAN_COMMAND_H_

#include <string>
#include <vector>

namespace serenity {

// Runs the command with its arguments (after "plan"); returns the exit
// status: 0 when every model was planned, 1 when one failed, 2 on usage
// errors.
int RunPlan(const std::vector<std::string>& args);

}  // namespace serenity

#endif  // SERENITY_CLIENT_PLAN_COMMAND_H_
