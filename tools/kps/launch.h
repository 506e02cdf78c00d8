// `kps launch`: several processes of one command on this machine, each told its rank the
// way torchrun does (see launch.cc). Not part of kps::kps: only the command line uses it.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace kps {
namespace cli {

// Runs `kps launch ...` (args[0] is "launch") and returns the exit code: 0 when every
// process exited 0; else the first failure's code (128 + signal), kExitUsage for a bad
// command line.
int RunLaunch(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace cli
}  // namespace kps
