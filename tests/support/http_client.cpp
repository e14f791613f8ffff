#include "support/http_client.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <stdexcept>

namespace edri::test {

int connect_to(const std::string& host, std::uint16_t port, int receive_buffer) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (receive_buffer) ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &receive_buffer, sizeof receive_buffer);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  if (::inet_pton(AF_INET, host.c_str(), &a.sin_addr) != 1 ||
      ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    throw std::runtime_error("connect to " + host + ":" + std::to_string(port) + " failed");
  }
  return fd;
}

int connect_loopback(std::uint16_t port, int receive_buffer) { return connect_to("127.0.0.1", port, receive_buffer); }

HttpClient::HttpClient(std::uint16_t port, int timeout_ms) : HttpClient("127.0.0.1", port, timeout_ms) {}

HttpClient::HttpClient(const std::string& host, std::uint16_t port, int timeout_ms) : timeout_ms_(timeout_ms) {
  fd_ = connect_to(host, port, 0);
  int one = 1;
  ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

HttpClient::~HttpClient() {
  if (fd_ >= 0) ::close(fd_);
}

void HttpClient::send_raw(const std::string& bytes) {
  std::size_t off = 0;
  while (off < bytes.size()) {
    const ssize_t n = ::send(fd_, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
    if (n <= 0) throw std::runtime_error("send failed");
    off += static_cast<std::size_t>(n);
  }
}

bool HttpClient::fill(int timeout_ms) {
  pollfd p{fd_, POLLIN, 0};
  if (::poll(&p, 1, timeout_ms) <= 0) throw std::runtime_error("timed out waiting for the server");
  char tmp[16384];
  const ssize_t n = ::recv(fd_, tmp, sizeof tmp, 0);
  if (n <= 0) return false;
  buf_.append(tmp, static_cast<std::size_t>(n));
  return true;
}

HttpResponse HttpClient::read_response(bool head) {
  std::size_t end;
  while ((end = buf_.find("\r\n\r\n")) == std::string::npos)
    if (!fill(timeout_ms_)) throw std::runtime_error("connection closed before a response");
  HttpResponse r;
  const std::string head_text = buf_.substr(0, end);
  r.raw_head = head_text;
  std::size_t line_end = head_text.find("\r\n");
  const std::string status_line = head_text.substr(0, line_end);
  r.version = status_line.substr(0, status_line.find(' '));
  r.status = std::stoi(status_line.substr(status_line.find(' ') + 1, 3));
  std::size_t pos = line_end == std::string::npos ? head_text.size() : line_end + 2;
  while (pos < head_text.size()) {
    auto next = head_text.find("\r\n", pos);
    if (next == std::string::npos) next = head_text.size();
    const std::string line = head_text.substr(pos, next - pos);
    const auto colon = line.find(':');
    if (colon != std::string::npos) {
      std::string name = line.substr(0, colon);
      for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      std::string value = line.substr(colon + 1);
      while (!value.empty() && value.front() == ' ') value.erase(0, 1);
      r.headers[name] = value;
    }
    pos = next + 2;
  }
  buf_.erase(0, end + 4);
  if (!head && r.header("transfer-encoding") == "chunked") {
    // Strict: every chunk is "hex CRLF data CRLF", and "0 CRLF CRLF" ends.
    r.chunks = 0;
    for (;;) {
      std::size_t eol;
      while ((eol = buf_.find("\r\n")) == std::string::npos)
        if (!fill(timeout_ms_)) throw std::runtime_error("connection closed in a chunk size");
      std::size_t used = 0;
      const std::size_t size = std::stoul(buf_.substr(0, eol), &used, 16);
      if (used != eol) throw std::runtime_error("a malformed chunk size: " + buf_.substr(0, eol));
      while (buf_.size() < eol + 2 + size + 2)
        if (!fill(timeout_ms_)) throw std::runtime_error("connection closed in a chunk");
      if (buf_.compare(eol + 2 + size, 2, "\r\n") != 0) throw std::runtime_error("a chunk not ended by CRLF");
      r.body.append(buf_, eol + 2, size);
      buf_.erase(0, eol + 2 + size + 2);
      if (size == 0) return r;
      ++r.chunks;
    }
  }
  if (!head && r.status != 204 && r.status != 304 && !r.headers.count("content-length") &&
      r.header("connection") == "close") {
    // The body ends with the connection.
    while (fill(timeout_ms_)) {
    }
    r.body = std::move(buf_);
    buf_.clear();
    return r;
  }
  std::size_t len = 0;
  if (!head && r.headers.count("content-length")) len = std::stoul(r.headers["content-length"]);
  while (buf_.size() < len)
    if (!fill(timeout_ms_)) throw std::runtime_error("connection closed in a response body");
  r.body = buf_.substr(0, len);
  buf_.erase(0, len);
  return r;
}

HttpResponse HttpClient::request(const std::string& method, const std::string& path, const std::string& body,
                                 const std::string& extra_headers) {
  std::string req = method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n" + extra_headers;
  if (!body.empty() || method == "POST" || method == "PUT")
    req += "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  req += "\r\n" + body;
  send_raw(req);
  return read_response(method == "HEAD");
}

std::string HttpClient::read_bytes(std::size_t n) {
  while (buf_.size() < n)
    if (!fill(timeout_ms_)) throw std::runtime_error("connection closed before " + std::to_string(n) + " bytes");
  std::string out = buf_.substr(0, n);
  buf_.erase(0, n);
  return out;
}

HttpResponse HttpClient::get(const std::string& path) { return request("GET", path); }

bool HttpClient::closed_by_peer(int timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) return false;
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left)) <= 0) return false;
    char tmp[4096];
    const ssize_t n = ::recv(fd_, tmp, sizeof tmp, 0);
    if (n == 0) return true;
    if (n < 0) return errno == ECONNRESET;
    buf_.append(tmp, static_cast<std::size_t>(n));
  }
}

HttpResponse http_get(std::uint16_t port, const std::string& path) {
  HttpClient c(port);
  return c.get(path);
}

int connect_small_window(std::uint16_t port) { return connect_loopback(port, 4096); }

}  // namespace edri::test
