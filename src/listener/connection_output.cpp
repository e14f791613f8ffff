// Connection: what it owes its client, and the writing of it. The queue of
// pieces comes before out_, out_ collects plain bytes at the end; both in
// the order they were added.
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "listener/connection.hpp"

namespace edri::listener {

namespace {
// out_ is moved into the queue as one piece once it holds this much
// unsent: a client that falls behind then holds whole pieces that can be
// dropped, not one string begun long ago.
constexpr std::size_t kSealBytes = 64 * 1024;
}  // namespace

std::string_view Connection::Piece::data() const {
  if (const auto* s = std::get_if<std::string>(&body)) return *s;
  if (const auto* f = std::get_if<SharedFrame>(&body)) return **f;
  if (const auto* b = std::get_if<transport::BlobLease>(&body)) return b->view();
  return {};
}

void Connection::append_piece(Piece p) {
  const auto* bytes = std::get_if<std::string>(&p.body);
  if (bytes && p.credit == 0) {
    out_ += *bytes;
    return;
  }
  if (out_off_ < out_.size()) {
    queued_bytes_ += out_.size() - out_off_;
    queue_.push_back(Piece{std::move(out_), out_off_});
  }
  out_.clear();
  out_off_ = 0;
  queued_bytes_ += p.unsent();
  if (std::holds_alternative<transport::BlobLease>(p.body)) queued_blob_bytes_ += p.unsent();
  queue_.push_back(std::move(p));
}

void Connection::append_file(FileBody file) {
  append_piece(Piece{std::move(file)});
  mark_dirty();
}

void Connection::append_frame(std::string_view frame) {
  out_.append(frame);
  seal_out();
  mark_dirty();
}

void Connection::append_message(std::string_view text) {
  if (deflate_bits_ && text.size() >= kDeflateMinBytes) {
    out_.append(deflated_text_frame(text, deflate_bits_));
  } else {
    append_text_frame_header(out_, text.size());
    out_.append(text);
  }
  seal_out();
  mark_dirty();
}

void Connection::seal_out() {
  if (out_.size() - out_off_ < kSealBytes) return;
  queued_bytes_ += out_.size() - out_off_;
  queue_.push_back(Piece{std::move(out_), out_off_});
  out_.clear();
  out_off_ = 0;
}

void Connection::drop_unsent() {
  if (queue_.empty()) {
    if (out_off_ == 0) out_.clear();  // else begun: it goes out whole
    return;
  }
  // The front piece may be partly written; everything after it is whole.
  const Piece& front = queue_.front();
  const bool begun = front.off > 0 || std::holds_alternative<FileBody>(front.body);
  while (queue_.size() > (begun ? 1u : 0u)) {
    const Piece& p = queue_.back();
    queued_bytes_ -= p.unsent();
    if (std::holds_alternative<transport::BlobLease>(p.body)) queued_blob_bytes_ -= p.unsent();
    queue_.pop_back();
  }
  out_.clear();
  out_off_ = 0;
}

void Connection::report_held() {
  const std::size_t now = held_bytes();
  if (now == reported_held_) return;
  owner_.held_changed(reported_held_, now);
  reported_held_ = now;
}

void Connection::flush() {
  dirty = false;
  if (closed_ || lingering_) return;
  if (h2_) pump_h2();
  if (!writing_) write_out();
  // HTTP/2: what the session held back past the output bound, while the
  // socket takes it.
  while (h2_ && !closed_ && !lingering_ && !writing_ && output_empty() && h2_->wants_write()) {
    pump_h2();
    if (output_empty()) break;
    write_out();
  }
  if (closed_ || lingering_) return;
  if (stream_waiting && output_empty()) {
    stream_waiting = false;
    owner_.stream_drained(*this);
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
  auto wait_writable = [&] {
    writing_ = true;  // EPOLLOUT will say when to go on
    if (progress || stalled_since_ == std::chrono::steady_clock::time_point{})
      stalled_since_ = std::chrono::steady_clock::now();
  };
  while (!queue_.empty()) {
    if (!write_piece(queue_.front(), progress)) {
      if (!closed_) wait_writable();
      return;
    }
    // The client took a piece of a stream: its producer may make more.
    if (queue_.front().credit) owner_.stream_credit(queue_.front().stream, queue_.front().credit);
    queue_.pop_front();
  }
  while (out_off_ < out_.size()) {
    const ssize_t n = write_some(out_.data() + out_off_, out_.size() - out_off_);
    if (n > 0) {
      out_off_ += static_cast<std::size_t>(n);
      progress = true;
      continue;
    }
    if (n == TlsSession::kWouldBlock) return wait_writable();
    return close();
  }
  stalled_since_ = {};
  out_.clear();
  out_off_ = 0;
  if (close_after_write_ && slots_.empty()) finish();
}

bool Connection::write_piece(Piece& p, bool& progress) {
  if (auto* f = std::get_if<FileBody>(&p.body)) return write_file(*f, progress);
  // A blob goes out with send() from the mapping: copied into the socket,
  // so it can be freed as soon as it is written (see file_body.hpp).
  const std::string_view data = p.data();
  const bool blob = std::holds_alternative<transport::BlobLease>(p.body);
  while (p.off < data.size()) {
    const ssize_t n = write_some(data.data() + p.off, data.size() - p.off);
    if (n == TlsSession::kWouldBlock) return false;
    if (n <= 0) {
      close();
      return false;
    }
    const auto written = static_cast<std::size_t>(n);
    p.off += written;
    queued_bytes_ -= written;
    if (blob) queued_blob_bytes_ -= written;
    progress = true;
  }
  return true;
}

bool Connection::write_file(FileBody& f, bool& progress) {
  while (f.remaining() > 0) {
    if (tls_) {
      // TLS encrypts in user space: read a bounded chunk, write it whole
      // (SSL_write retries with the same bytes) before reading the next.
      if (file_chunk_off_ == file_chunk_.size()) {
        file_chunk_.resize(static_cast<std::size_t>(std::min<std::uint64_t>(f.remaining(), 64 * 1024)));
        const ssize_t r = ::pread(f.fd(), file_chunk_.data(), file_chunk_.size(), static_cast<off_t>(f.offset()));
        if (r <= 0) {  // the file shrank or failed: the promised length cannot be sent
          close();
          return false;
        }
        file_chunk_.resize(static_cast<std::size_t>(r));
        file_chunk_off_ = 0;
      }
      const ssize_t n = write_some(file_chunk_.data() + file_chunk_off_, file_chunk_.size() - file_chunk_off_);
      if (n == TlsSession::kWouldBlock) return false;
      if (n <= 0) {
        close();
        return false;
      }
      file_chunk_off_ += static_cast<std::size_t>(n);
      progress = true;
      if (file_chunk_off_ == file_chunk_.size()) {
        f.advance(file_chunk_.size());
        file_chunk_.clear();
        file_chunk_off_ = 0;
      }
      continue;
    }
    off_t offset = static_cast<off_t>(f.offset());
    const ssize_t n = ::sendfile(fd_.get(), f.fd(), &offset,
                                 static_cast<std::size_t>(std::min<std::uint64_t>(f.remaining(), 1u << 30)));
    if (n > 0) {
      f.advance(static_cast<std::uint64_t>(n));
      progress = true;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return false;
    close();  // 0: the file shrank; the promised length cannot be sent
    return false;
  }
  f.reset();
  return true;
}

}  // namespace edri::listener
