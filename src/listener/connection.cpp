#include "listener/connection.hpp"

#include <sys/socket.h>

#include <sys/epoll.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <spdlog/spdlog.h>

#include "http2/preface.hpp"
#include "listener/http1_codec.hpp"
#include "listener/http2_codec.hpp"
#include "listener/websocket_codec.hpp"

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
}  // namespace

Connection::Connection(ConnectionContext& ctx, UniqueFd fd, std::uint32_t id, std::uint32_t generation,
                       const TlsContext* tls)
    : ctx_(ctx),
      socket_(std::move(fd), tls),
      id_(id),
      generation_(generation),
      codec_(std::make_unique<Http1Codec>(host(), ctx)) {}

Connection::~Connection() = default;

void Connection::start() {
  ctx_.events.watch(socket_.fd(), EPOLLIN | EPOLLOUT | EPOLLRDHUP, [this](std::uint32_t ev) { on_events(ev); });
  // Data that arrived before the registration raised no edge: look now.
  read_available();
}

std::uint32_t Connection::open_slot(bool keep_alive, bool http10, bool head, std::string_view headers,
                                    std::uint32_t route, std::unique_ptr<AccessRecord> access) {
  return answers().open(SlotInfo{
      keep_alive, http10, head, route, std::chrono::steady_clock::now(), std::string(headers), {}, std::move(access)});
}

bool Connection::upgrade(const http::HttpRequest& req, std::string_view headers) {
  if (codec_->answers_owed() || next_codec_) return false;
  next_codec_ = std::make_unique<WebSocketCodec>(host(), ctx_, req, headers);
  return true;
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
  if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
    if (read_paused_ || read_closed_) return;  // read later, when resumed
    read_available();
  }
}

void Connection::resume_reading() {
  if (!read_paused_ || read_closed_ || closed_ || must_pause()) return;
  read_paused_ = false;
  // The client was not read meanwhile: the body timeout counts from now.
  last_input_ = std::chrono::steady_clock::now();
  // First what was read past the request the codec paused after.
  if (!after_codec(codec_->resume(last_input_))) return;
  // Edges that came while paused were consumed: read speculatively.
  read_available();
}

bool Connection::consume(std::string_view bytes) {
  if (!protocol_known_) return choose_protocol(bytes);
  return after_codec(codec_->receive(bytes, last_input_));
}

bool Connection::after_codec(bool more) {
  if (!next_codec_) return more;
  // The codec that read the upgrade request has returned: it may go.
  codec_ = std::move(next_codec_);
  if (closed_) {
    codec_->cancel();
    return false;
  }
  const std::string rest = std::move(handed_over_);
  handed_over_.clear();
  return consume(rest);
}

bool Connection::choose_protocol(std::string_view bytes) {
  if (preface_.empty() && http2::match_preface(bytes) == http2::PrefaceMatch::No) {
    protocol_known_ = true;  // the common case: HTTP/1.1, nothing held
    return consume(bytes);
  }
  preface_.append(bytes);
  const auto match = http2::match_preface(preface_);
  if (match == http2::PrefaceMatch::Partial) return true;
  protocol_known_ = true;
  const std::string first = std::move(preface_);
  preface_.clear();
  if (match == http2::PrefaceMatch::Whole) codec_ = std::make_unique<Http2Codec>(host(), ctx_);
  return consume(first);
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
      if (!consume({read_buffer(), static_cast<std::size_t>(n)})) return;
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

void Connection::write_interim(std::string_view bytes) {
  if (!out_.empty() || writing_) return;
  [[maybe_unused]] auto n = socket_.write_some(bytes.data(), bytes.size());
}

void Connection::on_peer_closed(bool error) {
  read_closed_ = true;
  peer_closed_ = true;
  if (error || codec_->ends_with_client() || (!codec_->answers_owed() && out_.empty())) return close();
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
  codec_->go_away();
}

void Connection::drain_gently() {
  if (closed_) return;
  if (lingering_) return close();
  codec_->go_away_gently();
}

// The lingering close and the PROXY protocol header here; the protocol's
// own limits (the header, body and keep-alive timeouts, a WebSocket close
// the client does not answer) in its codec.
void Connection::apply_idle_limits(std::chrono::steady_clock::time_point now) {
  if (closed_) return;
  const auto& config = ctx_.config;
  if (lingering_) {
    if (now > linger_until_ || now - last_input_ > seconds(config.lingering_timeout_s)) close();
    return;
  }
  if (proxy_header_) {
    // Counted from the accept, not from the last byte: a header trickled
    // in gets no more time than a silent one.
    if (now - last_input_ > seconds(config.header_timeout_s))
      refuse_proxy_header("no whole PROXY protocol header within EDRI_HEADER_TIMEOUT");
    return;
  }
  codec_->check_time(now);
}

bool Connection::client_may_still_send() {
  // A client that timed out gets no more of our time (nginx does not
  // linger after a timeout either): a slow one would hold the connection.
  if (peer_closed_ || timed_out_ || socket_.tls() || ctx_.draining) return false;
  if (codec_->input_left()) return true;
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
  codec_->cancel();
  ctx_.events.unwatch(socket_.fd());
  socket_.close();
  ctx_.owner.closed(*this);
}

}  // namespace edri::listener
