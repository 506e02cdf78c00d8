// The rendezvous of dist/rendezvous.h with real processes (fork) on this machine, no GPU:
// every rank gets rank 0's bytes; a missing rank, a missing rank 0, a duplicate rank and a
// stranger on the port give errors that say so within the timeout; a port in use is waited for
// until the timeout; ProcessInfoFromEnv reads torchrun's, Open MPI's and Slurm's variables and
// refuses bad ones.
#include "dist/rendezvous.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "testing/support.h"
#include "tests/dist/dist_test_util.h"

namespace kps {
namespace dist {
namespace {

using ::kps::testing::Contains;

using ::kps::dist_test::FreePort;
using ::kps::dist_test::Ipv4Address;

// Runs ShareFromRankZero as each of `ranks` of a world of `world` in a child process;
// a child exits 0 when it got `want`, else 1 after writing its error to `errors[rank]`
// (a pipe). Returns each rank's exit code and error text.
struct Outcome {
  std::vector<int> codes;
  std::vector<std::string> errors;
};

Outcome RunRanks(const std::vector<int>& ranks, int world, int port, const std::string& bytes, double timeout_s) {
  Outcome o;
  std::vector<pid_t> pids;
  std::vector<int> reads;
  for (int rank : ranks) {
    int fds[2];
    EXPECT_EQ(pipe(fds), 0);
    const pid_t pid = fork();
    if (pid == 0) {
      close(fds[0]);
      ProcessInfo me;
      me.rank = rank;
      me.world_size = world;
      me.master_port = port;
      auto got = ShareFromRankZero(me, rank == 0 ? bytes : "", absl::Seconds(timeout_s));
      const std::string text = got.ok() ? (*got == bytes ? "" : "wrong bytes") : std::string(got.status().message());
      (void)!write(fds[1], text.data(), text.size());
      _exit(text.empty() ? 0 : 1);
    }
    close(fds[1]);
    pids.push_back(pid);
    reads.push_back(fds[0]);
  }
  for (size_t i = 0; i < pids.size(); ++i) {
    std::string text;
    char buf[512];
    for (ssize_t n; (n = read(reads[i], buf, sizeof(buf))) > 0;) text.append(buf, static_cast<size_t>(n));
    close(reads[i]);
    int status = 0;
    waitpid(pids[i], &status, 0);
    o.codes.push_back(WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    o.errors.push_back(text);
  }
  return o;
}

TEST(RendezvousTest, EveryRankGetsRankZerosBytes) {
  for (int world : {2, 3, 8}) {
    std::string bytes(128, '\0');  // an NCCL unique id's size, with zero bytes inside
    for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>((i * 37 + world) & 0xff);
    std::vector<int> ranks;
    for (int r = world - 1; r >= 0; --r) ranks.push_back(r);  // rank 0 starts last
    const Outcome o = RunRanks(ranks, world, FreePort(), bytes, 20);
    for (size_t i = 0; i < ranks.size(); ++i) EXPECT_EQ(o.codes[i], 0) << "rank " << ranks[i] << ": " << o.errors[i];
  }
  ProcessInfo alone;
  auto got = ShareFromRankZero(alone, "abc", absl::Seconds(1));
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, "abc");
}

TEST(RendezvousTest, MissingRanksAreErrorsWithinTheTimeout) {
  // World of 3, rank 2 never starts: rank 0 names it; rank 1 hears nothing back.
  const Outcome o = RunRanks({0, 1}, 3, FreePort(), "id", 1.5);
  EXPECT_EQ(o.codes[0], 1);
  EXPECT_TRUE(Contains(o.errors[0], "rank 2 of 3 did not arrive in time")) << o.errors[0];
  EXPECT_EQ(o.codes[1], 1);
  EXPECT_TRUE(Contains(o.errors[1], "rank 1 of 3")) << o.errors[1];
  // No rank 0 at all.
  const Outcome lone = RunRanks({1}, 2, FreePort(), "id", 1);
  EXPECT_EQ(lone.codes[0], 1);
  EXPECT_TRUE(Contains(lone.errors[0], "rank 0 did not answer in time")) << lone.errors[0];
}

TEST(RendezvousTest, DuplicateRanksAndStrangersOnThePort) {
  const Outcome dup = RunRanks({0, 1, 1}, 3, FreePort(), "id", 5);
  EXPECT_EQ(dup.codes[0], 1);
  EXPECT_TRUE(Contains(dup.errors[0], "two processes say they are rank 1")) << dup.errors[0];
  // A stranger connects and sends junk: rank 0 drops it and still serves the real rank.
  const int port = FreePort();
  const pid_t stranger = fork();
  if (stranger == 0) {
    usleep(200000);
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a = Ipv4Address(INADDR_LOOPBACK, port);
    if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0) (void)!write(fd, "GET / HTTP/1.0\r\n\r\n", 18);
    close(fd);
    _exit(0);
  }
  const Outcome ok = RunRanks({0, 1}, 2, port, "id", 10);
  waitpid(stranger, nullptr, 0);
  EXPECT_EQ(ok.codes[0], 0) << ok.errors[0];
  EXPECT_EQ(ok.codes[1], 0) << ok.errors[1];
}

// Binds `port` in a child process for `hold_ms`, returning once it is bound: a port in use by
// another process, as when the kernel gave it to someone's outgoing connection as its own.
pid_t HoldPort(int port, int hold_ms) {
  int fds[2];
  EXPECT_EQ(pipe(fds), 0);
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a = Ipv4Address(INADDR_ANY, port);
    const bool held = bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
    (void)!write(fds[1], held ? "y" : "n", 1);
    usleep(static_cast<useconds_t>(hold_ms) * 1000);
    _exit(0);
  }
  close(fds[1]);
  char c = 0;
  EXPECT_EQ(read(fds[0], &c, 1), 1);
  close(fds[0]);
  EXPECT_EQ(c, 'y') << "could not hold port " << port;
  return pid;
}

TEST(RendezvousTest, APortInUseIsWaitedForUntilTheTimeout) {
  // Held for a moment: rank 0 listens once it is free, and every rank gets the bytes.
  const int port = FreePort();
  const pid_t brief = HoldPort(port, 400);
  const Outcome ok = RunRanks({0, 1}, 2, port, "id", 10);
  waitpid(brief, nullptr, 0);
  EXPECT_EQ(ok.codes[0], 0) << ok.errors[0];
  EXPECT_EQ(ok.codes[1], 0) << ok.errors[1];
  // Held past the timeout: rank 0 says it cannot listen, within the timeout.
  const int taken = FreePort();
  const pid_t holder = HoldPort(taken, 4000);
  const absl::Time start = absl::Now();
  const Outcome bad = RunRanks({0}, 2, taken, "id", 1);
  const absl::Duration took = absl::Now() - start;
  kill(holder, SIGKILL);
  waitpid(holder, nullptr, 0);
  EXPECT_EQ(bad.codes[0], 1);
  EXPECT_TRUE(Contains(bad.errors[0], "cannot listen (Address already in use)")) << bad.errors[0];
  EXPECT_TRUE(Contains(bad.errors[0], absl::StrCat("rank 0 on port ", taken))) << bad.errors[0];
  EXPECT_LT(took, absl::Seconds(3));
}

// Sets the given variables (and clears the other launchers') for one test.
class EnvTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* v : {"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
                          "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
                          "OMPI_COMM_WORLD_LOCAL_SIZE", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID",
                          "SLURM_NTASKS_PER_NODE", "PMI_RANK", "PMI_SIZE"}) {
      if (const char* old = std::getenv(v)) saved_.emplace_back(v, old);
      unsetenv(v);
    }
  }
  void TearDown() override {
    for (const auto& [name, value] : saved_) setenv(name.c_str(), value.c_str(), 1);
  }
  std::vector<std::pair<std::string, std::string>> saved_;
};

