#include "transport/blob_arena.hpp"

#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <new>
#include <stdexcept>
#include <system_error>
#include <utility>

namespace edri::transport {

namespace {

std::uint32_t now_s() {
  timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint32_t>(ts.tv_sec);
}

bool bit(const std::uint64_t* map, std::uint32_t i) { return (map[i / 64] >> (i % 64)) & 1; }
void set_bit(std::uint64_t* map, std::uint32_t i) { map[i / 64] |= std::uint64_t{1} << (i % 64); }
void clear_bit(std::uint64_t* map, std::uint32_t i) { map[i / 64] &= ~(std::uint64_t{1} << (i % 64)); }

}  // namespace

BlobArena::BlobArena(UniqueFd fd, std::byte* base, std::size_t bytes)
    : fd_(std::move(fd)), base_(base), bytes_(bytes), header_(reinterpret_cast<BlobAreaHeader*>(base)) {}

BlobArena::BlobArena(BlobArena&& o) noexcept
    : fd_(std::move(o.fd_)),
      base_(std::exchange(o.base_, nullptr)),
      bytes_(o.bytes_),
      header_(std::exchange(o.header_, nullptr)) {}

BlobArena::~BlobArena() {
  if (base_) ::munmap(base_, bytes_);
}

BlobArena BlobArena::create(std::size_t bytes) {
  const auto blocks = static_cast<std::uint32_t>((bytes + kBlobBlockBytes - 1) / kBlobBlockBytes);
  if (blocks == 0) throw std::invalid_argument("the blob area needs at least one block");
  const std::size_t total = blob_area_bytes(blocks);
  UniqueFd fd(::memfd_create("edri-blobs", 0));  // inherited by the children
  if (!fd) throw std::system_error(errno, std::generic_category(), "memfd_create for the blob area");
  if (::ftruncate(fd.get(), static_cast<off_t>(total)) != 0)
    throw std::system_error(errno, std::generic_category(), "ftruncate of the blob area");
  void* p = ::mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
  if (p == MAP_FAILED) throw std::system_error(errno, std::generic_category(), "mmap of the blob area");
  BlobArena a(std::move(fd), static_cast<std::byte*>(p), total);
  auto* h = new (p) BlobAreaHeader{};
  h->layout_version = kBlobLayoutVersion;
  h->block_count = blocks;
  h->total_bytes = total;
  h->data_offset = blob_data_offset(blocks);
  pthread_mutexattr_t attr;
  ::pthread_mutexattr_init(&attr);
  ::pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
  ::pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST);
  ::pthread_mutex_init(&h->lock, &attr);
  ::pthread_mutexattr_destroy(&attr);
  for (std::uint32_t b = 0; b < blocks; ++b) new (&a.entry(b)) BlobEntry{};
  std::atomic_thread_fence(std::memory_order_release);
  h->magic = kBlobMagic;
  return a;
}

BlobArena BlobArena::open(int inherited) {
  UniqueFd fd(inherited);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || st.st_size < static_cast<off_t>(sizeof(BlobAreaHeader)))
    throw std::runtime_error("the inherited blob area is not valid");
  const auto total = static_cast<std::size_t>(st.st_size);
  void* p = ::mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
  if (p == MAP_FAILED) throw std::system_error(errno, std::generic_category(), "mmap of the blob area");
  BlobArena a(std::move(fd), static_cast<std::byte*>(p), total);
  const auto& h = *a.header_;
  if (h.magic != kBlobMagic || h.layout_version != kBlobLayoutVersion || h.total_bytes != total)
    throw std::runtime_error("the blob area does not match this build");
  return a;
}

// Asked each time, not cached: a forked child is another holder.
std::uint32_t BlobArena::self() { return static_cast<std::uint32_t>(::getpid()); }

BlobEntry& BlobArena::entry(std::uint32_t block) const {
  return reinterpret_cast<BlobEntry*>(base_ + blob_entries_offset(header_->block_count))[block];
}

void BlobArena::lock() {
  const int r = ::pthread_mutex_lock(&header_->lock);
  if (r == EOWNERDEAD) {
    // Its holder died mid-update: the entries are the truth.
    rebuild_bitmap();
    ::pthread_mutex_consistent(&header_->lock);
  } else if (r != 0) {
    throw std::system_error(r, std::generic_category(), "blob area lock");
  }
}

void BlobArena::unlock() { ::pthread_mutex_unlock(&header_->lock); }

void BlobArena::rebuild_bitmap() {
  const auto n = header_->block_count;
  std::memset(header_->bitmap, 0, blob_bitmap_words(n) * 8);
  std::uint64_t used = 0;
  for (std::uint32_t b = 0; b < n; ++b) {
    const auto& e = entry(b);
    if (e.owner.load(std::memory_order_acquire) == 0 || e.blocks == 0) continue;
    for (std::uint32_t i = b; i < b + e.blocks && i < n; ++i) set_bit(header_->bitmap, i);
    used += e.blocks;
  }
  header_->used_blocks.store(used, std::memory_order_relaxed);
}

