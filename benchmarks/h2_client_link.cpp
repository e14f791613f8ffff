#include "h2_client_link.hpp"

#include <arpa/inet.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>

namespace edri::bench {
namespace {

constexpr std::size_t kReadChunk = 16384;
constexpr std::size_t kWriteBatch = 65536;

H2ClientLink& link_of(void* user) { return *static_cast<H2ClientLink*>(user); }

std::string_view text_of(const std::uint8_t* bytes, std::size_t size) {
  return {reinterpret_cast<const char*>(bytes), size};
}

std::string errno_text(const char* what, int err) { return std::string(what) + ": " + std::strerror(err); }

}  // namespace

bool H2ClientLink::open(const sockaddr_in& peer, std::string& error) {
  close();
  fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd_ < 0) {
    error = errno_text("socket", errno);
    return false;
  }
  // Without it a small frame waits on Nagle for the previous ACK and the
  // latency measured is the kernel's.
  const int one = 1;
  ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (::connect(fd_, reinterpret_cast<const sockaddr*>(&peer), sizeof peer) != 0) {
    if (errno != EINPROGRESS) {
      error = errno_text("connect", errno);
      close();
      return false;
    }
    connecting_ = true;
  }
  create_session();
  return true;
}

void H2ClientLink::create_session() {
  nghttp2_session_callbacks* callbacks = nullptr;
  nghttp2_session_callbacks_new(&callbacks);
  nghttp2_session_callbacks_set_on_header_callback(callbacks, &H2ClientLink::on_header_cb);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, &H2ClientLink::on_data_cb);
  nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, &H2ClientLink::on_close_cb);
  nghttp2_session_client_new(&session_, callbacks, this);
  nghttp2_session_callbacks_del(callbacks);
  // A client speaks first: the preface (nghttp2 adds it) and its SETTINGS.
  nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, nullptr, 0);
}

void H2ClientLink::close() {
  if (session_ != nullptr) nghttp2_session_del(session_);
  session_ = nullptr;
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  connecting_ = false;
  unsent_.clear();
}

short H2ClientLink::wanted_events() const {
  if (connecting_ || !unsent_.empty()) return POLLIN | POLLOUT;
  return POLLIN;
}

bool H2ClientLink::on_ready(short revents, std::string& error) {
  if (connecting_ && (revents & (POLLOUT | POLLERR | POLLHUP)) != 0 && !finish_connect(error)) return false;
  if (!connecting_ && (revents & (POLLIN | POLLERR | POLLHUP)) != 0 && !read_available(error)) return false;
  if (!flush(error)) return false;
  if (nghttp2_session_want_read(session_) == 0 && nghttp2_session_want_write(session_) == 0) {
    error = "the server ended the HTTP/2 session (GOAWAY)";
    return false;
  }
  return true;
}

