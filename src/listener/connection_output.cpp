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
  codec_->produce();
  if (!writing_) write_out();
  // What the codec held back past the output bound (HTTP/2's frames),
  // while the socket takes it.
  while (!closed_ && !lingering_ && !writing_ && out_.empty() && codec_->wants_write()) {
    codec_->produce();
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
  if (!closed_) codec_->output_taken();
  // Output drained, or the codec took what was read: the client may be
  // read again (resume_reading checks the bounds).
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
  if (close_after_write_ && !codec_->answers_owed()) finish();
}

}  // namespace edri::listener
