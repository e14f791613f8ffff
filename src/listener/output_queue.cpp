#include "listener/output_queue.hpp"

#include <unistd.h>

#include <algorithm>

namespace edri::listener {

namespace {
// The tail is moved into the queue as one piece once it holds this much
// unsent: a client that falls behind then holds whole pieces that can be
// dropped, not one string begun long ago.
constexpr std::size_t kSealBytes = 64 * 1024;
// A shared frame under this is copied next to the bytes around it; above,
// the shared buffer itself is queued.
constexpr std::size_t kCopySharedBelow = 4096;
// TLS reads a file in chunks of this for SSL_write.
constexpr std::uint64_t kTlsFileChunk = 64 * 1024;
// One sendfile() call sends at most this.
constexpr std::uint64_t kSendFileMax = 1u << 30;
}  // namespace

std::string_view OutputQueue::Piece::data() const {
  if (const auto* s = std::get_if<std::string>(&body)) return *s;
  if (const auto* f = std::get_if<SharedFrame>(&body)) return **f;
  if (const auto* b = std::get_if<transport::BlobLease>(&body)) return b->view();
  return {};
}

void OutputQueue::append(Piece p) {
  const auto* bytes = std::get_if<std::string>(&p.body);
  if (bytes && p.credit == 0) {
    grown_tail() += *bytes;
    return;
  }
  if (tail_off_ < tail_.size()) {
    queued_bytes_ += tail_.size() - tail_off_;
    queue_.push_back(Piece{std::move(tail_), tail_off_});
  }
  tail_.clear();
  tail_off_ = 0;
  queued_bytes_ += p.unsent();
  if (std::holds_alternative<transport::BlobLease>(p.body)) queued_blob_bytes_ += p.unsent();
  queue_.push_back(std::move(p));
}

void OutputQueue::append_shared(const SharedFrame& frame) {
  if (frame->size() >= kCopySharedBelow) return append(Piece{frame});
  grown_tail() += *frame;
  seal();
}

void OutputQueue::seal() {
  if (tail_.size() - tail_off_ < kSealBytes) return;
  queued_bytes_ += tail_.size() - tail_off_;
  queue_.push_back(Piece{std::move(tail_), tail_off_});
  tail_.clear();
  tail_off_ = 0;
}

void OutputQueue::drop_unsent() {
  if (queue_.empty()) {
    if (tail_off_ == 0) tail_.clear();  // else begun: it goes out whole
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
  tail_.clear();
  tail_off_ = 0;
}

void OutputQueue::clear() {
  queue_.clear();
  queue_.shrink_to_fit();
  queued_bytes_ = 0;
  queued_blob_bytes_ = 0;
  tail_.clear();
  tail_off_ = 0;
}

OutputQueue::Written OutputQueue::write_tail(ClientSocket& socket, bool& progress) {
  while (tail_off_ < tail_.size()) {
    const ssize_t n = socket.write_some(tail_.data() + tail_off_, tail_.size() - tail_off_);
    if (n == ClientSocket::kWouldBlock) return Written::Blocked;
    if (n <= 0) return Written::Failed;
    tail_off_ += static_cast<std::size_t>(n);
    progress = true;
  }
  // Kept up to its first allocation; a larger one goes back: an idle
  // WebSocket session kept the ~1 KB its subscriptions' snapshots grew it to.
  if (tail_.capacity() > kFirstTailBytes)
    std::string().swap(tail_);
  else
    tail_.clear();
  tail_off_ = 0;
  return Written::All;
}

void OutputQueue::count_out(const Piece& p, std::size_t n) {
  queued_bytes_ -= n;
  if (std::holds_alternative<transport::BlobLease>(p.body)) queued_blob_bytes_ -= n;
}

OutputQueue::Written OutputQueue::write_piece(ClientSocket& socket, Piece& p, bool& progress) {
  if (auto* f = std::get_if<FileBody>(&p.body)) return write_file(socket, *f, progress);
  // A blob goes out with send() from the mapping: copied into the socket,
  // so it can be freed as soon as it is written (see file_body.hpp).
  const std::string_view data = p.data();
  while (p.off < data.size()) {
    const ssize_t n = socket.write_some(data.data() + p.off, data.size() - p.off);
    if (n == ClientSocket::kWouldBlock) return Written::Blocked;
    if (n <= 0) return Written::Failed;
    p.off += static_cast<std::size_t>(n);
    count_out(p, static_cast<std::size_t>(n));
    progress = true;
  }
  return Written::All;
}

OutputQueue::Written OutputQueue::write_file(ClientSocket& socket, FileBody& f, bool& progress) {
  if (socket.tls()) return write_file_tls(socket, f, progress);
  while (f.remaining() > 0) {
    off_t offset = static_cast<off_t>(f.offset());
    const ssize_t n = socket.send_file(f.fd(), offset, static_cast<std::size_t>(std::min(f.remaining(), kSendFileMax)));
    if (n == ClientSocket::kWouldBlock) return Written::Blocked;
    if (n <= 0) return Written::Failed;  // 0: the file shrank; the promised length cannot be sent
    f.advance(static_cast<std::uint64_t>(n));
    progress = true;
  }
  f.reset();
  return Written::All;
}

OutputQueue::Written OutputQueue::write_file_tls(ClientSocket& socket, FileBody& f, bool& progress) {
  // TLS encrypts in user space: read a bounded chunk, write it whole
  // (SSL_write retries with the same bytes) before reading the next.
  while (f.remaining() > 0) {
    if (file_chunk_off_ == file_chunk_.size()) {
      file_chunk_.resize(static_cast<std::size_t>(std::min(f.remaining(), kTlsFileChunk)));
      const ssize_t r = ::pread(f.fd(), file_chunk_.data(), file_chunk_.size(), static_cast<off_t>(f.offset()));
      if (r <= 0) return Written::Failed;  // the file shrank or failed: the promised length cannot be sent
      file_chunk_.resize(static_cast<std::size_t>(r));
      file_chunk_off_ = 0;
    }
    const ssize_t n = socket.write_some(file_chunk_.data() + file_chunk_off_, file_chunk_.size() - file_chunk_off_);
    if (n == ClientSocket::kWouldBlock) return Written::Blocked;
    if (n <= 0) return Written::Failed;
    file_chunk_off_ += static_cast<std::size_t>(n);
    progress = true;
    if (file_chunk_off_ < file_chunk_.size()) continue;
    f.advance(file_chunk_.size());
    file_chunk_.clear();
    file_chunk_off_ = 0;
  }
  f.reset();
  return Written::All;
}

}  // namespace edri::listener
