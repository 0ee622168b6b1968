// `serenity-client arena CSV...`: arena offsets for bare instances
// (MiniMalloc's CSV), planned in this process; a drop-in for MiniMalloc's
// CLI (--input, --capacity, --output; an offset column pins buffers).
#ifndef SERENITY_CLIENT_ARENA_COMMAND_H_
#define SERENITY_CLIENT_ARENA_COMMAND_H_

#include <string>
#include <vector>

namespace serenity {

// Runs the command with its arguments (after "arena"); returns the exit
// status: 0 when every instance was planned (within --capacity), 1 when one
// failed, 2 on usage errors (also --output with several instances).
int RunArena(const std::vector<std::string>& args);

}  // namespace serenity

#endif  // SERENITY_CLIENT_ARENA_COMMAND_H_
