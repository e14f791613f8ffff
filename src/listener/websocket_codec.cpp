#include "listener/websocket_codec.hpp"

#include <spdlog/spdlog.h>

#include "listener/connection.hpp"

namespace edri::listener {

namespace {
// Bytes read from the client and not yet taken by Beast before the
// connection stops reading: enough for Beast to always have the next bytes
// of a message, never a pile of commands the client sent ahead.
constexpr std::size_t kInputAhead = 64 * 1024;
}  // namespace

WebSocketCodec::WebSocketCodec(CodecHost& host, ConnectionContext& ctx, const http::HttpRequest& req,
                               std::string_view headers)
    : host_(host),
      ctx_(ctx),
      upgrade_request_(req),
      session_(std::make_shared<WebSocketSession>(ctx.io, *this, ctx.config.websocket_max_message,
                                                  ctx.config.websocket_deflate)) {
  upgrade_request_.body.clear();
  session_->accept(upgrade_request_, headers);
  ctx_.websocket.wants_poll();
}

WebSocketCodec::~WebSocketCodec() {
  if (session_) session_->detach();
}

bool WebSocketCodec::receive(std::string_view bytes, Clock::time_point) {
  session_->feed(bytes.data(), bytes.size());
  ctx_.websocket.wants_poll();
  return !host_.closed() && !host_.reading_stopped();
}

bool WebSocketCodec::must_pause(std::size_t) const {
  // Commands and output are held back by pausing the session
  // (update_flow); what is read meanwhile stays in its pipe.
  return session_ && session_->input_backlog() > kInputAhead;
}

void WebSocketCodec::check_time(Clock::time_point now) {
  // This side closed: once its close frame is out (until then
  // EDRI_WRITE_TIMEOUT applies), the client has EDRI_LINGERING_TIMEOUT
  // to answer it (RFC 6455 7.1.1: the server ends the TCP connection).
  if (!session_ || session_->close_sent_at() == Clock::time_point{} || !host_.output().empty()) return;
  if (close_out_at_ == Clock::time_point{}) close_out_at_ = now;
  if (now - close_out_at_ > seconds(ctx_.config.lingering_timeout_s)) {
    spdlog::debug("closing WebSocket connection {}: its client did not answer the close", host_.connection().id());
    host_.close();
  }
}

void WebSocketCodec::cancel() {
  commands_.clear();
  if (!session_) return;
  session_->detach();
  session_.reset();
  ctx_.websocket.wants_poll();
}

void WebSocketCodec::close(std::uint16_t code, std::string reason) {
  if (!session_) return;
  session_->close(code, std::move(reason));
  ctx_.websocket.wants_poll();
}

bool WebSocketCodec::close_with(std::uint16_t code, std::string_view reason) {
  if (!session_ || !session_->open()) return false;
  // Still read: Beast's close takes the client's close frame from there.
  close(code, std::string(reason));
  host_.output_ready();
  return true;
}

void WebSocketCodec::send(const SharedMessage& message) {
  if (!session_ || !session_->can_send() || host_.closed()) return;
  if (host_.append_shared(message->frame(deflate_bits_))) update_flow();
}

void WebSocketCodec::live_send(std::int32_t call, const SharedMessage& ws, const SharedFrame&) {
  if (call == 0 && ws) send(ws);
}

void WebSocketCodec::command_answered(std::string_view message) {
  if (session_ && session_->can_send()) append_message(message);
}

void WebSocketCodec::append_message(std::string_view text) {
  OutputQueue& out = host_.output();
  std::string& tail = out.tail();
  if (deflate_bits_ && text.size() >= kDeflateMinBytes) {
    tail.append(deflated_text_frame(text, deflate_bits_));
  } else {
    append_text_frame_header(tail, text.size());
    tail.append(text);
  }
  out.seal();
  host_.output_ready();
}

void WebSocketCodec::update_flow() {
  if (!session_) return;
  const auto& config = ctx_.config;
  if (commands_.pending() >= config.max_pipeline || host_.output().backlog() > config.output_buffer) {
    session_->pause();
  } else if (session_->paused()) {
    session_->resume();
    ctx_.websocket.wants_poll();
  }
}

void WebSocketCodec::ws_output(std::string_view bytes) {
  if (host_.closed()) return;
  if (!handshake_written_) {
    // Beast's first output is its answer to the handshake (in pieces):
    // what it agreed to is in the head.
    handshake_.append(bytes);
    if (handshake_.find("\r\n\r\n") != std::string::npos) {
      handshake_written_ = true;
      deflate_bits_ = agreed_deflate_bits(handshake_);
      std::string().swap(handshake_);
    }
  }
  host_.output().append(bytes);
  host_.output_ready();
}

void WebSocketCodec::ws_message(std::string_view text) { ctx_.websocket.websocket_message(host_.connection(), text); }

void WebSocketCodec::ws_starved() {
  // Beast took what was read: the connection reads again at its next
  // flush (never from inside Beast's own call).
  if (host_.reading_paused()) host_.output_ready();
}

void WebSocketCodec::ws_ended() {
  host_.stop_reading();
  host_.end_after_output();
  host_.abandon_answers();
  commands_.clear();
  if (host_.output().empty())
    host_.close();
  else
    host_.output_ready();
}

}  // namespace edri::listener
