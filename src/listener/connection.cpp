#include "listener/connection.hpp"

#include <sys/socket.h>

#include <sys/epoll.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <spdlog/spdlog.h>

#include "http2/preface.hpp"
#include "listener/upload_file.hpp"

namespace edri::listener {

namespace {
constexpr std::size_t kReadBuffer = 16 * 1024;

// One read buffer for every connection of the listener: its loop is one
// thread, and what a read brings is consumed (parsed, or copied where it
// must wait) before the next read, so no connection needs its own. Each
// used to hold 16 KiB of its own, most of an idle session's memory.
char* read_buffer() {
  static char buffer[kReadBuffer];
  return buffer;
}
// Bytes read from a WebSocket client and not yet taken by Beast before the
// connection stops reading: enough for Beast to always have the next bytes
// of a message, never a pile of commands the client sent ahead.
constexpr std::size_t kWebSocketInputAhead = 4 * kReadBuffer;

}  // namespace

Connection::Connection(ConnectionContext& ctx, UniqueFd fd, std::uint32_t id, std::uint32_t generation,
                       const TlsContext* tls)
    : ctx_(ctx),
      socket_(std::move(fd), tls),
      id_(id),
      generation_(generation),
      parser_(
          ctx.parser_limits,
          [this](http::HttpRequest& req) {
            ctx_.owner.request(*this, req);
            // An upload file lives as long as its slot holds it, not until
            // the next request.
            req.spill.reset();
            // Requests pipelined in one read stop here too, not only reads.
            if (must_pause()) parser_.pause();
          },
          [this] { send_continue(); },
          [this](http::HttpRequest& req, std::string_view bytes) {
            // A large body goes to a file as it arrives (upload_file.hpp).
            if (!req.spill) {
              req.spill = UploadFile::create(ctx_.config.upload_path);
              if (!req.spill) {
                spdlog::error("cannot create an upload file in {}: {}", ctx_.config.upload_path, std::strerror(errno));
                return false;
              }
            }
            if (static_cast<UploadFile&>(*req.spill).append(bytes)) return true;
            spdlog::error("cannot write an upload file in {}: {}", ctx_.config.upload_path, std::strerror(errno));
            return false;
          }) {}

Connection::~Connection() {
  if (ws_) ws_->detach();
}

void Connection::start() {
  ctx_.events.watch(socket_.fd(), EPOLLIN | EPOLLOUT | EPOLLRDHUP, [this](std::uint32_t ev) { on_events(ev); });
  // Data that arrived before the registration raised no edge: look now.
  read_available();
}

std::uint32_t Connection::open_slot(bool keep_alive, bool http10, bool head, std::string_view headers,
                                    std::uint32_t route) {
  served_ = true;
  return sink_->open(
      SlotInfo{keep_alive, http10, head, route, std::chrono::steady_clock::now(), std::string(headers), {}});
}

void Connection::last_answer_queued() {
  close_after_write_ = true;
  stop_input();
}

void Connection::stop_input() {
  if (read_closed_) return;
  // What follows the request being answered is never read as a request;
  // if the client sent some, the close lingers so that it gets the answer.
  read_closed_ = true;
  if (!pending_input_.empty() || parser_.mid_message()) input_refused_ = true;
  pending_input_.clear();
  parser_.pause();
}

void Connection::mark_dirty() {
  if (!dirty && !closed_) ctx_.owner.wants_flush(*this);
}

bool Connection::read_proxy_header() {
  // Peeked, not read: only the header's own bytes are taken off the
  // socket, so what follows (a request, a TLS ClientHello) is read as if
  // the proxy were not there. A header still arriving stays in the socket
  // and is peeked again, whole, at the next edge.
  char* head = read_buffer();
  const ssize_t n = socket_.recv_raw(head, http::kProxyHeaderMax, MSG_PEEK);
  if (n <= 0 && n != ClientSocket::kWouldBlock) on_peer_closed(n < 0);
  if (n <= 0) return false;
  const auto h = http::parse_proxy_header({head, static_cast<std::size_t>(n)});
  if (h.status == http::ProxyHeader::Status::Invalid) refuse_proxy_header(h.error);
  return h.status == http::ProxyHeader::Status::Parsed && take_proxy_header(h);
}

bool Connection::take_proxy_header(const http::ProxyHeader& h) {
  // The bytes were peeked: they are there to take.
  if (socket_.recv_raw(read_buffer(), h.consumed, 0) != static_cast<ssize_t>(h.consumed)) {
    on_peer_closed(true);
    return false;
  }
  if (h.source) peer_ = *h.source;
  proxy_header_ = false;
  // The first request has its own EDRI_HEADER_TIMEOUT from here.
  last_input_ = std::chrono::steady_clock::now();
  return true;
}

void Connection::refuse_proxy_header(std::string_view why) {
  // Not HTTP yet, so no HTTP answer: the proxy is misconfigured, or the
  // peer is not the proxy it is trusted as.
  ctx_.counts.proxy_header_refused(*this, why);
  close();
}

void Connection::on_events(std::uint32_t events) {
  if (lingering_) return discard_input();
  // TLS: a handshake or a write may wait for either direction.
  if (socket_.handshaking() || (socket_.tls() && writing_)) events |= EPOLLIN | EPOLLOUT;
  if ((events & EPOLLOUT) && writing_) {
    writing_ = false;
    flush();
  }
  if (closed_) return;
  if (events_ && (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))) return drop_events_input();
  if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
    if (read_paused_ || read_closed_) return;  // read later, when resumed
    read_available();
  }
}

