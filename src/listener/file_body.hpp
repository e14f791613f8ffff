// FileBody: a byte range of an open file, the body of a response sent from
// disk (sendfile) instead of from memory. Owns the descriptor; moving it
// moves the ownership, destroying it closes the file.
//
// Never for the blob area: sendfile hands the socket references to the
// file's pages, not copies, so a blob freed and reused while its bytes
// still wait in the socket's queue would change what the client gets.
// Blobs are sent with send() from the mapping (Connection's blob pieces).
#pragma once

#include <unistd.h>

#include <cstdint>
#include <utility>

namespace edri::listener {

class FileBody {
 public:
  FileBody() = default;
  FileBody(int fd, std::uint64_t offset, std::uint64_t length) : fd_(fd), offset_(offset), remaining_(length) {}
  FileBody(FileBody&& o) noexcept
      : fd_(std::exchange(o.fd_, -1)), offset_(o.offset_), remaining_(std::exchange(o.remaining_, 0)) {}
  FileBody& operator=(FileBody&& o) noexcept {
    if (this != &o) {
      reset();
      fd_ = std::exchange(o.fd_, -1);
      offset_ = o.offset_;
      remaining_ = std::exchange(o.remaining_, 0);
    }
    return *this;
  }
  FileBody(const FileBody&) = delete;
  FileBody& operator=(const FileBody&) = delete;
  ~FileBody() { reset(); }

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
  }

 private:
  int fd_ = -1;
  std::uint64_t offset_ = 0;
  std::uint64_t remaining_ = 0;
};

}  // namespace edri::listener
