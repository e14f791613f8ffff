// LoopPlacement: a manager's loop on the pipeline's CPU while quiet, on every
// CPU allowed while busy (BusyFloat, EDRI_CPUS=auto on few cores).
#pragma once

#include <chrono>
#include <vector>

#include "runtime/event_loop.hpp"
#include "runtime/placement.hpp"

namespace edri::manager {

class LoopPlacement {
 public:
  static constexpr std::chrono::milliseconds kWindow{250};

  // `home`: the pipeline's CPU; `allowed`: every CPU the process may use.
  LoopPlacement(EventLoop& events, int home, std::vector<int> allowed);
  bool floating() const { return busy_.floating(); }

 private:
  void sample();
  void move_to(const std::vector<int>& cpus);

  EventLoop::Timer timer_;
  std::vector<int> home_;
  std::vector<int> allowed_;
  BusyFloat busy_;
  // What the loop's thread asked of a CPU so far.
  struct CpuDemand {
    std::chrono::nanoseconds ran{}, waited{};
  };
  static CpuDemand loop_cpu_demand();
  CpuDemand last_;
  std::chrono::steady_clock::time_point last_wall_;
};

}  // namespace edri::manager
