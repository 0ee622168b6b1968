// serenity-client: plans models through a serenity-server or in-process.
#include <iostream>
#include <string>
#include <vector>

#include "client/arena_command.h"
#include "client/get_command.h"
#include "client/plan_command.h"
#include "client/score_command.h"
#include "common/version.h"

namespace serenity {
namespace {

constexpr char kTopHelp[] =
    "Usage: serenity-client COMMAND [args] [flags]\n"
    "\n"
    "Finds the execution order of a network's operators that minimises peak\n"
    "activation memory, with arena offsets for every tensor.\n"
    "\n"
    "Commands:\n"
    "  plan MODEL...   plan one or more models (ONNX, or a serenity.v1.Graph as\n"
    "                  .pb binary or .pbtxt text) on a server or with --local\n"
    "  score MODEL...  score many models in one streaming call to a server: peak,\n"
    "                  feasibility and slack against --budget, one line per model\n"
    "                  as results arrive (for NAS pipelines)\n"
    "  get PLAN_ID     print a plan the server stored, by the plan_id of a plan or\n"
    "                  score reply (GetPlan)\n"
    "  arena CSV...    plan arena offsets for bare instances (MiniMalloc CSV),\n"
    "                  in this process\n"
    "\n"
    "Run 'serenity-client COMMAND --help' for the flags of a command, and\n"
    "'serenity-client --version' for the version.\n";

}  // namespace
}  // namespace serenity

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    std::cout << serenity::kTopHelp;
    return args.empty() ? 2 : 0;
  }
  if (args[0] == "--version" || args[0] == "version") {
    std::cout << serenity::VersionLine("serenity-client") << "\n";
    return 0;
  }
  const std::string command = args[0];
  args.erase(args.begin());
  if (command == "plan") return serenity::RunPlan(args);
  if (command == "arena") return serenity::RunArena(args);
  if (command == "score") return serenity::RunScore(args);
  if (command == "get") return serenity::RunGet(args);
  std::cerr << "serenity-client: unknown command '" << command << "'\n\n" << serenity::kTopHelp;
  return 2;
}
