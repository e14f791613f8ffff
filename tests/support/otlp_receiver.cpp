#include "support/otlp_receiver.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <stdexcept>

namespace edri::test {

namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string trimmed(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  const auto e = s.find_last_not_of(" \t\r");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

// The request head in `text` (up to its blank line).
OtlpReceiver::Received parse_head(const std::string& text) {
  OtlpReceiver::Received r;
  std::size_t at = text.find("\r\n");
  const std::string first = text.substr(0, at);
  const auto sp1 = first.find(' '), sp2 = first.rfind(' ');
  r.method = first.substr(0, sp1);
  r.target = first.substr(sp1 + 1, sp2 - sp1 - 1);
  while (at != std::string::npos && at + 2 < text.size()) {
    const auto next = text.find("\r\n", at + 2);
    const std::string line = text.substr(at + 2, next - at - 2);
    if (const auto colon = line.find(':'); colon != std::string::npos)
      r.headers[lower(line.substr(0, colon))] = trimmed(line.substr(colon + 1));
    at = next;
  }
  return r;
}

}  // namespace

OtlpReceiver::OtlpReceiver(std::size_t refuse_first, int refuse_status)
    : refuse_first_(refuse_first), refuse_status_(refuse_status) {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (listen_fd_ < 0 || ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::listen(listen_fd_, 64) != 0 || ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0)
    throw std::runtime_error("OtlpReceiver: cannot listen");
  port_ = ntohs(a.sin_port);
  acceptor_ = std::thread([this] { accept_loop(); });
}

OtlpReceiver::~OtlpReceiver() {
  stop_ = true;
  ::shutdown(listen_fd_, SHUT_RDWR);
  acceptor_.join();
  {
    std::lock_guard lock(mutex_);
    for (const int fd : connections_) ::shutdown(fd, SHUT_RDWR);
  }
  for (auto& t : threads_) t.join();
  for (const int fd : connections_) ::close(fd);
  ::close(listen_fd_);
}

std::vector<OtlpReceiver::Received> OtlpReceiver::received() const {
  std::lock_guard lock(mutex_);
  return received_;
}

void OtlpReceiver::accept_loop() {
  while (!stop_) {
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) return;  // shut down
    std::lock_guard lock(mutex_);
    connections_.push_back(fd);
    threads_.emplace_back([this, fd] { serve(fd); });
  }
}

// Requests one after another on a kept connection, each with a
// Content-Length body or none (what libcurl sends).
void OtlpReceiver::serve(int fd) {
  std::string buffer;
  char chunk[65536];
  for (;;) {
    std::size_t end;
    while ((end = buffer.find("\r\n\r\n")) == std::string::npos) {
      const ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
      if (n <= 0) return;
      buffer.append(chunk, static_cast<std::size_t>(n));
    }
    Received r = parse_head(buffer.substr(0, end + 2));
    const std::size_t length = r.headers.count("content-length") ? std::stoul(r.headers["content-length"]) : 0;
    while (buffer.size() < end + 4 + length) {
      const ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
      if (n <= 0) return;
      buffer.append(chunk, static_cast<std::size_t>(n));
    }
    r.body = buffer.substr(end + 4, length);
    buffer.erase(0, end + 4 + length);
    bool refused = false;
    {
      std::lock_guard lock(mutex_);
      refused = received_.size() < refuse_first_;
      received_.push_back(std::move(r));
    }
    static constexpr char kAnswer[] =
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}";
    const std::string refusal = "HTTP/1.1 " + std::to_string(refuse_status_) + " Refused\r\nContent-Length: 0\r\n\r\n";
    const bool sent = refused ? ::send(fd, refusal.data(), refusal.size(), MSG_NOSIGNAL) >= 0
                              : ::send(fd, kAnswer, sizeof kAnswer - 1, MSG_NOSIGNAL) >= 0;
    if (!sent) return;
  }
}

}  // namespace edri::test
