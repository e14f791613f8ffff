// The whole shared-memory contract of the blob area, in one place.
//
// Large request and response bodies are written once into this area and the
// channels carry a BlobHandle instead of the bytes. One area per server
// instance: a memfd the supervisor creates and every child inherits (its
// number in EDRI_INTERNAL_BLOB_FD), so no name can be left behind.
//
//   BlobAreaHeader                 (page aligned; lock, counters, bitmap)
//   BlobEntry x block_count        (one per block)
//   data: block_count x kBlobBlockBytes
//
// A blob is a run of whole blocks. The bitmap says which blocks are taken;
// the entry of a blob's first block says who holds it:
//
//   owner = generation << 32 | pid    (0: free)
//
// The producer allocates (owner: itself) and sends the handle. The process
// that takes the blob over claims it: compare-and-swap of the owner from
// (generation, anyone) to (generation, itself); a wrong generation means
// the blob was reclaimed and the body is lost. The last reader releases it.
// Allocation and release take the lock (a robust process-shared mutex: a
// process that dies holding it does not block the others; the next taker
// rebuilds the bitmap from the entries). The hot path never takes it for
// bodies below EDRI_BLOB_THRESHOLD, which travel in the channel record.
//
// Reclamation: when a child dies, the supervisor frees every blob whose
// owner pid is that child's. A blob still owned by its living producer
// `stale_after` seconds after it was made was lost in transit (a hop
// dropped its message) and is freed by the supervisor's sweep too.
#pragma once

#include <pthread.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "transport/shm_layout.hpp"

namespace edri::transport {

inline constexpr std::uint64_t kBlobMagic = 0x31424f4c42495244ULL;  // "DRIBLOB1"
inline constexpr std::uint32_t kBlobLayoutVersion = 1;
inline constexpr std::size_t kBlobBlockBytes = 64 * 1024;

struct BlobEntry {
  std::atomic<std::uint64_t> owner;      // generation << 32 | pid; 0: free
  std::uint32_t blocks;                  // of the blob starting here
  std::atomic<std::uint32_t> created_s;  // CLOCK_MONOTONIC seconds when made; 0 once claimed
};
static_assert(sizeof(BlobEntry) == 16);

struct BlobAreaHeader {
  std::uint64_t magic;
  std::uint32_t layout_version;
  std::uint32_t block_count;
  std::uint64_t total_bytes;
  std::uint64_t data_offset;
  pthread_mutex_t lock;                    // robust, process-shared
  std::uint32_t next_generation;           // under the lock
  std::atomic<std::uint64_t> used_blocks;  // for metrics
  std::uint64_t bitmap[];                  // block_count bits, under the lock
};

inline constexpr std::size_t blob_bitmap_words(std::uint32_t blocks) { return (blocks + 63) / 64; }
inline constexpr std::size_t blob_entries_offset(std::uint32_t blocks) {
  return align_up(sizeof(BlobAreaHeader) + blob_bitmap_words(blocks) * 8, kCacheLine);
}
inline constexpr std::size_t blob_data_offset(std::uint32_t blocks) {
  return align_up(blob_entries_offset(blocks) + blocks * sizeof(BlobEntry), kPage);
}
inline constexpr std::size_t blob_area_bytes(std::uint32_t blocks) {
  return blob_data_offset(blocks) + blocks * kBlobBlockBytes;
}

// What a channel record carries instead of the body (section Blob).
struct BlobHandle {
  std::uint32_t first_block;
  std::uint32_t generation;
  std::uint64_t length;  // bytes of the body
};
static_assert(sizeof(BlobHandle) == 16);

}  // namespace edri::transport
