// FileBody: a byte range of an open file, the body of a response sent from
// disk (sendfile) instead of from memory. Owns the descriptor; moving it
// moves the ownership, destroying it closes the file.
//
// Never for the blob area: sendfile hands the socket references to the
// file's pages, not copies, so a blob freed and reused while its bytes
// still wait in the socket's queue would change what the client gets.
// Blobs are sent with send() from the mapping (Connection's blob pieces).
#pragma once

#include <cstdint>
#include <utility>

#include "transport/unique_fd.hpp"

namespace edri::listener {

class FileBody {
 public:
  FileBody() = default;
  FileBody(UniqueFd fd, std::uint64_t offset, std::uint64_t length)
      : fd_(std::move(fd)), offset_(offset), remaining_(length) {}
  FileBody(FileBody&& o) noexcept
      : fd_(std::move(o.fd_)), offset_(o.offset_), remaining_(std::exchange(o.remaining_, 0)) {}
  FileBody& operator=(FileBody&& o) noexcept {
    if (this != &o) {
      fd_ = std::move(o.fd_);
      offset_ = o.offset_;
      remaining_ = std::exchange(o.remaining_, 0);
    }
    return *this;
  }

  explicit operator bool() const { return static_cast<bool>(fd_); }
  int fd() const { return fd_.get(); }
  std::uint64_t offset() const { return offset_; }
  std::uint64_t remaining() const { return remaining_; }
  // `n` bytes of the range were sent.
  void advance(std::uint64_t n) {
    offset_ += n;
    remaining_ -= n;
  }
  void reset() {
    fd_.reset();
    remaining_ = 0;
  }

 private:
  UniqueFd fd_;
  std::uint64_t offset_ = 0;
  std::uint64_t remaining_ = 0;
};

}  // namespace edri::listener
