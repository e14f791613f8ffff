// LoopPlacement: a manager's or the broker's loop on the pipeline's CPU
// while quiet, on a CPU it holds for itself while busy, or on every CPU
// allowed when other busy loops hold them all (BusyFloat, CpuHolds;
// EDRI_CPUS=auto on few cores; docs/decisions/0036, 0039).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <span>
#include <vector>

#include "runtime/event_loop.hpp"
#include "runtime/placement.hpp"

namespace edri {

class LoopPlacement {
 public:
  static constexpr std::chrono::milliseconds kWindow{250};

  // `home`: the pipeline's CPU; `allowed`: every CPU the process may use;
  // `holders`: the shared table of held CPUs (one entry per allowed CPU,
  // at most); `slot`: the process's.
  LoopPlacement(EventLoop& events, int home, std::vector<int> allowed, std::span<std::atomic<std::uint16_t>> holders,
                std::uint16_t slot);
  bool floating() const { return busy_.floating(); }

 private:
  void sample();
  void move_to(const std::vector<int>& cpus);
  void go_busy();
  void hold_better();

  EventLoop::Timer timer_;
  std::vector<int> home_;
  std::vector<int> allowed_;
  BusyFloat busy_;
  CpuHolds holds_;
  // What the loop's thread asked of a CPU so far.
  struct CpuDemand {
    std::chrono::nanoseconds ran{}, waited{};
  };
  static CpuDemand loop_cpu_demand();
  CpuDemand last_;
  std::chrono::steady_clock::time_point last_wall_;
};

}  // namespace edri
