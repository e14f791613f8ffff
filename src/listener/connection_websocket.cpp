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
  if (!slots_.empty()) return false;
  upgrade_request_ = req;
  upgrade_request_.body.clear();
  ws_ = std::make_shared<WebSocketSession>(owner_.io(), *this, owner_.config().websocket_max_message,
                                           owner_.config().websocket_deflate);
  ws_->accept(upgrade_request_, headers);
  owner_.wants_poll();
  return true;
}

std::uint32_t Connection::ws_open_slot(std::string command) {
  ws_slots_.push_back(WsSlot{std::move(command), std::chrono::steady_clock::now(), false, {}});
  update_ws_flow();
  return ws_next_seq_++;
}

const std::string* Connection::ws_slot(std::uint32_t seq) const {
  const std::uint32_t idx = seq - ws_base_seq_;
  if (idx >= ws_slots_.size() || ws_slots_[idx].ready) return nullptr;
  return &ws_slots_[idx].command;
}

void Connection::ws_complete(std::uint32_t seq, std::string message) {
  const std::uint32_t idx = seq - ws_base_seq_;
  if (idx >= ws_slots_.size() || ws_slots_[idx].ready) return;
  ws_slots_[idx].ready = true;
  ws_slots_[idx].message = std::move(message);
  while (!ws_slots_.empty() && ws_slots_.front().ready) {
    if (ws_ && ws_->can_send()) append_message(ws_slots_.front().message);
    ws_slots_.pop_front();
    ++ws_base_seq_;
  }
  update_ws_flow();
}

bool Connection::append_shared(const SharedFrame& frame) {
  if (backlog() + frame->size() > kSharedBacklogFactor * owner_.config().output_buffer) {
    spdlog::info("closing connection {}: it does not read its messages ({} bytes unsent)", id_, backlog());
    close_lagging(1008, "too far behind: pushes piled up unread (8 x EDRI_OUTPUT_BUFFER)");
    return false;
  }
  // A small frame is copied next to the others; a large one is the shared
  // buffer itself.
  if (frame->size() < 4096)
    append_frame(*frame);
  else
    append_piece(Piece{frame});
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

void Connection::limit_send_buffer(int bytes) {
  if (::setsockopt(fd_.get(), SOL_SOCKET, SO_SNDBUF, &bytes, sizeof bytes) != 0)
    spdlog::debug("connection {}: SO_SNDBUF {} refused: {}", id_, bytes, std::strerror(errno));
}

void Connection::want_drain() {
  stream_waiting = true;
  if (output_empty()) mark_dirty();  // flush() then finds it drained
}

void Connection::start_events(std::uint32_t seq, std::string head) {
  complete(seq, [&](std::string& out) { out += head; });
  events_ = true;
  stop_input();
  read_closed_ = false;  // still read, to see the client go (drop_events_input)
}

void Connection::drop_events_input() {
  char buf[4096];
  for (;;) {
    const ssize_t n = read_some(buf, sizeof buf);
    if (n > 0) continue;
    if (n == TlsSession::kWouldBlock) return;
    return close();  // the client went away
  }
}

void Connection::ws_close(std::uint16_t code, std::string reason) {
  if (!ws_) return;
  ws_->close(code, std::move(reason));
  owner_.wants_poll();
}

void Connection::close_lagging(std::uint16_t code, std::string_view reason) {
  if (closed_) return;
  if (!shed_) owner_.shed();  // once, though its close may be hurried
  shed_ = true;
  drop_unsent();
  report_held();
  if (!ws_ || !ws_->open()) return close();
  // Still read: Beast's close takes the client's close frame from there.
  ws_close(code, std::string(reason));
  mark_dirty();
}

void Connection::update_ws_flow() {
  if (!ws_) return;
  const auto& config = owner_.config();
  if (ws_slots_.size() >= config.max_pipeline || backlog() > config.output_buffer) {
    ws_->pause();
  } else if (ws_->paused()) {
    ws_->resume();
    owner_.wants_poll();
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

void Connection::ws_message(std::string_view text) { owner_.websocket_message(*this, text); }

void Connection::ws_starved() {
  // Beast took what was read: flush() reads again (never from inside
  // Beast's own call).
  if (read_paused_) mark_dirty();
}

void Connection::ws_ended() {
  read_closed_ = true;
  close_after_write_ = true;
  abandon_answers();
  ws_slots_.clear();
  if (output_empty())
    close();
  else
    mark_dirty();
}

}  // namespace edri::listener
