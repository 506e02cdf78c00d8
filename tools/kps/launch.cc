// `kps launch --nproc N [--port P] [--addr A] [--grace S] -- CMD [ARGS...]`: N copies of
// CMD on this machine, each with the variables torchrun sets (RANK, WORLD_SIZE,
// LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT; dist/rendezvous.h reads them)
// and NCCL_NVLS_ENABLE=0 unless already set (NVLink multicast can take shared GPUs out of
// service). Each rank leads its own process group. When a rank fails (or the launcher
// gets SIGINT or SIGTERM), the other ranks' groups get SIGTERM, then SIGKILL after the
// grace period, so one dead rank never leaves the rest waiting; the exit code is the first
// failure's (128 + signal for a signal), else 0.
#include "tools/kps/launch.h"

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "tools/kps/cli.h"

namespace kps {
namespace cli {
namespace {

// The signal that asked the launcher to stop (SIGINT, SIGTERM), 0 while none has.
volatile sig_atomic_t g_stop_signal = 0;
void OnStopSignal(int sig) { g_stop_signal = sig; }

// A TCP port that is free now (the kernel's pick for port 0); 0 when none is found.
int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof(a);
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  close(fd);
  return port;
}

int Usage(std::ostream& err, const std::string& what) {
  err << "kps launch: " << what
      << "\nusage: kps launch --nproc N [--port P] [--addr A] [--grace SECONDS] -- CMD [ARGS...]\n";
  return kExitUsage;
}

// The exit code a wait status stands for.
int CodeOf(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return kExitError;
}

}  // namespace

int RunLaunch(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  int nproc = 0, port = 0;
  double grace = 5;
  std::string addr = "127.0.0.1";
  size_t i = 1;  // args[0] is "launch"
  for (; i < args.size() && args[i] != "--"; ++i) {
    const std::string& flag = args[i];
    if (i + 1 >= args.size() || args[i + 1] == "--") return Usage(err, "flag " + flag + " needs a value");
    const std::string& value = args[++i];
    if (flag == "--nproc") {
      if (!absl::SimpleAtoi(value, &nproc) || nproc < 1 || nproc > 1024) {
        return Usage(err, "--nproc " + value + ": expected a process count in [1, 1024]");
      }
    } else if (flag == "--port") {
      if (!absl::SimpleAtoi(value, &port) || port < 1 || port > 65535) {
        return Usage(err, "--port " + value + ": expected a TCP port in [1, 65535]");
      }
    } else if (flag == "--addr") {
      addr = value;
    } else if (flag == "--grace") {
      if (!absl::SimpleAtod(value, &grace) || !(grace >= 0 && grace <= 3600)) {
        return Usage(err, "--grace " + value + ": expected seconds in [0, 3600]");
      }
    } else {
      return Usage(err, "unknown flag '" + flag + "'");
    }
  }
  if (nproc == 0) return Usage(err, "--nproc is required");
  if (i >= args.size() || i + 1 >= args.size()) return Usage(err, "no command: put it after '--'");
  const std::vector<std::string> command(args.begin() + static_cast<std::ptrdiff_t>(i) + 1, args.end());
  if (port == 0) port = FreePort();
  if (port == 0) {
    err << "kps launch: no free TCP port for the rendezvous; pass --port\n";
    return kExitError;
  }
  out << "kps launch: " << nproc << " processes of '" << command[0] << "', rendezvous at " << addr << ":" << port
      << std::endl;
  std::vector<char*> argv;
  for (const std::string& a : command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<pid_t> pids(static_cast<size_t>(nproc), -1), pids_started(static_cast<size_t>(nproc), -1);
  for (int r = 0; r < nproc; ++r) {
    const pid_t pid = fork();
    if (pid == 0) {
      // Each rank leads a process group, so that stopping it stops what it started too.
      setpgid(0, 0);
      setenv("RANK", std::to_string(r).c_str(), 1);
      setenv("LOCAL_RANK", std::to_string(r).c_str(), 1);
      setenv("WORLD_SIZE", std::to_string(nproc).c_str(), 1);
      setenv("LOCAL_WORLD_SIZE", std::to_string(nproc).c_str(), 1);
      setenv("MASTER_ADDR", addr.c_str(), 1);
      setenv("MASTER_PORT", std::to_string(port).c_str(), 1);
      setenv("NCCL_NVLS_ENABLE", "0", 0);
      execvp(argv[0], argv.data());
      const std::string msg = absl::StrCat("kps launch: rank ", r, ": cannot run '", command[0], "': ",
                                           std::strerror(errno), "\n");
      (void)!write(2, msg.data(), msg.size());
      _exit(127);
    }
    if (pid < 0) {
      err << "kps launch: fork failed for rank " << r << ": " << std::strerror(errno) << "\n";
      for (int k = 0; k < r; ++k) kill(pids[k], SIGKILL);
      for (int k = 0; k < r; ++k) waitpid(pids[k], nullptr, 0);
      return kExitError;
    }
    setpgid(pid, pid);  // also here: whichever of parent and child runs first
    pids[r] = pid;
    pids_started[r] = pid;
  }
  // Ctrl-C or a SIGTERM to the launcher stops every rank the same way a failure does.
  struct sigaction stop{}, old_int{}, old_term{};
  stop.sa_handler = OnStopSignal;
  sigemptyset(&stop.sa_mask);
  stop.sa_flags = 0;  // no SA_RESTART: waitpid returns EINTR
  g_stop_signal = 0;
  sigaction(SIGINT, &stop, &old_int);
  sigaction(SIGTERM, &stop, &old_term);
  int running = nproc, first_failure = 0;
  auto rank_of = [&](pid_t pid) {
    for (int r = 0; r < nproc; ++r) {
      if (pids[r] == pid) return r;
    }
    return -1;
  };
  std::chrono::steady_clock::time_point kill_at{};
  bool stopping = false;
  auto stop_all = [&](int sig) {
    for (int k = 0; k < nproc; ++k) {
      if (pids[k] > 0) kill(-pids[k], sig);
    }
  };
  while (running > 0) {
    if (g_stop_signal != 0 && !stopping) {
      err << "kps launch: signal " << g_stop_signal << "; stopping the " << running << " running ranks\n";
      first_failure = 128 + g_stop_signal;
      stopping = true;
      kill_at = std::chrono::steady_clock::now() + std::chrono::milliseconds(static_cast<int64_t>(grace * 1000));
      stop_all(SIGTERM);
    }
    int status = 0;
    const pid_t pid = waitpid(-1, &status, stopping ? WNOHANG : 0);
    if (pid < 0 && errno == EINTR) continue;
    if (pid < 0) break;  // no children left
    if (pid == 0) {      // stopping: none exited yet
      if (std::chrono::steady_clock::now() >= kill_at) {
        stop_all(SIGKILL);
        kill_at = std::chrono::steady_clock::time_point::max();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      continue;
    }
    const int r = rank_of(pid);
    if (r < 0) continue;
    pids[r] = -1;
    --running;
    const int code = CodeOf(status);
    if (code != 0 && first_failure == 0 && !stopping) {
      first_failure = code;
      err << "kps launch: rank " << r << " exited with code " << code;
      if (running > 0) err << "; stopping the other " << running << " rank" << (running > 1 ? "s" : "");
      err << "\n";
      stopping = true;
      kill_at = std::chrono::steady_clock::now() + std::chrono::milliseconds(static_cast<int64_t>(grace * 1000));
      stop_all(SIGTERM);
    }
  }
  // What a stopped rank left in its process group (a shell's children) goes too.
  if (stopping) {
    for (int k = 0; k < nproc; ++k) kill(-pids_started[k], SIGKILL);
  }
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  return first_failure;
}

}  // namespace cli
}  // namespace kps
