// Helpers the dist tests share: a temporary directory removed with its object, an IPv4
// address, and a TCP port on the loopback that was free a moment ago.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <system_error>

#include "gtest/gtest.h"

namespace kps {
namespace dist_test {

// A fresh directory under the test temp dir (named prefix_XXXXXX), removed with the object;
// path() is empty when it could not be made.
class TempDir {
 public:
  explicit TempDir(const std::string& prefix) {
    std::string pattern = (std::filesystem::path(::testing::TempDir()) / (prefix + "_XXXXXX")).string();
    path_ = ::mkdtemp(pattern.data()) ? pattern : "";
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// An IPv4 socket address: `host` (INADDR_LOOPBACK, INADDR_ANY, in host order) and `port`.
inline sockaddr_in Ipv4Address(uint32_t host, int port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(host);
  a.sin_port = htons(static_cast<uint16_t>(port));
  return a;
}

// A port the kernel handed out for an ephemeral bind on 127.0.0.1, released again.
inline int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a = Ipv4Address(INADDR_LOOPBACK, 0);
  socklen_t len = sizeof(a);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

}  // namespace dist_test
}  // namespace kps
