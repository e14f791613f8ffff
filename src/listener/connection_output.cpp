// Connection: the writing of what it owes its client (OutputQueue), once a
// turn, and what follows from it: reading resumes, streams hear that their
// client took their bytes, the connection ends after its last answer.
#include "listener/connection.hpp"

namespace edri::listener {

void Connection::report_held() {
  const std::size_t now = held_bytes();
  if (now == reported_held_) return;
  ctx_.counts.held_changed(reported_held_, now);
  reported_held_ = now;
}

void Connection::flush() {
  dirty = false;
  if (closed_ || lingering_) return;
  if (h2_) pump_h2();
  if (!writing_) write_out();
  // HTTP/2: what the session held back past the output bound, while the
  // socket takes it.
  while (h2_ && !closed_ && !lingering_ && !writing_ && out_.empty() && h2_->wants_write()) {
    pump_h2();
    if (out_.empty()) break;
    write_out();
  }
  if (closed_ || lingering_) return;
  if (stream_waiting_ && out_.empty()) {
    stream_waiting_ = false;
    ctx_.live.stream_drained(*this);
    if (!writing_ && !closed_) write_out();
  }
  report_held();
  update_ws_flow();
  // Output drained, or Beast took what was read: the client may be read
  // again (resume_reading checks the bounds).
  if (read_paused_) resume_reading();
}

void Connection::write_out() {
  bool progress = false;
  const auto written = out_.write(socket_, progress, [this](const StreamRef& ref, std::uint32_t bytes) {
    ctx_.producers.stream_credit(ref, bytes);  // the client took a piece of a stream: its producer may make more
  });
  if (written == OutputQueue::Written::Failed) return close();
  if (written == OutputQueue::Written::Blocked) {
    writing_ = true;  // EPOLLOUT will say when to go on
    if (progress || stalled_since_ == std::chrono::steady_clock::time_point{})
      stalled_since_ = std::chrono::steady_clock::now();
    return;
  }
  stalled_since_ = {};
  if (close_after_write_ && http1_.empty()) finish();
}

}  // namespace edri::listener
