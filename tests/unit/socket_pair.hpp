// A connected pair of Unix stream sockets for the listener's unit tests:
// `server` is what a connection writes to (non-blocking, as the listener's
// sockets are), `client` what the test reads from.
#pragma once

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <stdexcept>
#include <string>

#include "transport/unique_fd.hpp"

namespace edri::testing {

struct SocketPair {
  UniqueFd server;
  UniqueFd client;

  SocketPair() {
    int fds[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fds) != 0) throw std::runtime_error("socketpair");
    server = UniqueFd(fds[0]);
    client = UniqueFd(fds[1]);
  }
  // Everything the client side can read now.
  std::string read_all() const {
    std::string out;
    char buf[65536];
    for (;;) {
      const ssize_t n = ::recv(client.get(), buf, sizeof buf, MSG_DONTWAIT);
      if (n <= 0) return out;
      out.append(buf, static_cast<std::size_t>(n));
    }
  }
};

}  // namespace edri::testing
