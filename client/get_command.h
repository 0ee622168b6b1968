// `serenity-client get PLAN_ID...`: plans the server stored, by plan_id
// (the GetPlan call).
#ifndef SERENITY_CLIENT_GET_COMMAND_H_
#define SERENITY_CLIENT_GET_COMMAND_H_

#include <string>
#include <vector>

namespace serenity {

// Runs the command with its arguments (after "get"); returns the exit
// status: 0 when every plan was returned, 1 when one was not (NOT_FOUND:
// the store dropped it or never held it), 2 on usage errors.
int RunGet(const std::vector<std::string>& args);

}  // namespace serenity

#endif  // SERENITY_CLIENT_GET_COMMAND_H_
