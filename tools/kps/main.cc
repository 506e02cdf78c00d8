// The `kps` executable: everything is in RunCli (tools/kps/cli.h), so tests run the
// same code in-process.
#include <iostream>
#include <string>
#include <vector>

#include "tools/kps/cli.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  return kps::cli::RunCli(args, std::cout, std::cerr);
}