bool Connection::must_pause() const {
  const auto& config = ctx_.config;
  // A WebSocket's commands and output are held back by pausing its session
  // (update_ws_flow); what is read meanwhile stays in its pipe.
  if (ws_) return ws_->input_backlog() > kWebSocketInputAhead;
  // HTTP/2: the session bounds the streams in flight (EDRI_MAX_PIPELINE).
  if (h2_) return backlog() > config.output_buffer;
  return http1_.pending() >= config.max_pipeline || backlog() > config.output_buffer;
}

void Connection::resume_reading() {
  if (!read_paused_ || read_closed_ || closed_ || must_pause()) return;
  read_paused_ = false;
  // The client was not read meanwhile: the body timeout counts from now.
  last_input_ = std::chrono::steady_clock::now();
  if (!pending_input_.empty()) {
    // First what was read past the request the parser paused after.
    const std::string input = std::move(pending_input_);
    pending_input_.clear();
    if (!consume(input.data(), input.size())) return;
  }
  // Edges that came while paused were consumed: read speculatively.
  read_available();
}

bool Connection::consume(const char* data, std::size_t n) {
  if (ws_) {
    ws_->feed(data, n);
    ctx_.websocket.wants_poll();
    return !closed_ && !read_closed_;
  }
  if (h2_) return consume_h2(data, n);
  if (!protocol_known_) return choose_protocol(data, n);
  return consume_http1(data, n);
}

bool Connection::consume_http1(const char* data, std::size_t n) {
  const bool was_in_head = parser_.in_head();
  const auto r = parser_.feed(data, n);
  if (!was_in_head && parser_.in_head()) head_started_ = last_input_;
  if (!r.ok) {
    // Requests before the error are answered; then the error, then close.
    input_refused_ = true;
    ctx_.owner.refuse(*this, r.status, r.reason);
    return false;
  }
  if (r.paused && !closed_ && !read_closed_) {
    pending_input_.assign(data + r.consumed, n - r.consumed);
    read_paused_ = true;
    return false;
  }
  if (read_closed_ && r.consumed < n) input_refused_ = true;  // bytes after the last request read
  if (r.upgrade && !closed_) {
    // The listener saw the upgrade request: it either switched this
    // connection to WebSocket (the rest is frames) or answered it as plain
    // HTTP (the rest is the next request).
    if (ws_) return consume(data + r.consumed, n - r.consumed);
    if (read_closed_) return false;
    parser_.resume_after_upgrade();
    return consume(data + r.consumed, n - r.consumed);
  }
  return !closed_ && !read_closed_;
}

bool Connection::choose_protocol(const char* data, std::size_t n) {
  if (preface_.empty() && http2::match_preface({data, n}) == http2::PrefaceMatch::No) {
    protocol_known_ = true;  // the common case: HTTP/1.1, nothing held
    return consume(data, n);
  }
  preface_.append(data, n);
  const auto match = http2::match_preface(preface_);
  if (match == http2::PrefaceMatch::Partial) return true;
  protocol_known_ = true;
  const std::string first = std::move(preface_);
  preface_.clear();
  if (match == http2::PrefaceMatch::No) return consume(first.data(), first.size());
  const auto& config = ctx_.config;
  http2::Limits limits;
  limits.request = ctx_.parser_limits;
  limits.max_concurrent_streams = static_cast<std::uint32_t>(config.max_pipeline);
  limits.body_memory = config.http2_body_memory;
  h2_ = std::make_unique<Http2Link>(*this, ctx_, limits);
  sink_ = h2_.get();
  return consume_h2(first.data(), first.size());
}

bool Connection::consume_h2(const char* data, std::size_t n) {
  const bool more = h2_->receive({data, n}, last_input_);
  mark_dirty();
  if (!more) read_closed_ = true;
  return more && !closed_;
}

