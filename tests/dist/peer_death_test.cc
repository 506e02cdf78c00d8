// A peer that dies or never comes, on both data paths (dist/communicator.h).
//
// ACollectiveWithADeadPeerEndsWithinTheTimeout runs under the launcher,
// `build/kps launch --nproc N -- build/tests/peer_death_test` (N >= 2; skipped in a world of
// 1, and without a GPU or NCCL): every rank joins the world and completes one all_reduce;
// then the last rank exits, and the others' next all_reduce must end in an error within the
// communicator's timeout (Synchronize aborts it), never a hang, on the default blocking data
// path (the all_reduce needs no new connection, so its enqueue returns and Synchronize times
// out) and with KPS_NCCL_BLOCKING=0 on the launcher's command line on the nonblocking one.
// ctest runs both where 2 GPUs are visible (peer_death_test_2ranks_blocking{0,1}).
//
// AnEnqueueWaitingForAnAbsentPeerEndsWithinTheTimeout starts its own two ranks (this binary
// again), so it runs alone, not under the launcher, on 2 GPUs: rank 0 sends to rank 1, which
// is alive but never receives; NCCL connects the pair on the host first, which needs rank 1.
// Nonblocking: the send ends in DeadlineExceeded within the timeout. Blocking: the enqueue
// blocks inside NCCL, and the watchdog ends rank 0's process within the timeout (exit code
// 124, its message on stderr).
//
// A binary of its own: after these the world is gone.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "dist/call_watchdog.h"
#include "dist/communicator.h"
#include "dist/rendezvous.h"
#include "gtest/gtest.h"
#include "registry/call.h"
#include "registry/tensor.h"
#include "testing/support.h"
#include "tests/dist/dist_test_util.h"

extern char** environ;

