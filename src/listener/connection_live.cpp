// Connection, its live side: frames of live streams and pushes, shared by
// every subscriber they go to (shared_frame.hpp), whatever carries them,
// the bound on what a subscriber may leave unread, and the drains a live
// stream waits for.
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

bool Connection::append_shared(const SharedFrame& frame) {
  if (closed_) return false;
  if (backlog() + frame->size() > kSharedBacklogFactor * ctx_.config.output_buffer) {
    spdlog::info("closing connection {}: it does not read its messages ({} bytes unsent)", id_, backlog());
    close_lagging(1008, "too far behind: pushes piled up unread (8 x EDRI_OUTPUT_BUFFER)");
    return false;
  }
  out_.append_shared(frame);
  mark_dirty();
  return true;
}

void Connection::live_send(std::int32_t call, const SharedMessage& ws, const SharedFrame& sse) {
  codec_->live_send(call, ws, sse);
}

bool Connection::live_behind(std::int32_t call, std::uint64_t pass) {
  if (call != 0) return codec_->live_behind(call);
  if (stream_pass_ != pass) {
    stream_pass_ = pass;
    stream_behind_ = backlog() > 0;
  }
  return stream_behind_;
}

void Connection::live_want_drain(std::int32_t call) {
  if (call == 0) return want_drain();
  codec_->live_want_drain(call);
}

void Connection::push(std::uint64_t type, const SharedMessage& message) { codec_->push(type, message); }

void Connection::limit_send_buffer(int bytes) {
  if (!socket_.limit_send_buffer(bytes))
    spdlog::debug("connection {}: SO_SNDBUF {} refused: {}", id_, bytes, std::strerror(errno));
}

void Connection::want_drain() {
  stream_waiting_ = true;
  if (out_.empty()) mark_dirty();  // flush() then finds it drained
}

void Connection::close_lagging(std::uint16_t code, std::string_view reason) {
  if (closed_) return;
  if (!shed_) ctx_.counts.shed();  // once, though its close may be hurried
  shed_ = true;
  out_.drop_unsent();
  report_held();
  if (!codec_->close_with(code, reason)) close();
}

}  // namespace edri::listener
