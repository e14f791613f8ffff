// BlobArena: the blob area of one server instance (contract:
// blob_layout.hpp), as a process maps it.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <utility>

#include "transport/blob_layout.hpp"
#include "transport/unique_fd.hpp"

namespace edri::transport {

class BlobArena {
 public:
  // A new area of `bytes` of data (rounded up to whole blocks) in a new
  // memfd, not closed on exec. Throws on failure.
  static BlobArena create(std::size_t bytes);
  // Maps an inherited area. Throws when `fd` is not one.
  static BlobArena open(int fd);

  BlobArena(BlobArena&& o) noexcept;
  BlobArena& operator=(BlobArena&&) = delete;
  ~BlobArena();

  int fd() const { return fd_.get(); }
  std::uint64_t capacity() const { return std::uint64_t{header_->block_count} * kBlobBlockBytes; }
  std::uint64_t used_bytes() const { return header_->used_blocks.load(std::memory_order_relaxed) * kBlobBlockBytes; }

  // A blob of `length` bytes held by this process; nullopt when the area
  // has no room for it now.
  std::optional<BlobHandle> allocate(std::size_t length);
  // The bytes of a blob this process holds.
  std::byte* data(const BlobHandle& h) const { return base_ + offset(h); }
  std::string_view view(const BlobHandle& h) const {
    return {reinterpret_cast<const char*>(data(h)), static_cast<std::size_t>(h.length)};
  }
  // Where they are in the memfd (for sendfile).
  std::uint64_t offset(const BlobHandle& h) const {
    return header_->data_offset + std::uint64_t{h.first_block} * kBlobBlockBytes;
  }
  // A blob holding a copy of `bytes`; nullopt when the area has no room.
  std::optional<BlobHandle> store(std::string_view bytes);
  // Makes this process the blob's holder. False when the handle is not a
  // live blob (reclaimed: the body is lost).
  [[nodiscard]] bool claim(const BlobHandle& h);
  // The same for the handle an envelope's Blob section carries; nullopt
  // when the section is malformed or the blob is gone.
  std::optional<BlobHandle> claim(std::span<const std::byte> section);
  // The handle as an envelope section's bytes.
  static std::span<const std::byte> section_of(const BlobHandle& h) { return std::as_bytes(std::span(&h, 1)); }
  // Frees a blob this process holds.
  void release(const BlobHandle& h);

  // Supervisor. Frees every blob held by `pid` (a process that died), and
  // every blob its producer made more than `stale_after_s` seconds ago and
  // nobody claimed (lost in transit). Returns the blocks freed.
  std::size_t reclaim_dead(pid_t pid);
  std::size_t reclaim_unclaimed(std::uint32_t stale_after_s);

 private:
  BlobArena(UniqueFd fd, std::byte* base, std::size_t bytes);
  BlobEntry& entry(std::uint32_t block) const;
  void lock();
  void unlock();
  void free_run(std::uint32_t first, std::uint32_t blocks);  // under the lock
  void rebuild_bitmap();                                     // under the lock

  UniqueFd fd_;
  std::byte* base_;
  std::size_t bytes_;
  BlobAreaHeader* header_;
  static std::uint32_t self();
};

// A blob this process holds, released when the lease ends unless take()
// handed it on (to whatever frees it later).
class BlobLease {
 public:
  BlobLease() = default;
  BlobLease(BlobArena* arena, std::optional<BlobHandle> handle) : arena_(arena), handle_(handle) {}
  BlobLease(BlobLease&& o) noexcept : arena_(o.arena_), handle_(std::exchange(o.handle_, std::nullopt)) {}
  BlobLease& operator=(BlobLease&& o) noexcept {
    if (this != &o) {
      reset();
      arena_ = o.arena_;
      handle_ = std::exchange(o.handle_, std::nullopt);
    }
    return *this;
  }
  ~BlobLease() { reset(); }

  explicit operator bool() const { return handle_.has_value(); }
  std::string_view view() const { return arena_->view(*handle_); }
  BlobArena* arena() const { return arena_; }
  const BlobHandle& handle() const { return *handle_; }
  // Gives the blob up without releasing it.
  BlobHandle take() { return *std::exchange(handle_, std::nullopt); }
  void reset() {
    if (handle_) arena_->release(*std::exchange(handle_, std::nullopt));
  }

 private:
  BlobArena* arena_ = nullptr;
  std::optional<BlobHandle> handle_;
};

// Takes over the blob an envelope's Blob section names: an empty lease when
// there is no blob area or the blob is gone (its body lost).
inline BlobLease claim_blob(BlobArena* arena, std::span<const std::byte> section) {
  return arena ? BlobLease(arena, arena->claim(section)) : BlobLease();
}

}  // namespace edri::transport
