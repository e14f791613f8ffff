#include "runtime/loop_placement.hpp"

#include <sched.h>
#include <time.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>

namespace edri {

// What the calling thread (the process's loop; a manager's worker threads
// have their own placement) asked of a CPU so far: the time it ran and the time it
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

namespace {

// The pipeline's CPU's position among those allowed (the last, by
// main.cpp's home_cpu), and the table's entries for the allowed CPUs.
std::size_t position_of(const std::vector<int>& allowed, int cpu) {
  const auto at = std::find(allowed.begin(), allowed.end(), cpu);
  return static_cast<std::size_t>(at - allowed.begin());
}

std::span<std::atomic<std::uint16_t>> entries_for(std::span<std::atomic<std::uint16_t>> holders, std::size_t cpus) {
  return holders.first(std::min(holders.size(), cpus));
}

}  // namespace

LoopPlacement::LoopPlacement(EventLoop& events, int home, std::vector<int> allowed,
                             std::span<std::atomic<std::uint16_t>> holders, std::uint16_t slot)
    : timer_(events, [this] { sample(); }),
      home_{home},
      allowed_(std::move(allowed)),
      holds_(entries_for(holders, allowed_.size()), position_of(allowed_, home), slot),
      last_(loop_cpu_demand()),
      last_wall_(std::chrono::steady_clock::now()) {
  move_to(home_);
  timer_.expires_after(kWindow);
}

void LoopPlacement::sample() {
  const auto cpu = loop_cpu_demand();
  const auto wall = std::chrono::steady_clock::now();
  switch (busy_.sample(cpu.ran - last_.ran, cpu.waited - last_.waited, wall - last_wall_)) {
    case BusyFloat::Move::Float: go_busy(); break;
    case BusyFloat::Move::Pin:
      holds_.give_back();
      spdlog::info("quiet again: the loop back on CPU {}", home_.front());
      move_to(home_);
      break;
    case BusyFloat::Move::Stay:
      if (busy_.floating()) hold_better();
      break;
  }
  last_ = cpu;
  last_wall_ = wall;
  timer_.expires_after(kWindow);
}

// Busy: a CPU of its own where one is free, else wherever the scheduler
// finds room among all of them (the loop tries again each window).
void LoopPlacement::go_busy() {
  if (const auto held = holds_.take()) {
    spdlog::info("busy: the loop holds CPU {} now", allowed_[*held]);
    move_to({allowed_[*held]});
    return;
  }
  spdlog::info("busy: every CPU is held by a busy loop; this one may run on any of {}", allowed_.size());
  move_to(allowed_);
}

// Still busy: take a CPU another loop gave back, where it floats over all
// of them or shares the pipeline's.
void LoopPlacement::hold_better() {
  const bool held = holds_.held().has_value();
  if (const auto better = held ? holds_.take_better() : holds_.take()) {
    spdlog::info("busy: the loop holds CPU {} now", allowed_[*better]);
    move_to({allowed_[*better]});
  }
}

void LoopPlacement::move_to(const std::vector<int>& cpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cpus) CPU_SET(c, &set);
  if (::sched_setaffinity(0, sizeof set, &set) != 0)
    spdlog::warn("EDRI_CPUS: cannot set CPU affinity: {}", std::strerror(errno));
}

}  // namespace edri
