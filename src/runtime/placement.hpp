// Placement: what EDRI_CPUS=auto and EDRI_SPIN=auto become on the machine
// at hand (docs/decisions/0017). Computed the same way in the supervisor
// (which logs it) and in every child, from the settings, the CPUs the
// server may use and how many processes it runs; no I/O here.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "runtime/config.hpp"
#include "transport/topology.hpp"

namespace edri {

// Processes have cores of their own when the server may use at least this
// many CPUs, and one more than it has processes (for the kernel's network
// work). On 6 of a 16-core machine's CPUs with 5 processes, spreading and
// spinning beat keeping them together 1.68x at c=1 and 1.22x at c=8; with
// 12 processes on 12 CPUs spinning lost 7 % (docs/decisions/0017).
inline constexpr std::uint32_t kSpreadMinCpus = 6;
inline constexpr std::uint32_t kSpareCpus = 1;
// EDRI_LISTENER_WORKERS=auto leaves two CPUs beside the other processes:
// each listener's connections bring kernel work of about its own size.
inline constexpr std::uint32_t kListenerSpareCpus = 2;
// EDRI_SPIN=auto where processes have cores of their own: the most idle
// polls before sleeping (the best of the 16-core sweep in issue 16).
inline constexpr std::uint32_t kAutoSpinPolls = 2000;

struct PlacementChoice {
  // EDRI_CPUS=auto: listeners, broker and router on one CPU together
  // (false), or every process where the scheduler puts it (true): where
  // cores are to spare, and from kSpreadMinCpus wherever several listeners
  // run (together they would take turns on one CPU).
  bool spread = false;
  bool roomy = false;      // every process a core of its own, and one to spare
  std::uint32_t spin = 0;  // most idle polls before sleeping; 0: sleep at once
  std::uint32_t cpus = 0;  // CPUs the server may use
  std::uint32_t processes = 0;
  std::string describe(const Config& config) const;
};

PlacementChoice choose_placement(const Config& config, std::uint32_t cpus_allowed, std::uint32_t processes);
// The supervisor's children: a slot each but the supervisor's, less the
// domains run inside the listener (EDRI_LISTENER_DOMAINS, one slot each).
inline std::uint32_t child_processes(const transport::Topology& topology, const Config& config) {
  return topology.process_slots() - 1 - static_cast<std::uint32_t>(config.listener_domains.size());
}

// EDRI_LISTENER_WORKERS=auto, from the CPUs allowed and the processes
// besides the listeners (broker, router, managers, switch): 1 unless
// EDRI_CPUS leaves cores to spare, where a second listener would only take
// turns with the pipeline on its CPU; else half of the CPUs that the other
// processes and kListenerSpareCpus leave (docs/decisions/0017).
std::uint32_t auto_listener_workers(const Config& config, std::uint32_t cpus_allowed, std::uint32_t others);

// The CPUs this process may use now, in order (sched_getaffinity).
std::vector<int> allowed_cpus();
// Lets thread `t` run on any of `cpus` (none: left as it is), whatever
// CPU its process was pinned to: helper threads off the request path
// (worker threads, the access log's writer) float over the CPUs the
// server was given. False when the kernel refused.
bool let_thread_float(std::thread& t, const std::vector<int>& cpus);

// How many idle polls a process makes before it sleeps, adapted to its
// traffic: the full budget while wake-ups come close together, none once a
// sleep was long (an idle server burns no CPU), doubling back from a floor
// after each short sleep.
class SpinBudget {
 public:
  static constexpr std::chrono::microseconds kRecent{500};  // a sleep shorter than this: traffic is recent
  static constexpr std::uint32_t kFloor = 64;

  // Nothing to spin for before the first traffic.
  explicit SpinBudget(std::uint32_t limit) : limit_(limit) {}
  std::uint32_t polls() const { return budget_; }
  bool adaptive() const { return limit_ > 0; }
  void slept(std::chrono::nanoseconds how_long) {
    if (how_long >= kRecent)
      budget_ = 0;
    else
      budget_ = std::min(limit_, std::max(kFloor, budget_ * 2));
  }