std::optional<BlobHandle> BlobArena::allocate(std::size_t length) {
  const auto need =
      static_cast<std::uint32_t>(std::max<std::size_t>(1, (length + kBlobBlockBytes - 1) / kBlobBlockBytes));
  const auto n = header_->block_count;
  if (need > n) return std::nullopt;
  lock();
  std::uint32_t run = 0, first = 0;
  for (std::uint32_t i = 0; i < n; ++i) {
    if (bit(header_->bitmap, i)) {
      run = 0;
      // Skip whole taken words.
      if (i % 64 == 0 && header_->bitmap[i / 64] == ~std::uint64_t{0}) i += 63;
      continue;
    }
    if (run == 0) first = i;
    if (++run == need) break;
  }
  if (run < need) {
    unlock();
    return std::nullopt;
  }
  for (std::uint32_t i = first; i < first + need; ++i) set_bit(header_->bitmap, i);
  const std::uint32_t generation =
      ++header_->next_generation == 0 ? ++header_->next_generation : header_->next_generation;
  auto& e = entry(first);
  e.blocks = need;
  e.created_s.store(now_s(), std::memory_order_relaxed);
  e.owner.store(std::uint64_t{generation} << 32 | self(), std::memory_order_release);
  header_->used_blocks.fetch_add(need, std::memory_order_relaxed);
  unlock();
  return BlobHandle{first, generation, length};
}

std::optional<BlobHandle> BlobArena::store(std::string_view bytes) {
  auto h = allocate(bytes.size());
  if (h && !bytes.empty()) std::memcpy(data(*h), bytes.data(), bytes.size());
  return h;
}

std::optional<BlobHandle> BlobArena::claim(std::span<const std::byte> section) {
  BlobHandle h;
  if (section.size() != sizeof h) return std::nullopt;
  std::memcpy(&h, section.data(), sizeof h);
  if (!claim(h)) return std::nullopt;
  return h;
}

bool BlobArena::claim(const BlobHandle& h) {
  if (h.first_block >= header_->block_count) return false;
  auto& e = entry(h.first_block);
  std::uint64_t owner = e.owner.load(std::memory_order_acquire);
  for (;;) {
    if (owner == 0 || (owner >> 32) != h.generation) return false;
    if (e.owner.compare_exchange_weak(owner, std::uint64_t{h.generation} << 32 | self(), std::memory_order_acq_rel))
      break;
  }
  e.created_s.store(0, std::memory_order_relaxed);  // claimed: no longer in transit
  return true;
}

void BlobArena::release(const BlobHandle& h) {
  if (h.first_block >= header_->block_count) return;
  auto& e = entry(h.first_block);
  std::uint64_t expected = std::uint64_t{h.generation} << 32 | self();
  lock();
  if (e.owner.compare_exchange_strong(expected, 0, std::memory_order_acq_rel)) free_run(h.first_block, e.blocks);
  unlock();
}

void BlobArena::free_run(std::uint32_t first, std::uint32_t blocks) {
  for (std::uint32_t i = first; i < first + blocks && i < header_->block_count; ++i) clear_bit(header_->bitmap, i);
  header_->used_blocks.fetch_sub(blocks, std::memory_order_relaxed);
  entry(first).blocks = 0;
}

std::size_t BlobArena::reclaim_dead(pid_t pid) {
  std::size_t freed = 0;
  lock();
  for (std::uint32_t b = 0; b < header_->block_count; ++b) {
    auto& e = entry(b);
    std::uint64_t owner = e.owner.load(std::memory_order_acquire);
    if (owner == 0 || e.blocks == 0 || static_cast<pid_t>(owner & 0xffffffffu) != pid) continue;
    if (!e.owner.compare_exchange_strong(owner, 0, std::memory_order_acq_rel)) continue;
    freed += e.blocks;
    free_run(b, e.blocks);
  }
  unlock();
  return freed;
}

std::size_t BlobArena::reclaim_unclaimed(std::uint32_t stale_after_s) {
  const std::uint32_t now = now_s();
  std::size_t freed = 0;
  lock();
  for (std::uint32_t b = 0; b < header_->block_count; ++b) {
    auto& e = entry(b);
    std::uint64_t owner = e.owner.load(std::memory_order_acquire);
    const std::uint32_t created = e.created_s.load(std::memory_order_relaxed);
    if (owner == 0 || e.blocks == 0 || created == 0 || now - created <= stale_after_s) continue;
    if (!e.owner.compare_exchange_strong(owner, 0, std::memory_order_acq_rel)) continue;
    freed += e.blocks;
    free_run(b, e.blocks);
  }
  unlock();
  return freed;
}

}  // namespace edri::transport
