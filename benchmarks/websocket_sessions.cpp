#include "websocket_sessions.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

namespace edri::bench {

namespace {
using Clock = std::chrono::steady_clock;
}  // namespace

// Opens `n` WebSocket connections to /ws and completes their handshakes;
// the descriptors of those that did (the caller closes them).
std::vector<int> open_sessions(std::uint16_t port, int n, const ScenarioContext& context, bool deflate) {
  const std::string upgrade =
      std::string(
          "GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
          "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n") +
      (deflate ? "Sec-WebSocket-Extensions: permessage-deflate; server_no_context_takeover; client_max_window_bits\r\n"
               : "") +
      "\r\n";
  std::vector<int> fds;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  for (int i = 0; i < n && !context.interrupted(); ++i) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) break;
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::send(fd, upgrade.data(), upgrade.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(upgrade.size())) {
      ::close(fd);
      break;
    }
    // The 101 and its headers, read whole before the next connect.
    std::string head;
    char buf[1024];
    const auto deadline = Clock::now() + std::chrono::seconds(5);
    while (head.find("\r\n\r\n") == std::string::npos && Clock::now() < deadline) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      const ssize_t r = ::recv(fd, buf, sizeof buf, 0);
      if (r <= 0) break;
      head.append(buf, static_cast<std::size_t>(r));
    }
    if (head.rfind("HTTP/1.1 101", 0) != 0) {
      ::close(fd);
      break;
    }
    fds.push_back(fd);
    if ((i + 1) % 250 == 0) std::fprintf(stderr, "  %d sessions open\n", i + 1);
  }
  return fds;
}

int threads_of(pid_t pid) {
  std::error_code ec;
  int n = 0;
  for (auto it = std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec))
    ++n;
  return n;
}

std::uint64_t process_cpu_ns(pid_t pid) {
  std::error_code ec;
  std::uint64_t total = 0;
  for (auto it = std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    std::ifstream f(it->path() / "schedstat");
    std::uint64_t ns = 0;
    if (f >> ns) total += ns;
  }
  return total;
}

}  // namespace edri::bench