 private:
  std::uint32_t limit_;
  std::uint32_t budget_ = 0;
};

// EDRI_CPUS=auto on few cores: a manager's loop starts on the pipeline's
// CPU, where its hops are cheap, and moves to every CPU allowed while its
// own work keeps it busy (it needs a core then more than cheap hops), back
// once it is quiet (docs/decisions/0017). Decides from the shares of a
// core the loop ran and waited to run over each sample's window; no I/O
// here.
class BusyFloat {
 public:
  static constexpr double kFloatAbove = 0.5;   // asked for more than this (ran + waited): float, if...
  static constexpr double kAloneAbove = 0.75;  // ...it ran more than this,
  static constexpr double kWaitedShare = 0.5;  // or waited at least this share of what it ran
  static constexpr double kPinBelow = 0.2;     // asked for less than this: back home
  enum class Move { Stay, Float, Pin };

  // A loop that asks for more than half a core floats if it keeps most of
  // a core busy by itself, or if it was kept waiting (something else on
  // its CPU wants it too). One that runs half the time and seldom waits is
  // taking turns over cheap hops (two managers asking each other,
  // docs/decisions/0028): apart, each hop would cross cores (on the 2-vCPU
  // VM 11 us against 6 us, and 38k round trips/s against 53k).
  Move sample(std::chrono::nanoseconds ran, std::chrono::nanoseconds waited, std::chrono::nanoseconds wall) {
    if (wall.count() <= 0) return Move::Stay;
    const double run = share(ran, wall), wait = share(waited, wall);
    const bool needs_a_core = run > kAloneAbove || wait >= run * kWaitedShare;
    if (!floating_ && run + wait > kFloatAbove && needs_a_core) {
      floating_ = true;
      return Move::Float;
    }
    if (floating_ && run + wait < kPinBelow) {
      floating_ = false;
      return Move::Pin;
    }
    return Move::Stay;
  }
  bool floating() const { return floating_; }

 private:
  static double share(std::chrono::nanoseconds part, std::chrono::nanoseconds wall) {
    return static_cast<double>(part.count()) / static_cast<double>(wall.count());
  }
  bool floating_ = false;
};

// The CPUs busy managers' loops hold, each for itself, in a table all
// processes share (SegmentHeader::cpu_holders, one entry per allowed CPU by
// position, the slot holding it or 0). Left to the scheduler, two busy
// managers floating over two vCPUs ran on one of them, ~50 % each, in two
// of four runs on a 2-vCPU VM (issue 39); held, each gets its own
// (docs/decisions/0036). No I/O here: the table is plain atomics.
class CpuHolds {
 public:
  // `home`: the pipeline's position, taken last; `slot`: the caller's
  // (never 0). Clears what the slot held before (a crashed start's).
  CpuHolds(std::span<std::atomic<std::uint16_t>> holders, std::size_t home, std::uint16_t slot);
  ~CpuHolds() { give_back(); }
  CpuHolds(const CpuHolds&) = delete;
  CpuHolds& operator=(const CpuHolds&) = delete;

  // Takes a CPU nobody holds, the pipeline's last (its CPU is shared);
  // nullopt when all are held (the loop floats over all then).
  std::optional<std::size_t> take();
  // Holding the pipeline's CPU, moves to one nobody holds if any now is;
  // the new position, or nullopt where nothing changed.
  std::optional<std::size_t> take_better();
  void give_back();
  std::optional<std::size_t> held() const { return held_; }

 private:
  bool try_take(std::size_t position);

  std::span<std::atomic<std::uint16_t>> holders_;
  std::size_t home_;
  std::uint16_t slot_;
  std::optional<std::size_t> held_;
};

}  // namespace edri