TEST_F(EnvTest, ReadsEachLaunchersVariables) {
  auto none = ProcessInfoFromEnv();
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ(none->source, "none");
  EXPECT_EQ(none->world_size, 1);
  setenv("RANK", "3", 1);
  setenv("WORLD_SIZE", "8", 1);
  setenv("LOCAL_RANK", "1", 1);
  setenv("LOCAL_WORLD_SIZE", "2", 1);
  setenv("MASTER_ADDR", "node7", 1);
  setenv("MASTER_PORT", "1234", 1);
  auto torch = ProcessInfoFromEnv();
  ASSERT_TRUE(torch.ok()) << torch.status();
  EXPECT_EQ(torch->source, "torchrun");
  EXPECT_EQ(torch->rank, 3);
  EXPECT_EQ(torch->world_size, 8);
  EXPECT_EQ(torch->local_rank, 1);
  EXPECT_EQ(torch->master_addr, "node7");
  EXPECT_EQ(torch->master_port, 1234);
  unsetenv("RANK");
  unsetenv("WORLD_SIZE");
  unsetenv("LOCAL_RANK");
  unsetenv("LOCAL_WORLD_SIZE");
  setenv("OMPI_COMM_WORLD_RANK", "5", 1);
  setenv("OMPI_COMM_WORLD_SIZE", "6", 1);
  setenv("OMPI_COMM_WORLD_LOCAL_RANK", "1", 1);
  setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "2", 1);
  auto mpi = ProcessInfoFromEnv();
  ASSERT_TRUE(mpi.ok()) << mpi.status();
  EXPECT_EQ(mpi->source, "mpirun");
  EXPECT_EQ(mpi->rank, 5);
  EXPECT_EQ(mpi->local_rank, 1);
  unsetenv("OMPI_COMM_WORLD_RANK");
  unsetenv("OMPI_COMM_WORLD_SIZE");
  setenv("SLURM_PROCID", "2", 1);
  setenv("SLURM_NTASKS", "4", 1);
  auto slurm = ProcessInfoFromEnv();
  ASSERT_TRUE(slurm.ok()) << slurm.status();
  EXPECT_EQ(slurm->source, "slurm");
  EXPECT_EQ(slurm->rank, 2);
  EXPECT_EQ(slurm->world_size, 4);
}

TEST_F(EnvTest, BadValuesNameTheVariable) {
  setenv("RANK", "4", 1);
  setenv("WORLD_SIZE", "4", 1);
  auto s = ProcessInfoFromEnv();
  EXPECT_TRUE(Contains(s.status().ToString(), "RANK='4' is not an integer in [0, 3]")) << s.status();
  setenv("RANK", "x1", 1);
  s = ProcessInfoFromEnv();
  EXPECT_TRUE(Contains(s.status().ToString(), "RANK='x1'")) << s.status();
  setenv("RANK", "1", 1);
  setenv("MASTER_PORT", "99999", 1);
  s = ProcessInfoFromEnv();
  EXPECT_TRUE(Contains(s.status().ToString(), "MASTER_PORT='99999' is not an integer in [1, 65535]")) << s.status();
}

}  // namespace
}  // namespace dist
}  // namespace kps
