// Connection, its WebSocket and live-stream side: the upgrade, command
// answers in order, pushes and stream frames (shared buffers), Server-Sent
// Events, and what Beast writes and reads (WebSocketSession::Owner).
#include <sys/socket.h>

#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstring>

#include "listener/connection.hpp"

namespace edri::listener {

namespace {
// A client that lets this many times EDRI_OUTPUT_BUFFER of shared frames
// pile up (it does not read its pushes or stream frames) is closed with
// 1008. They cannot wait for it: one publish goes to every subscriber, and
// the others must not wait for the slowest.
constexpr std::size_t kSharedBacklogFactor = 8;
}  // namespace

bool Connection::upgrade(const http::HttpRequest& req, std::string_view headers) {
  if (!http1_.empty()) return false;
  upgrade_request_ = req;
  upgrade_request_.body.clear();
  ws_ = std::make_shared<WebSocketSession>(ctx_.io, *this, ctx_.config.websocket_max_message,
                                           ctx_.config.websocket_deflate);
  sink_ = &ws_commands_;
  ws_->accept(upgrade_request_, headers);
  ctx_.websocket.wants_poll();
  return true;
}

void Connection::command_answered(std::string_view message) {
  if (ws_ && ws_->can_send()) append_message(message);
}

void Connection::append_message(std::string_view text) {
  std::string& out = out_.tail();
  if (deflate_bits_ && text.size() >= kDeflateMinBytes) {
    out.append(deflated_text_frame(text, deflate_bits_));
  } else {
    append_text_frame_header(out, text.size());
    out.append(text);
  }
  out_.seal();
  mark_dirty();
}

bool Connection::append_shared(const SharedFrame& frame) {
  if (backlog() + frame->size() > kSharedBacklogFactor * ctx_.config.output_buffer) {
    spdlog::info("closing connection {}: it does not read its messages ({} bytes unsent)", id_, backlog());
    close_lagging(1008, "too far behind: pushes piled up unread (8 x EDRI_OUTPUT_BUFFER)");
    return false;
  }
  out_.append_shared(frame);
  mark_dirty();
  return true;
}

void Connection::ws_send(const SharedMessage& message) {
  if (!ws_ || !ws_->can_send() || closed_) return;
  if (append_shared(message->frame(deflate_bits_))) update_ws_flow();
}

void Connection::stream_send(const SharedFrame& frame) {
  if (events_ && !closed_) append_shared(frame);
}

void Connection::live_send(std::int32_t call, const SharedMessage& ws, const SharedFrame& sse) {
  if (call != 0) {
    if (h2_) h2_->live_frame(call, sse ? std::string_view(*sse) : ws->payload());
  } else if (ws) {
    ws_send(ws);
  } else {
    stream_send(sse);
  }
}

bool Connection::live_behind(std::int32_t call, std::uint64_t pass) {
  if (call != 0) return h2_ && h2_->live_behind(call);
  if (stream_pass_ != pass) {
    stream_pass_ = pass;
    stream_behind_ = backlog() > 0;
  }
  return stream_behind_;
}

void Connection::live_want_drain(std::int32_t call) {
  if (call == 0) return want_drain();
  if (h2_) h2_->live_want_drain(call);
}

void Connection::push(std::uint64_t type, const SharedMessage& message) {
  if (ws_) return ws_send(message);
  if (h2_) ctx_.grpc.grpc_push(*this, type, message->payload());
}

void Connection::limit_send_buffer(int bytes) {
  if (!socket_.limit_send_buffer(bytes))
    spdlog::debug("connection {}: SO_SNDBUF {} refused: {}", id_, bytes, std::strerror(errno));
}

void Connection::want_drain() {
  stream_waiting_ = true;
  if (out_.empty()) mark_dirty();  // flush() then finds it drained
}

AnswerSink::EventsCarrier Connection::start_events(std::uint32_t seq, std::string_view lines) {
  const auto carrier = sink_->open_events(seq, lines);
  if (carrier != AnswerSink::EventsCarrier::Connection) return carrier;
  events_ = true;
  stop_input();
  read_closed_ = false;  // still read, to see the client go (drop_events_input)
  return carrier;
}

void Connection::drop_events_input() {
  char buf[4096];
  for (;;) {
    const ssize_t n = socket_.read_some(buf, sizeof buf);
    if (n > 0) continue;
    if (n == ClientSocket::kWouldBlock) return;
    return close();  // the client went away
  }
}

void Connection::ws_close(std::uint16_t code, std::string reason) {
  if (!ws_) return;
  ws_->close(code, std::move(reason));
  ctx_.websocket.wants_poll();
}

void Connection::close_lagging(std::uint16_t code, std::string_view reason) {
  if (closed_) return;
  if (!shed_) ctx_.counts.shed();  // once, though its close may be hurried
  shed_ = true;
  out_.drop_unsent();
  report_held();
  if (!ws_ || !ws_->open()) return close();
  // Still read: Beast's close takes the client's close frame from there.
  ws_close(code, std::string(reason));
  mark_dirty();
}

void Connection::update_ws_flow() {
  if (!ws_) return;
  const auto& config = ctx_.config;
  if (ws_commands_.pending() >= config.max_pipeline || backlog() > config.output_buffer) {
    ws_->pause();
  } else if (ws_->paused()) {
    ws_->resume();
    ctx_.websocket.wants_poll();
  }
}

void Connection::ws_output(std::string_view bytes) {
  if (closed_) return;
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
  out_.append(bytes);
  mark_dirty();
}

void Connection::ws_message(std::string_view text) { ctx_.websocket.websocket_message(*this, text); }

void Connection::ws_starved() {
  // Beast took what was read: flush() reads again (never from inside
  // Beast's own call).
  if (read_paused_) mark_dirty();
}

void Connection::ws_ended() {
  read_closed_ = true;
  close_after_write_ = true;
  abandon_answers();
  ws_commands_.clear();
  if (out_.empty())
    close();
  else
    mark_dirty();
}

}  // namespace edri::listener
