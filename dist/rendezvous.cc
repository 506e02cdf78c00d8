// The rendezvous of rendezvous.h over POSIX sockets. Wire format, all integers little
// endian: a rank's hello is the 8 bytes "KPSRDV01", its rank and the world size (int32
// each); rank 0's answer is "KPSRDV01", the byte count (uint32) and the bytes.
#include "dist/rendezvous.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "registry/status.h"

namespace kps {
namespace dist {
namespace {

constexpr char kMagic[8] = {'K', 'P', 'S', 'R', 'D', 'V', '0', '1'};
constexpr uint32_t kMaxBytes = 1u << 20;

const char* Env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && v[0] != '\0' ? v : nullptr;
}

absl::Status ReadInt(const char* name, int lo, int hi, int* out) {
  const char* v = Env(name);
  if (v == nullptr) return absl::OkStatus();
  if (!absl::SimpleAtoi(v, out) || *out < lo || *out > hi) {
    return absl::InvalidArgumentError(absl::StrCat("rendezvous: environment variable ", name, "='",
                                                   std::string(v).substr(0, 40), "' is not an integer in [", lo, ", ",
                                                   hi, "]"));
  }
  return absl::OkStatus();
}

// A socket closed when it goes out of scope.
class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  Fd& operator=(Fd&& o) noexcept {
    std::swap(fd_, o.fd_);
    return *this;
  }
  Fd(const Fd&) = delete;
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

absl::Time Deadline(absl::Duration timeout) { return absl::Now() + timeout; }

int MsLeft(absl::Time deadline) {
  const absl::Duration left = deadline - absl::Now();
  return left <= absl::ZeroDuration()
             ? 0
             : static_cast<int>(std::min<int64_t>(absl::ToInt64Milliseconds(left) + 1, 1 << 30));
}

// Waits until fd is readable (or writable); false on timeout.
bool WaitFor(int fd, short events, absl::Time deadline) {
  while (true) {
    pollfd p{fd, events, 0};
    const int r = poll(&p, 1, MsLeft(deadline));
    if (r > 0) return true;
    if (r == 0 || errno != EINTR) return false;
  }
}

// Reads exactly n bytes before the deadline.
absl::Status ReadAll(int fd, void* buf, size_t n, absl::Time deadline, const std::string& who) {
  auto* p = static_cast<char*>(buf);
  while (n > 0) {
    if (!WaitFor(fd, POLLIN, deadline))
      return absl::DeadlineExceededError(absl::StrCat("rendezvous: ", who, " timed out"));
    const ssize_t r = recv(fd, p, n, 0);
    if (r == 0) return absl::UnavailableError(absl::StrCat("rendezvous: ", who, ": the connection closed early"));
    if (r < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return absl::UnavailableError(absl::StrCat("rendezvous: ", who, ": ", std::strerror(errno)));
    }
    p += r;
    n -= static_cast<size_t>(r);
  }
  return absl::OkStatus();
}

absl::Status WriteAll(int fd, const void* buf, size_t n, absl::Time deadline, const std::string& who) {
  const auto* p = static_cast<const char*>(buf);
  while (n > 0) {
    if (!WaitFor(fd, POLLOUT, deadline))
      return absl::DeadlineExceededError(absl::StrCat("rendezvous: ", who, " timed out"));
    const ssize_t r = send(fd, p, n, MSG_NOSIGNAL);
    if (r < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return absl::UnavailableError(absl::StrCat("rendezvous: ", who, ": ", std::strerror(errno)));
    }
    p += r;
    n -= static_cast<size_t>(r);
  }
  return absl::OkStatus();
}

void PutU32(char* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<char>((v >> (8 * i)) & 0xff);
}
uint32_t GetU32(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}

// A socket listening on `port` on every address (IPv6 and IPv4 where the machine has IPv6),
// or -1 with errno set.
Fd ListenOn(int port) {
  Fd listener(socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0));
  const bool v6 = listener.get() >= 0;
  if (!v6) listener = Fd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (listener.get() < 0) return listener;
  const int one = 1, zero = 0;
  setsockopt(listener.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  int rc;
  if (v6) {
    setsockopt(listener.get(), IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));  // IPv4 too
    sockaddr_in6 a{};
    a.sin6_family = AF_INET6;
    a.sin6_addr = in6addr_any;
    a.sin6_port = htons(static_cast<uint16_t>(port));
    rc = bind(listener.get(), reinterpret_cast<sockaddr*>(&a), sizeof(a));
  } else {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    a.sin_port = htons(static_cast<uint16_t>(port));
    rc = bind(listener.get(), reinterpret_cast<sockaddr*>(&a), sizeof(a));
  }
  if (rc != 0 || listen(listener.get(), 128) != 0) {
    const int err = errno;
    listener = Fd();
    errno = err;
  }
  return listener;
}

absl::StatusOr<std::string> Serve(const ProcessInfo& me, const std::string& bytes, absl::Time deadline) {
  const std::string where = absl::StrCat("rank 0 on port ", me.master_port);
  // A port in use may be held only for a moment: a launcher hands out a port it found free,
  // and until rank 0 listens, any process's outgoing connection can be given it as its local
  // port. So an address in use is retried until the deadline; other errors are final.
  Fd listener = ListenOn(me.master_port);
  while (listener.get() < 0 && errno == EADDRINUSE && absl::Now() + absl::Milliseconds(50) < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    listener = ListenOn(me.master_port);
  }
  if (listener.get() < 0) {
    return absl::UnavailableError(absl::StrCat("rendezvous: ", where, ": cannot listen (", std::strerror(errno),
                                               "); is MASTER_PORT taken by another job?"));
  }
  std::vector<Fd> peers(static_cast<size_t>(me.world_size));
  int arrived = 1;
  while (arrived < me.world_size) {
    if (!WaitFor(listener.get(), POLLIN, deadline)) {
      std::vector<int> missing;
      for (int r = 1; r < me.world_size; ++r) {
        if (peers[r].get() < 0) missing.push_back(r);
      }
      return absl::DeadlineExceededError(absl::StrCat("rendezvous: ", where, ": rank", missing.size() > 1 ? "s " : " ",
                                                      absl::StrJoin(missing, ", "), " of ", me.world_size,
                                                      " did not arrive in time"));
    }
    Fd peer(accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (peer.get() < 0) continue;
    char hello[16];
    // A short wait for the hello: a stranger on the port is dropped, not waited for.
    const absl::Time hello_deadline = std::min(deadline, absl::Now() + absl::Seconds(5));
    if (!ReadAll(peer.get(), hello, sizeof(hello), hello_deadline, where).ok() ||
        std::memcmp(hello, kMagic, sizeof(kMagic)) != 0) {
      continue;
    }
    const auto rank = static_cast<int32_t>(GetU32(hello + 8));
    const auto world = static_cast<int32_t>(GetU32(hello + 12));
    if (world != me.world_size) {
      return absl::FailedPreconditionError(absl::StrCat("rendezvous: ", where, ": rank ", rank, " says the world has ",
                                                        world, " ranks, rank 0 says ", me.world_size));
    }
    if (rank < 1 || rank >= me.world_size) {
      return absl::FailedPreconditionError(
          absl::StrCat("rendezvous: ", where, ": a process says it is rank ", rank, " of ", me.world_size));
    }
    if (peers[rank].get() >= 0) {
      return absl::FailedPreconditionError(absl::StrCat("rendezvous: ", where, ": two processes say they are rank ",
                                                        rank, "; check RANK in the launcher"));
    }
    peers[rank] = std::move(peer);
    ++arrived;
  }
  std::string answer(kMagic, sizeof(kMagic));
  answer.resize(12);
  PutU32(&answer[8], static_cast<uint32_t>(bytes.size()));
  answer += bytes;
  for (int r = 1; r < me.world_size; ++r) {
    KPS_RETURN_IF_ERROR(
        WriteAll(peers[r].get(), answer.data(), answer.size(), deadline, absl::StrCat(where, " answering rank ", r)));
  }
  return bytes;
}

absl::StatusOr<std::string> Join(const ProcessInfo& me, absl::Time deadline) {
  const std::string where =
      absl::StrCat("rank ", me.rank, " of ", me.world_size, " joining ", me.master_addr, ":", me.master_port);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(me.master_port);
  const int gai = getaddrinfo(me.master_addr.c_str(), port.c_str(), &hints, &found);
  if (gai != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("rendezvous: ", where, ": MASTER_ADDR does not resolve (", gai_strerror(gai), ")"));
  }
  Fd fd;
  // Rank 0 may not listen yet: try every address until the deadline.
  while (fd.get() < 0) {
    for (addrinfo* a = found; a != nullptr && fd.get() < 0; a = a->ai_next) {
      Fd s(socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol));
      if (s.get() >= 0 && connect(s.get(), a->ai_addr, a->ai_addrlen) == 0) fd = std::move(s);
    }
    if (fd.get() >= 0) break;
    if (absl::Now() >= deadline) {
      freeaddrinfo(found);
      return absl::DeadlineExceededError(
          absl::StrCat("rendezvous: ", where, ": rank 0 did not answer in time (is it running?)"));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  freeaddrinfo(found);
  char hello[16];
  std::memcpy(hello, kMagic, sizeof(kMagic));
  PutU32(hello + 8, static_cast<uint32_t>(me.rank));
  PutU32(hello + 12, static_cast<uint32_t>(me.world_size));
  KPS_RETURN_IF_ERROR(WriteAll(fd.get(), hello, sizeof(hello), deadline, where));
  char head[12];
  absl::Status s = ReadAll(fd.get(), head, sizeof(head), deadline, where);
  if (absl::IsDeadlineExceeded(s)) {
    return absl::DeadlineExceededError(
        absl::StrCat("rendezvous: ", where, ": rank 0 did not answer in time (another rank is missing?)"));
  }
  if (!s.ok()) {
    return absl::UnavailableError(
        absl::StrCat("rendezvous: ", where, ": rank 0 closed the connection (it failed; see its message)"));
  }
  if (std::memcmp(head, kMagic, sizeof(kMagic)) != 0) {
    return absl::DataLossError(absl::StrCat("rendezvous: ", where, ": the answer is not KPS's rendezvous"));
  }
  const uint32_t n = GetU32(head + 8);
  if (n > kMaxBytes) return absl::DataLossError(absl::StrCat("rendezvous: ", where, ": an answer of ", n, " bytes"));
  std::string bytes(n, '\0');
  if (n > 0) KPS_RETURN_IF_ERROR(ReadAll(fd.get(), bytes.data(), n, deadline, where));
  return bytes;
}

}  // namespace

absl::StatusOr<ProcessInfo> ProcessInfoFromEnv() {
  ProcessInfo me;
  const int kMax = 1 << 20;
  struct Launcher {
    const char *source, *rank, *size, *local_rank, *local_size;
  };
  const Launcher launchers[] = {
      {"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"},
      {"mpirun", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
       "OMPI_COMM_WORLD_LOCAL_SIZE"},
      {"slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", nullptr},  // per-node counts read "4(x2)"
      {"pmi", "PMI_RANK", "PMI_SIZE", nullptr, nullptr},
  };
  me.source = "none";
  for (const Launcher& l : launchers) {
    if (Env(l.rank) == nullptr || Env(l.size) == nullptr) continue;
    me.source = l.source;
    KPS_RETURN_IF_ERROR(ReadInt(l.size, 1, kMax, &me.world_size));
    KPS_RETURN_IF_ERROR(ReadInt(l.rank, 0, me.world_size - 1, &me.rank));
    me.local_world_size = me.world_size;
    me.local_rank = me.rank;
    if (l.local_size != nullptr) KPS_RETURN_IF_ERROR(ReadInt(l.local_size, 1, me.world_size, &me.local_world_size));
    if (l.local_rank != nullptr) {
      KPS_RETURN_IF_ERROR(ReadInt(l.local_rank, 0, me.local_world_size - 1, &me.local_rank));
    }
    break;
  }
  if (const char* a = Env("MASTER_ADDR")) me.master_addr = a;
  KPS_RETURN_IF_ERROR(ReadInt("MASTER_PORT", 1, 65535, &me.master_port));
  return me;
}

absl::StatusOr<std::string> ShareFromRankZero(const ProcessInfo& me, const std::string& bytes, absl::Duration timeout) {
  if (me.world_size < 1 || me.rank < 0 || me.rank >= me.world_size) {
    return absl::InvalidArgumentError(absl::StrCat("rendezvous: rank ", me.rank, " of ", me.world_size));
  }
  if (me.rank == 0 && bytes.size() > kMaxBytes) {
    return absl::InvalidArgumentError(absl::StrCat("rendezvous: ", bytes.size(), " bytes to share; at most 1 MiB"));
  }
  if (me.world_size == 1) return bytes;
  const absl::Time deadline = Deadline(timeout);
  return me.rank == 0 ? Serve(me, bytes, deadline) : Join(me, deadline);
}

}  // namespace dist
}  // namespace kps
