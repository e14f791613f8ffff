// H2Connection: H2Client over a loopback socket to a real server. It
// carries bytes both ways until a condition holds, the server closes, or a
// deadline passes; what the server sent is in the client's answers.
#pragma once

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <string>

#include "support/h2_client.hpp"
#include "support/http_client.hpp"

namespace edri::test {

class H2Connection {
 public:
  explicit H2Connection(std::uint16_t port, std::uint32_t peer_max_streams = 100, int receive_buffer = 0)
      : client(peer_max_streams), fd_(connect_loopback(port, receive_buffer)) {}
  ~H2Connection() {
    if (fd_ >= 0) ::close(fd_);
  }
  H2Connection(const H2Connection&) = delete;
  H2Connection& operator=(const H2Connection&) = delete;

  // Exchanges bytes until `done()` holds (true), or the server closed the
  // connection or `timeout_ms` passed (false either way; closed() tells).
  bool run_until(const std::function<bool()>& done, int timeout_ms = 5000) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    for (;;) {
      if (!send_pending()) return false;
      if (done()) return true;
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now()).count();
      if (left <= 0 || closed_) return false;
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(std::min<long long>(left, 50))) <= 0) continue;
      char buf[65536];
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) {
        closed_ = true;
        return done();
      }
      bytes_in += static_cast<std::size_t>(n);
      client.receive({buf, static_cast<std::size_t>(n)});
    }
  }
  // Writes raw bytes (frames the client library would never send).
  bool send_raw(std::string_view bytes) {
    return ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) == ssize_t(bytes.size());
  }
  bool closed() const { return closed_; }
  // True once the stream's answer is whole or reset.
  bool finished(std::int32_t stream) { return client.answers[stream].closed; }

  H2Client client;
  std::size_t bytes_in = 0;

 private:
  bool send_pending() {
    const std::string out = client.produce();
    return out.empty() || send_raw(out) || closed_;
  }
  int fd_;
  bool closed_ = false;
};

}  // namespace edri::test
