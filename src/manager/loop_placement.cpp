#include "manager/loop_placement.hpp"

#include <sched.h>
#include <time.h>

#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>

namespace edri::manager {

// What the calling thread (the manager's loop; worker threads have their
// own placement) asked of a CPU so far: the time it ran and the time it
// waited to run (/proc/thread-self/schedstat). Two CPU-bound managers
// sharing a CPU each run half the time and wait the other half.
// Without schedstat (a kernel built without it), the time it ran alone.
LoopPlacement::CpuDemand LoopPlacement::loop_cpu_demand() {
  unsigned long long ran = 0, waited = 0;
  std::FILE* f = std::fopen("/proc/thread-self/schedstat", "r");
  const bool read = f && std::fscanf(f, "%llu %llu", &ran, &waited) == 2;
  if (f) std::fclose(f);
  using ns = std::chrono::nanoseconds;
  if (read) return {ns(static_cast<std::int64_t>(ran)), ns(static_cast<std::int64_t>(waited))};
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return {std::chrono::seconds(ts.tv_sec) + ns(ts.tv_nsec), ns(0)};
}

LoopPlacement::LoopPlacement(EventLoop& events, int home, std::vector<int> allowed)
    : timer_(events, [this] { sample(); }),
      home_{home},
      allowed_(std::move(allowed)),
      last_(loop_cpu_demand()),
      last_wall_(std::chrono::steady_clock::now()) {
  move_to(home_);
  timer_.expires_after(kWindow);
}

void LoopPlacement::sample() {
  const auto cpu = loop_cpu_demand();
  const auto wall = std::chrono::steady_clock::now();
  switch (busy_.sample(cpu.ran - last_.ran, cpu.waited - last_.waited, wall - last_wall_)) {
    case BusyFloat::Move::Float:
      spdlog::info("busy: the manager's loop may run on any of {} CPUs now", allowed_.size());
      move_to(allowed_);
      break;
    case BusyFloat::Move::Pin:
      spdlog::info("quiet again: the manager's loop back on CPU {}", home_.front());
      move_to(home_);
      break;
    case BusyFloat::Move::Stay: break;
  }
  last_ = cpu;
  last_wall_ = wall;
  timer_.expires_after(kWindow);
}

void LoopPlacement::move_to(const std::vector<int>& cpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cpus) CPU_SET(c, &set);
  if (::sched_setaffinity(0, sizeof set, &set) != 0)
    spdlog::warn("EDRI_CPUS: cannot set CPU affinity: {}", std::strerror(errno));
}

}  // namespace edri::manager
