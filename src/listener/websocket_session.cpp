#include "listener/websocket_session.hpp"

#include <boost/beast/http.hpp>

#include <algorithm>

#include <spdlog/spdlog.h>

#include "listener/websocket_frame.hpp"

namespace edri::listener {

namespace websocket = beast::websocket;
namespace bhttp = beast::http;

namespace {
// An idle session keeps the buffer of the client's bytes up to this (a
// command or two) and gives a larger one back.
constexpr std::size_t kKeptInputBytes = 256;
}  // namespace

WebSocketSession::WebSocketSession(asio::io_context& io, Owner& owner, std::size_t max_message, bool deflate)
    : ws_(io, pipe_), owner_(&owner) {
  if (deflate) {
    websocket::permessage_deflate pmd;
    pmd.server_enable = true;
    // Every message to the client compressed alone: one compression serves
    // all its subscribers, and no session keeps a compressor.
    pmd.server_no_context_takeover = true;
    // What the client sends is inflated by Beast, in a window of 2^10
    // bytes per session where the client lets the server choose (browsers
    // do), rather than 32 KiB.
    pmd.client_max_window_bits = 10;
    ws_.set_option(pmd);
  }
  pipe_.write = [this](std::string_view bytes) {
    if (owner_) owner_->ws_output(bytes);
  };
  pipe_.starved = [this] {
    if (owner_) owner_->ws_starved();
  };
  ws_.read_message_max(max_message);
  ws_.auto_fragment(false);
  ws_.control_callback([this](websocket::frame_type kind, beast::string_view) {
    if (kind == websocket::frame_type::close) on_close_frame();
  });
}

void WebSocketSession::accept(const http::HttpRequest& req, std::string_view headers) {
  bhttp::request<bhttp::empty_body> r;
  r.method(bhttp::verb::get);
  r.target(req.target);
  r.version(req.http_major * 10 + req.http_minor);
  for (const auto& [k, v] : req.headers) r.insert(k, v);
  // Header lines the listener's middleware added (request id, CORS).
  std::vector<std::pair<std::string, std::string>> extra;
  while (!headers.empty()) {
    const auto eol = headers.find("\r\n");
    const std::string_view line = headers.substr(0, eol);
    headers = eol == std::string_view::npos ? std::string_view{} : headers.substr(eol + 2);
    const auto colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    extra.emplace_back(std::string(line.substr(0, colon)), std::string(value));
  }
  ws_.set_option(websocket::stream_base::decorator([extra = std::move(extra)](websocket::response_type& res) {
    res.set(bhttp::field::server, "edri");
    for (const auto& [k, v] : extra) res.insert(k, v);
    // A refused handshake ends the connection: say so (RFC 9112 9.6).
    if (res.result() != bhttp::status::switching_protocols) res.set(bhttp::field::connection, "close");
  }));
  ws_.async_accept(r, [self = shared_from_this()](beast::error_code ec) {
    if (!self->owner_) return;
    if (ec) {
      // Beast answered the bad handshake (400, or 426 for a wrong version).
      spdlog::debug("websocket handshake refused: {}", ec.message());
      return self->end();
    }
    self->opened_ = true;
    self->read();
  });
}

void WebSocketSession::read() {
  if (reading_ || paused_ || ended_ || !opened_ || !owner_ || close_sent_) return;
  if (!pipe_.has_input() && !pipe_.eof && !pipe_.handed.holds()) {
    // Idle: no read waits and the message buffer goes (Beast's read takes
    // 1.5 KB as it starts, an idle session's largest part); feed() starts
    // the read when bytes come. What a waiting read would tell the owner:
    buffer_.shrink_to_fit();
    if (pipe_.in.capacity() > kKeptInputBytes) std::string().swap(pipe_.in);
    owner_->ws_starved();
    return;
  }
  reading_ = true;
  ws_.async_read(buffer_, [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_read(ec); });
}

void WebSocketSession::on_read(beast::error_code ec) {
  reading_ = false;
  if (!owner_) return;
  if (ec) {
    // websocket::error::closed: the client closed and Beast answered its
    // close frame. Other errors: Beast already sent the close code that
    // the violation calls for, or the client just went away.
    if (ec != websocket::error::closed && ec != asio::error::eof)
      spdlog::debug("websocket read ended: {}", ec.message());
    return end();
  }
  pipe_.handed.message_taken();
  if (!ws_.got_text()) {
    buffer_.consume(buffer_.size());
    return close(1003, "binary messages are not supported");
  }
  const auto data = buffer_.cdata();
  owner_->ws_message(std::string_view(static_cast<const char*>(data.data()), data.size()));
  buffer_.consume(buffer_.size());
  read();
}

void WebSocketSession::on_close_frame() {
  // Beast 1.74 takes any code from 3000 up, but RFC 6455 7.4.2 defines
  // none from 5000 on (Autobahn 7.9: fail with 1002). Beast is about to
  // echo the code: our 1002 goes first, and Beast's echo finds the stream
  // broken, which ends the read.
  const auto code = ws_.reason().code;
  if (code < 5000 || !owner_) return;
  closing_ = close_sent_ = true;
  close_sent_at_ = std::chrono::steady_clock::now();
  owner_->ws_output(close_frame(1002, "invalid close code"));
  pipe_.broken = true;
}

void WebSocketSession::close(std::uint16_t code, std::string reason) {
  if (closing_ || ended_ || !owner_) return;
  closing_ = true;
  close_reason_ = websocket::close_reason(
      static_cast<websocket::close_code>(code),
      beast::string_view(reason.data(), std::min<std::size_t>(reason.size(), 123)));  // a close frame holds 125 bytes
  if (!opened_) return end();
  start_close();
}

void WebSocketSession::start_close() {
  if (close_sent_) return;
  close_sent_ = true;
  close_sent_at_ = std::chrono::steady_clock::now();
  // Sends the close frame after everything written so far, waits for the
  // client's, then tears down.
  ws_.async_close(close_reason_, [self = shared_from_this()](beast::error_code) {
    if (self->owner_) self->end();
  });
}

void WebSocketSession::resume() {
  if (!paused_) return;
  paused_ = false;
  read();
}

void WebSocketSession::end() {
  if (ended_) return;
  ended_ = true;
  if (auto* o = owner_) o->ws_ended();
}

void WebSocketSession::detach() {
  owner_ = nullptr;
  ended_ = true;
  pipe_.end();  // a waiting read fails; its handler sees no owner
}

}  // namespace edri::listener
