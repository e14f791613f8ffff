#include "listener/connection.hpp"

#include <sys/socket.h>

#include <cerrno>

#include "listener/listener.hpp"

namespace edri::listener {

namespace {
constexpr std::size_t kReadBuffer = 16 * 1024;
}

Connection::Connection(Listener& listener, asio::ip::tcp::socket socket, std::uint32_t id, std::uint32_t generation)
    : listener_(listener),
      socket_(std::move(socket)),
      id_(id),
      generation_(generation),
      parser_(listener.parser_limits(), [this](http::HttpRequest& req) { listener_.dispatch(*this, req); }),
      read_buf_(new char[kReadBuffer]) {}

std::uint32_t Connection::open_slot(bool keep_alive, bool http10, bool head) {
  slots_.push_back(Slot{SlotInfo{keep_alive, http10, head}, false, {}});
  return next_seq_++;
}

const Connection::SlotInfo* Connection::slot(std::uint32_t seq) const {
  const std::uint32_t idx = seq - base_seq_;
  if (idx >= slots_.size() || slots_[idx].ready) return nullptr;
  return &slots_[idx].info;
}

void Connection::promote_ready() {
  bool any = false;
  while (!slots_.empty() && slots_.front().ready) {
    Slot& s = slots_.front();
    if (!s.bytes.empty()) out_ += s.bytes;
    const bool last = !s.info.keep_alive;
    slots_.pop_front();
    ++base_seq_;
    any = true;
    if (last) {
      // Nothing after a response that closes the connection is answered.
      close_after_write_ = true;
      slots_.clear();
      read_closed_ = true;
      break;
    }
  }
  if (any) mark_dirty();
}

void Connection::mark_dirty() {
  if (!dirty && !closed_) listener_.mark_dirty(*this);
}

void Connection::arm_read() {
  if (reading_ || read_closed_ || closed_) return;
  reading_ = true;
  // A cancelled wait (the connection closed) must not touch `this`: the
  // Connection may already be gone when the handler runs.
  socket_.async_wait(asio::ip::tcp::socket::wait_read, [this](const boost::system::error_code& ec) {
    if (ec) return;
    reading_ = false;
    on_readable();
  });
}

void Connection::on_readable() {
  const int fd = socket_.native_handle();
  for (;;) {
    const ssize_t n = ::recv(fd, read_buf_.get(), kReadBuffer, 0);
    if (n > 0) {
      const auto r = parser_.feed(read_buf_.get(), static_cast<std::size_t>(n));
      if (!r.ok) {
        // Requests before the error are answered; then the error, then close.
        read_closed_ = true;
        listener_.answer_locally(*this, false, false, false, r.status, r.reason);
        return;
      }
      if (closed_ || read_closed_) return;
      if (static_cast<std::size_t>(n) < kReadBuffer) break;
      continue;
    }
    if (n == 0) {
      read_closed_ = true;
      if (slots_.empty() && out_off_ == out_.size())
        close();
      else
        close_after_write_ = true;
      return;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) break;
    close();
    return;
  }
  // Backpressure: too many requests in flight on this connection: stop
  // reading until responses drain.
  if (slots_.size() < listener_.config().max_pipeline) arm_read();
}

void Connection::flush() {
  dirty = false;
  if (closed_ || writing_) return;
  const int fd = socket_.native_handle();
  while (out_off_ < out_.size()) {
    const ssize_t n = ::send(fd, out_.data() + out_off_, out_.size() - out_off_, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      out_off_ += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      writing_ = true;
      socket_.async_wait(asio::ip::tcp::socket::wait_write, [this](const boost::system::error_code& ec) {
        if (ec) return;
        writing_ = false;
        flush();
      });
      return;
    }
    close();
    return;
  }
  out_.clear();
  out_off_ = 0;
  if (close_after_write_ && slots_.empty()) {
    boost::system::error_code ignored;
    socket_.shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
    close();
    return;
  }
  if (!read_closed_ && slots_.size() < listener_.config().max_pipeline) arm_read();
}

void Connection::close() {
  if (closed_) return;
  closed_ = true;
  boost::system::error_code ignored;
  socket_.close(ignored);
  listener_.release(*this);
}

}  // namespace edri::listener
