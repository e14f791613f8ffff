// The whole shared-memory contract between a manager and its worker
// processes, in one place.
//
// One memfd per pool, created by the manager and inherited by each worker
// across exec (its descriptor number travels in EDRI_INTERNAL_WORKER). No
// name in /dev/shm: the memory goes with the last process that maps it.
//
//   PoolHeader                     (one page)
//   WorkerBlock x workers          (one page each)
//   ring data: tasks[0], results[0], tasks[1], results[1], ...
//                                  (ring_bytes each, page aligned)
//
// Each direction is a single-producer single-consumer ring with the record
// format and wake-up protocol of transport/shm_layout.hpp (the same
// ChannelProducer and ChannelConsumer run it):
//
//   task record    tag 0; [u64 task id][u8 name length][name][input bytes]
//   result record  tag = kResultDone or kResultThrew; [u64 task id][output]
//
// A worker holds at most one task: the manager sends it the next one only
// after the result of the last, so a ring never holds more than one record
// and a dead worker took exactly one task with it.
//
// Wake-ups. Manager -> worker: the worker's `bell` state and eventfd, with
// the sleeping-flag protocol of shm_layout.hpp. Worker -> manager: the
// worker writes the pool's eventfd after every result; a task is CPU work
// of milliseconds, one system call beside it costs nothing.
//
// A worker writes its pid into bell.pid when it is ready to take tasks.
// When one dies, the manager first drains its results ring (a result
// committed before the death still counts), then zeroes the worker's block
// and starts the replacement on clean rings.
#pragma once

#include <cstdint>

#include "transport/shm_layout.hpp"

namespace edri::manager::pool {

inline constexpr std::uint64_t kPoolMagic = 0x314c4f4f50495244ULL;  // "DRIPOOL1"
inline constexpr std::uint32_t kPoolLayoutVersion = 1;

inline constexpr std::uint32_t kResultDone = 0;
inline constexpr std::uint32_t kResultThrew = 1;

// Bytes before a task record's name, and before a result's output.
inline constexpr std::size_t kTaskPrefixBytes = sizeof(std::uint64_t) + 1;
inline constexpr std::size_t kResultPrefixBytes = sizeof(std::uint64_t);

struct alignas(transport::kPage) PoolHeader {
  std::uint64_t magic;
  std::uint32_t layout_version;
  std::uint32_t workers;
  std::uint64_t ring_bytes;
  std::uint64_t total_bytes;
};

struct alignas(transport::kPage) WorkerBlock {
  transport::DoorbellState bell;      // the worker's: sleeping flag, pid when ready
  transport::ChannelControl tasks;    // manager -> worker
  transport::ChannelControl results;  // worker -> manager
};

static_assert(sizeof(PoolHeader) == transport::kPage);
static_assert(sizeof(WorkerBlock) == transport::kPage);

inline constexpr std::size_t block_offset(std::uint32_t worker) { return transport::kPage * (1 + worker); }
inline constexpr std::size_t tasks_ring_offset(std::uint32_t workers, std::uint32_t worker, std::size_t ring_bytes) {
  return block_offset(workers) + 2 * worker * ring_bytes;
}
inline constexpr std::size_t results_ring_offset(std::uint32_t workers, std::uint32_t worker, std::size_t ring_bytes) {
  return tasks_ring_offset(workers, worker, ring_bytes) + ring_bytes;
}
inline constexpr std::size_t pool_bytes(std::uint32_t workers, std::size_t ring_bytes) {
  return block_offset(workers) + 2 * workers * ring_bytes;
}

}  // namespace edri::manager::pool
