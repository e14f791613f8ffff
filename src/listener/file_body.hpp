// FileBody: a byte range of an open file, the body of a response sent from
// disk (sendfile) instead of from memory. Owns the descriptor; moving it
// moves the ownership, destroying it closes the file.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <functional>
#include <utility>

#include "transport/blob_arena.hpp"

namespace edri::listener {

class FileBody {
 public:
  FileBody() = default;
  // `on_done` runs once when the body is sent or dropped (a blob's release).
  FileBody(int fd, std::uint64_t offset, std::uint64_t length, std::function<void()> on_done = {})
      : fd_(fd), offset_(offset), remaining_(length), on_done_(std::move(on_done)) {}
  FileBody(FileBody&& o) noexcept
      : fd_(std::exchange(o.fd_, -1)),
        offset_(o.offset_),
        remaining_(std::exchange(o.remaining_, 0)),
        on_done_(std::exchange(o.on_done_, {})) {}
  FileBody& operator=(FileBody&& o) noexcept {
    if (this != &o) {
      reset();
      fd_ = std::exchange(o.fd_, -1);
      offset_ = o.offset_;
      remaining_ = std::exchange(o.remaining_, 0);
      on_done_ = std::exchange(o.on_done_, {});
    }
    return *this;
  }
  FileBody(const FileBody&) = delete;
  FileBody& operator=(const FileBody&) = delete;
  ~FileBody() { reset(); }

  // The blob `lease` holds, sent from the blob area's memfd; the body takes
  // the blob over and frees it when done. An empty body, and the lease
  // kept, when no descriptor is left.
  static FileBody of_blob(transport::BlobLease& lease) {
    const int fd = ::fcntl(lease.arena()->fd(), F_DUPFD_CLOEXEC, 0);
    if (fd < 0) return {};
    auto* arena = lease.arena();
    const auto h = lease.take();
    return FileBody(fd, arena->offset(h), h.length, [arena, h] { arena->release(h); });
  }

  explicit operator bool() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  std::uint64_t offset() const { return offset_; }
  std::uint64_t remaining() const { return remaining_; }
  // `n` bytes of the range were sent.
  void advance(std::uint64_t n) {
    offset_ += n;
    remaining_ -= n;
  }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    remaining_ = 0;
    if (auto done = std::exchange(on_done_, {})) done();
  }

 private:
  int fd_ = -1;
  std::uint64_t offset_ = 0;
  std::uint64_t remaining_ = 0;
  std::function<void()> on_done_;
};

}  // namespace edri::listener