namespace kps {
namespace {

TEST(PeerDeathTest, ACollectiveWithADeadPeerEndsWithinTheTimeout) {
  KPS_SKIP_WITHOUT_GPU();
  if (!dist::NcclLibrary().ok()) {
    if (testing::GpuRequired()) FAIL() << dist::NcclLibrary().status();
    GTEST_SKIP() << dist::NcclLibrary().status();
  }
  auto me = dist::ProcessInfoFromEnv();
  ASSERT_TRUE(me.ok()) << me.status();
  if (me->world_size < 2) {
    GTEST_SKIP() << "needs two ranks or more: build/kps launch --nproc 2 -- build/tests/peer_death_test";
  }
  const absl::Duration timeout = absl::Seconds(10);
  auto world = dist::InitWorld(timeout);
  ASSERT_TRUE(world.ok()) << world.status();
  const Stream stream = Stream::Cuda();
  std::vector<float> host(1 << 20, 1.0f);
  auto x = Tensor::FromVector<float>(host, Shape{static_cast<int64_t>(host.size())});
  ASSERT_TRUE(x.ok()) << x.status();
  auto dx = x->To(DeviceType::kCuda, stream);
  ASSERT_TRUE(dx.ok()) << dx.status();
  // Every rank is alive: the first all_reduce completes.
  ASSERT_TRUE(Call("all_reduce").Input("x", *dx).Output("out", *dx).Attr("op", "sum").OnStream(stream).Run().ok());
  ASSERT_TRUE((*world)->Synchronize(stream).ok());
  if (me->rank == me->world_size - 1) {
    std::fflush(nullptr);
    _exit(0);  // dies without a word to the others
  }
  const absl::Time start = absl::Now();
  absl::Status s =
      Call("all_reduce").Input("x", *dx).Output("out", *dx).Attr("op", "sum").OnStream(stream).Run().status();
  if (s.ok()) s = (*world)->Synchronize(stream);
  const absl::Duration took = absl::Now() - start;
  EXPECT_FALSE(s.ok()) << "an all_reduce with a dead peer succeeded";
  EXPECT_LT(took, timeout + absl::Seconds(20)) << s;
  EXPECT_TRUE((*world)->aborted()) << s;
  std::printf("rank %d (%s data path): %s after %s\n", me->rank,
              std::string(dist::DataPathName((*world)->data_path())).c_str(), s.ToString().c_str(),
              absl::FormatDuration(took).c_str());
}

// ---- a peer that never joins, with the ranks started here ------------------------------

constexpr char kAbsentPeerTest[] = "PeerDeathTest.AnEnqueueWaitingForAnAbsentPeerEndsWithinTheTimeout";
constexpr absl::Duration kAbsentPeerTimeout = absl::Seconds(5);

// One rank of the test, in a process of its own (KPS_PEER_DEATH_CHILD is set).
void RunAbsentPeerRank() {
  auto world = dist::InitWorld(kAbsentPeerTimeout);
  ASSERT_TRUE(world.ok()) << world.status();
  if ((*world)->rank() == 1) {
    absl::SleepFor(kAbsentPeerTimeout * 12);  // alive, but never joins rank 0's send; the parent ends it
    return;
  }
  const Stream stream = Stream::Cuda();
  auto x = Tensor::FromVector<float>(std::vector<float>(256, 1.0f), Shape{256});
  ASSERT_TRUE(x.ok()) << x.status();
  auto dx = x->To(DeviceType::kCuda, stream);
  ASSERT_TRUE(dx.ok()) << dx.status();
  ASSERT_TRUE(stream.Synchronize().ok());
  std::printf("send_start_unix_ms=%lld\n", static_cast<long long>(absl::ToUnixMillis(absl::Now())));
  std::fflush(stdout);
  const absl::Time start = absl::Now();
  absl::Status s = Call("send").Input("x", *dx).Attr("peer", 1).OnStream(stream).Run().status();
  if (s.ok()) s = (*world)->Synchronize(stream);
  // Only the nonblocking path gets here: on the blocking one the watchdog ended the process.
  std::printf("rank 0 (%s data path): %s after %s\n", std::string(dist::DataPathName((*world)->data_path())).c_str(),
              s.ToString().c_str(), absl::FormatDuration(absl::Now() - start).c_str());
  EXPECT_EQ((*world)->data_path(), dist::DataPath::kNonblocking) << "a blocking send to an absent peer returned";
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded) << s;
  EXPECT_TRUE((*world)->aborted()) << s;
}

struct RankEnd {
  bool ended = false;  // within the wait
  int exit_code = -1;  // -1 for a signal
  absl::Time at;
  std::string log;
};

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Starts this binary, filtered to the absent-peer test, as ranks 0 and 1 of a world of two
// with KPS_NCCL_BLOCKING=`blocking`; waits (at most `limit`) for rank 0, then ends rank 1.
RankEnd RunTwoRanks(const std::string& blocking, const std::string& dir, absl::Duration limit) {
  RankEnd end;
  char exe[4096];
  const ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (len <= 0) {
    ADD_FAILURE() << "readlink /proc/self/exe failed";
    return end;
  }
  exe[len] = '\0';
  const std::string port = std::to_string(dist_test::FreePort());
  pid_t pids[2] = {-1, -1};
  std::string logs[2];
  for (int r = 0; r < 2; ++r) {
    std::vector<std::string> env;
    for (char** e = environ; *e != nullptr; ++e) {
      const std::string kv(*e);
      bool replaced = false;
      for (const char* name : {"RANK=", "LOCAL_RANK=", "WORLD_SIZE=", "LOCAL_WORLD_SIZE=", "MASTER_ADDR=",
                               "MASTER_PORT=", "KPS_NCCL_BLOCKING=", "KPS_PEER_DEATH_CHILD=", "GTEST_"}) {
        replaced = replaced || absl::StartsWith(kv, name);
      }
      if (!replaced) env.push_back(kv);
    }
    for (const std::string& kv :
         {absl::StrCat("RANK=", r), absl::StrCat("LOCAL_RANK=", r), std::string("WORLD_SIZE=2"),
          std::string("LOCAL_WORLD_SIZE=2"), std::string("MASTER_ADDR=127.0.0.1"), "MASTER_PORT=" + port,
          "KPS_NCCL_BLOCKING=" + blocking, std::string("KPS_PEER_DEATH_CHILD=1")}) {
      env.push_back(kv);
    }
    if (std::getenv("NCCL_NVLS_ENABLE") == nullptr) env.push_back("NCCL_NVLS_ENABLE=0");
    std::vector<char*> envp;
    for (std::string& kv : env) envp.push_back(kv.data());
    envp.push_back(nullptr);
    const std::string filter = absl::StrCat("--gtest_filter=", kAbsentPeerTest);
    std::vector<char*> argv = {exe, const_cast<char*>(filter.c_str()), nullptr};
    logs[r] = absl::StrCat(dir, "/rank", r, "_blocking", blocking, ".log");
    posix_spawn_file_actions_t files;
    posix_spawn_file_actions_init(&files);
    posix_spawn_file_actions_addopen(&files, 1, logs[r].c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&files, 1, 2);
    const int rc = posix_spawn(&pids[r], exe, &files, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&files);
    if (rc != 0) {
      ADD_FAILURE() << "posix_spawn of rank " << r << ": " << rc;
      pids[r] = -1;
    }
  }
  const absl::Time deadline = absl::Now() + limit;
  while (pids[0] > 0 && absl::Now() < deadline) {
    int status = 0;
    const pid_t done = waitpid(pids[0], &status, WNOHANG);
    if (done == pids[0]) {
      end.ended = true;
      end.at = absl::Now();
      end.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      pids[0] = -1;
      break;
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
  for (pid_t pid : pids) {
    if (pid <= 0) continue;
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
  }
  end.log = ReadFile(logs[0]);
  return end;
}

TEST(PeerDeathTest, AnEnqueueWaitingForAnAbsentPeerEndsWithinTheTimeout) {
  if (std::getenv("KPS_PEER_DEATH_CHILD") != nullptr) {
    RunAbsentPeerRank();
    return;
  }
  KPS_SKIP_WITHOUT_GPUS(2);
  if (!dist::NcclLibrary().ok()) {
    if (testing::GpuRequired()) FAIL() << dist::NcclLibrary().status();
    GTEST_SKIP() << dist::NcclLibrary().status();
  }
  const char* world_size = std::getenv("WORLD_SIZE");
  if (world_size != nullptr && std::string(world_size) != "1") {
    GTEST_SKIP() << "starts its own two ranks: run build/tests/peer_death_test alone, not under a launcher";
  }
  dist_test::TempDir dir("peer_death");
  ASSERT_FALSE(dir.path().empty());
  for (const std::string blocking : {"0", "1"}) {
    SCOPED_TRACE("KPS_NCCL_BLOCKING=" + blocking);
    const RankEnd end = RunTwoRanks(blocking, dir.path(), kAbsentPeerTimeout + absl::Seconds(120));
    ASSERT_TRUE(end.ended) << "rank 0 still ran " << absl::FormatDuration(kAbsentPeerTimeout + absl::Seconds(120))
                           << " after it started; its log:\n" << end.log;
    // From the send's start to the end of rank 0: the timeout, plus the watchdog's wake-ups
    // or the abort, plus the process's end.
    const size_t at = end.log.find("send_start_unix_ms=");
    ASSERT_NE(at, std::string::npos) << "rank 0 did not reach its send; its log:\n" << end.log;
    int64_t start_ms = 0;
    ASSERT_TRUE(absl::SimpleAtoi(end.log.substr(at + 19, end.log.find('\n', at) - at - 19), &start_ms)) << end.log;
    const absl::Duration took = end.at - absl::FromUnixMillis(start_ms);
    std::printf("KPS_NCCL_BLOCKING=%s: rank 0 ended with exit code %d, %s after its send started\n",
                blocking.c_str(), end.exit_code, absl::FormatDuration(took).c_str());
    EXPECT_GE(took, kAbsentPeerTimeout - absl::Milliseconds(100)) << end.log;
    EXPECT_LT(took, kAbsentPeerTimeout + absl::Seconds(30)) << end.log;
    if (blocking == "0") {
      EXPECT_EQ(end.exit_code, 0) << end.log;
      EXPECT_TRUE(absl::StrContains(end.log, "DEADLINE_EXCEEDED")) << end.log;
      EXPECT_TRUE(absl::StrContains(end.log, "[  PASSED  ] 1 test")) << end.log;
    } else {
      EXPECT_EQ(end.exit_code, dist::kStuckCallExitCode) << end.log;
      EXPECT_TRUE(absl::StrContains(end.log, "ncclSend has not returned within 5s")) << end.log;
      EXPECT_TRUE(absl::StrContains(end.log, "rank 0 of 2")) << end.log;
    }
  }
}

}  // namespace
}  // namespace kps
