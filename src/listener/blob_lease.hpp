// BlobLease: a blob the listener claimed (transport/blob_layout.hpp). It is
// freed when the lease ends, unless the lease became the FileBody that
// sends it, whose end frees it instead.
#pragma once

#include <fcntl.h>

#include <optional>
#include <string_view>
#include <utility>

#include "listener/file_body.hpp"
#include "transport/blob_arena.hpp"

namespace edri::listener {

class BlobLease {
 public:
  BlobLease(transport::BlobArena* arena, std::optional<transport::BlobHandle> handle)
      : arena_(arena), handle_(handle) {}
  ~BlobLease() {
    if (arena_ && handle_) arena_->release(*handle_);
  }
  BlobLease(const BlobLease&) = delete;
  BlobLease& operator=(const BlobLease&) = delete;

  // The bytes, while the lease holds them.
  std::string_view view() const {
    return {reinterpret_cast<const char*>(arena_->data(*handle_)), static_cast<std::size_t>(handle_->length)};
  }

  // The blob as a body sent from the area's memfd (sendfile); the lease
  // gives it up. An empty FileBody, and the lease kept, when no descriptor
  // is left.
  FileBody to_file_body() {
    const int fd = ::fcntl(arena_->fd(), F_DUPFD_CLOEXEC, 0);
    if (fd < 0) return {};
    const auto h = *std::exchange(handle_, std::nullopt);
    auto* arena = arena_;
    return FileBody(fd, arena->offset(h), h.length, [arena, h] { arena->release(h); });
  }

 private:
  transport::BlobArena* arena_;
  std::optional<transport::BlobHandle> handle_;
};

}  // namespace edri::listener