void Connection::pump_h2() {
  const std::size_t bound = ctx_.config.output_buffer;
  if (backlog() < bound) {
    h2_->produce(out_.tail(), out_.tail().size() + (bound - backlog()));
    out_.seal();
  }
  if (h2_->done()) close_after_write_ = true;
}

void Connection::read_available() {
  if (proxy_header_ && !read_proxy_header()) return;
  for (;;) {
    if (must_pause()) {
      // Backpressure: too many requests in flight on this connection, or
      // too much output the client has not taken; read again when
      // responses drain.
      read_paused_ = true;
      return;
    }
    const ssize_t n = socket_.read_some(read_buffer(), kReadBuffer);
    if (n > 0) {
      last_input_ = std::chrono::steady_clock::now();
      if (!consume(read_buffer(), static_cast<std::size_t>(n))) return;
      // A short read emptied the socket buffer: the next arrival raises a
      // new edge. (TLS keeps records of its own: read until it would block.)
      if (!socket_.tls() && static_cast<std::size_t>(n) < kReadBuffer) return;
      continue;
    }
    if (n == 0) return on_peer_closed(false);
    if (n == ClientSocket::kWouldBlock) return;
    return on_peer_closed(true);
  }
}

void Connection::send_continue() {
  // Only when nothing is owed to the client before it: an interim response
  // must not overtake the responses of earlier pipelined requests. (A client
  // that gets no 100 sends its body after its own short wait.)
  if (!http1_.empty() || !out_.empty() || writing_) return;
  static constexpr char kContinue[] = "HTTP/1.1 100 Continue\r\n\r\n";
  [[maybe_unused]] auto n = socket_.write_some(kContinue, sizeof kContinue - 1);
}

void Connection::on_peer_closed(bool error) {
  read_closed_ = true;
  peer_closed_ = true;
  if (h2_) return close();  // no WINDOW_UPDATE can come: nothing more would go
  if (error || (http1_.empty() && out_.empty())) return close();
  close_after_write_ = true;
  // As nginx takes it: a client that closed its side while it waits has
  // gone (a waiting coroutine is cancelled and answers 499). Answers that
  // come are still written, for a client that only shut down its sending.
  abandon_answers();
}

void Connection::abandon_answers() {
  if (abandoned_answers_ || !waiting()) return;
  abandoned_answers_ = true;
  ctx_.owner.answer_abandoned(*this, ConnectionOwner::kEverySlot);
}

void Connection::drain() {
  if (closed_) return;
  if (lingering_) return close();
  if (ws_) return ws_close(1001, "the server is stopping");
  if (h2_) {
    // GOAWAY: the streams taken are answered (reading goes on, for their
    // WINDOW_UPDATEs), then the connection closes.
    h2_->shutdown();
    return mark_dirty();
  }
  read_closed_ = true;
  pending_input_.clear();
  if (http1_.empty() && out_.empty() && !writing_) return close();
  http1_.close_after_last();
  close_after_write_ = true;
  mark_dirty();
}

bool Connection::client_may_still_send() {
  // A client that timed out gets no more of our time (nginx does not
  // linger after a timeout either): a slow one would hold the connection.
  if (peer_closed_ || timed_out_ || socket_.tls() || ctx_.draining) return false;
  if (input_refused_ || parser_.mid_message()) return true;
  // Unread bytes in the socket: a close now would reset the connection,
  // and the client could lose the answer with it.
  return socket_.has_unread_input();
}

void Connection::finish() {
  ::shutdown(socket_.fd(), SHUT_WR);
  if (!client_may_still_send()) return close();
  // Lingering close: the answer is out; what the client still sends is
  // read and dropped until it stops (EDRI_LINGERING_TIMEOUT) or for
  // EDRI_LINGERING_TIME in all, then the connection closes.
  lingering_ = true;
  read_closed_ = true;
  linger_until_ = std::chrono::steady_clock::now() + seconds(ctx_.config.lingering_time_s);
  last_input_ = std::chrono::steady_clock::now();
  discard_input();
}

void Connection::discard_input() {
  for (;;) {
    const ssize_t n = socket_.recv_raw(read_buffer(), kReadBuffer, 0);
    if (n > 0) {
      last_input_ = std::chrono::steady_clock::now();
      continue;
    }
    if (n == ClientSocket::kWouldBlock) return;
    return close();  // the client closed its side, or the socket failed
  }
}

void Connection::close() {
  if (closed_) return;
  closed_ = true;
  abandon_answers();
  lingering_ = false;
  out_.clear();
  report_held();
  http1_.drop();
  ws_commands_.clear();
  if (h2_) h2_->cancel_all();
  if (ws_) {
    ws_->detach();
    ws_.reset();
    ctx_.websocket.wants_poll();
  }
  ctx_.events.unwatch(socket_.fd());
  socket_.close();
  ctx_.owner.closed(*this);
}

}  // namespace edri::listener