bool H2ClientLink::finish_connect(std::string& error) {
  int err = 0;
  socklen_t len = sizeof err;
  if (::getsockopt(fd_, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
  if (err != 0) {
    error = errno_text("connect", err);
    return false;
  }
  connecting_ = false;
  return true;
}

bool H2ClientLink::read_available(std::string& error) {
  std::uint8_t buffer[kReadChunk];
  for (;;) {
    const ssize_t n = ::recv(fd_, buffer, sizeof buffer, 0);
    if (n > 0) {
      const ssize_t taken = nghttp2_session_mem_recv(session_, buffer, static_cast<std::size_t>(n));
      if (taken < 0) {
        error = std::string("HTTP/2: ") + nghttp2_strerror(static_cast<int>(taken));
        return false;
      }
      // A short read emptied the socket: poll is level-triggered, so the
      // recv that would only say EAGAIN is saved.
      if (static_cast<std::size_t>(n) < sizeof buffer) return true;
      continue;
    }
    if (n == 0) {
      error = "the server closed the connection";
      return false;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return true;
    error = errno_text("recv", errno);
    return false;
  }
}

bool H2ClientLink::flush(std::string& error) {
  if (connecting_ || fd_ < 0) return true;  // the connect's POLLOUT flushes
  for (;;) {
    if (unsent_.empty() && !take_frames(error)) return false;
    if (unsent_.empty()) return true;
    const ssize_t n = ::send(fd_, unsent_.data(), unsent_.size(), MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return true;  // the rest waits for POLLOUT
      error = errno_text("send", errno);
      return false;
    }
    unsent_.erase(0, static_cast<std::size_t>(n));
  }
}

// nghttp2 hands out one frame at a time; batching them lets a request's
// HEADERS and DATA leave in one write, one segment, as real clients send
// them, rather than wake the server twice.
bool H2ClientLink::take_frames(std::string& error) {
  while (unsent_.size() < kWriteBatch) {
    const std::uint8_t* data = nullptr;
    const ssize_t n = nghttp2_session_mem_send(session_, &data);
    if (n < 0) {
      error = std::string("HTTP/2: ") + nghttp2_strerror(static_cast<int>(n));
      return false;
    }
    if (n == 0) break;
    unsent_.append(reinterpret_cast<const char*>(data), static_cast<std::size_t>(n));
  }
  return true;
}

int H2ClientLink::on_header_cb(nghttp2_session*, const nghttp2_frame* frame, const std::uint8_t* name,
                               std::size_t name_len, const std::uint8_t* value, std::size_t value_len, std::uint8_t,
                               void* user) {
  link_of(user).events_.on_header(frame->hd.stream_id, text_of(name, name_len), text_of(value, value_len));
  return 0;
}

int H2ClientLink::on_data_cb(nghttp2_session*, std::uint8_t, std::int32_t stream, const std::uint8_t* data,
                             std::size_t size, void* user) {
  link_of(user).events_.on_data(stream, text_of(data, size));
  return 0;
}

int H2ClientLink::on_close_cb(nghttp2_session*, std::int32_t stream, std::uint32_t error_code, void* user) {
  link_of(user).events_.on_stream_close(stream, error_code);
  return 0;
}

nghttp2_nv static_header(std::string_view name, std::string_view value) {
  return {reinterpret_cast<std::uint8_t*>(const_cast<char*>(name.data())),
          reinterpret_cast<std::uint8_t*>(const_cast<char*>(value.data())), name.size(), value.size(),
          NGHTTP2_NV_FLAG_NO_COPY_NAME | NGHTTP2_NV_FLAG_NO_COPY_VALUE};
}

std::optional<sockaddr_in> ipv4_address(const std::string& host, std::uint16_t port) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  if (::inet_pton(AF_INET, host.c_str(), &address.sin_addr) != 1) return std::nullopt;
  return address;
}

namespace {

// Remembers the :status of one stream and whether it has ended.
class StatusWatch final : public H2ClientLink::Events {
 public:
  std::int32_t stream = 0;
  int status = 0;
  bool ended = false;

  void on_header(std::int32_t s, std::string_view name, std::string_view value) override {
    if (s == stream && name == ":status") std::from_chars(value.data(), value.data() + value.size(), status);
  }
  void on_data(std::int32_t, std::string_view) override {}
  void on_stream_close(std::int32_t s, std::uint32_t) override { ended = ended || s == stream; }
};

}  // namespace

bool probe_h2_ok(const std::string& host, std::uint16_t port, const std::string& path, double timeout_seconds) {
  using Clock = std::chrono::steady_clock;
  const auto peer = ipv4_address(host, port);
  if (!peer) return false;
  StatusWatch watch;
  H2ClientLink link(watch);
  std::string error;
  if (!link.open(*peer, error)) return false;
  const std::string authority = host + ":" + std::to_string(port);
  const nghttp2_nv headers[] = {static_header(":method", "GET"), static_header(":scheme", "http"),
                                static_header(":authority", authority), static_header(":path", path)};
  watch.stream = nghttp2_submit_request(link.session(), nullptr, headers, std::size(headers), nullptr, nullptr);
  if (watch.stream < 0 || !link.flush(error)) return false;

  const auto deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_seconds));
  while (!watch.ended) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return false;
    pollfd p{link.fd(), link.wanted_events(), 0};
    if (::poll(&p, 1, static_cast<int>(left)) < 0 && errno != EINTR) return false;
    if (p.revents != 0 && !link.on_ready(p.revents, error)) return watch.ended && watch.status == 200;
  }
  return watch.status == 200;
}

}  // namespace edri::bench
