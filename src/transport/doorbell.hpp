// Doorbell: a process slot's eventfd plus its shared `sleeping` flag
// (protocol: shm_layout.hpp).
#pragma once

#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>

#include "transport/shm_layout.hpp"

namespace edri::transport {

class Doorbell {
 public:
  Doorbell() = default;
  Doorbell(DoorbellState* state, int fd) : state_(state), fd_(fd) {}

  // Wakes the owner if it said it sleeps. The caller must have published
  // its ring writes and issued a seq_cst fence before calling this.
  void ring_if_sleeping() const {
    if (state_->sleeping.load(std::memory_order_relaxed) && state_->sleeping.exchange(0, std::memory_order_acq_rel))
      ring();
  }

  // Wakes the owner whatever it said (rare paths: backpressure, control).
  void ring() const {
    state_->rang_ns.store(loop_clock_ns(), std::memory_order_relaxed);
    const std::uint64_t one = 1;
    [[maybe_unused]] auto n = ::write(fd_, &one, sizeof one);
    state_->rings.fetch_add(1, std::memory_order_relaxed);
  }

  DoorbellState* state() const { return state_; }
  int fd() const { return fd_; }

 private:
  DoorbellState* state_ = nullptr;
  int fd_ = -1;
};

}  // namespace edri::transport
