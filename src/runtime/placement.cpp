#include "runtime/placement.hpp"

#include <sched.h>

#include <algorithm>

namespace edri {

namespace {

bool cores_to_spare(std::uint32_t cpus, std::uint32_t processes) {
  return cpus >= std::max(kSpreadMinCpus, processes + kSpareCpus);
}

// The CPUs the processes get: EDRI_CPUS's list, else all allowed.
std::uint32_t cpus_given(const Config& config, std::uint32_t cpus_allowed) {
  return config.placement == Config::Placement::List ? static_cast<std::uint32_t>(config.cpus.size()) : cpus_allowed;
}

}  // namespace

PlacementChoice choose_placement(const Config& config, std::uint32_t cpus_allowed, std::uint32_t processes) {
  using P = Config::Placement;
  PlacementChoice c;
  c.cpus = cpus_allowed;
  c.processes = processes;
  // Whether the CPUs the processes get leave each a core of its own.
  const auto cpus = cpus_given(config, cpus_allowed);
  c.roomy = cores_to_spare(cpus, processes);
  // Several listeners exist to run side by side: on one CPU together they
  // only take turns (8 listeners on 12 CPUs: 0.17x of spreading them,
  // docs/decisions/0017), so from kSpreadMinCpus they spread even where
  // the processes leave no cores to spare.
  const bool parallel_listeners = config.listener_workers > 1 && cpus >= kSpreadMinCpus;
  c.spread = config.placement == P::All || (config.placement != P::One && (c.roomy || parallel_listeners));
  // Spinning pays only where the processes do not wait for each other's
  // CPU; on shared cores it delays the very process it waits for
  // (docs/decisions/0003).
  c.spin = config.spin_auto ? (c.spread && c.roomy ? kAutoSpinPolls : 0) : config.spin;
  return c;
}

std::uint32_t auto_listener_workers(const Config& config, std::uint32_t cpus_allowed, std::uint32_t others) {
  const auto cpus = cpus_given(config, cpus_allowed);
  if (config.placement == Config::Placement::One || !cores_to_spare(cpus, others + 1)) return 1;
  return std::clamp<std::uint32_t>((cpus - kListenerSpareCpus - others) / 2, 1, kMaxListenerWorkers);
}

std::string PlacementChoice::describe(const Config& config) const {
  std::string s = std::to_string(processes) + " processes, " + std::to_string(cpus) + " CPUs allowed: ";
  using P = Config::Placement;
  switch (config.placement) {
    case P::Auto:
      s += !spread ? "EDRI_CPUS=auto keeps listeners, broker and router on one CPU (few cores)"
           : roomy ? "EDRI_CPUS=auto spreads them (cores to spare)"
                   : "EDRI_CPUS=auto spreads them (several listeners; no cores to spare)";
      break;
    case P::One: s += "EDRI_CPUS=one: every process on one CPU"; break;
    case P::All: s += "EDRI_CPUS=all: wherever the scheduler puts them"; break;
    case P::List: s += "EDRI_CPUS pins them to a list"; break;
  }
  s += spin ? "; spinning up to " + std::to_string(spin) + " polls while traffic is recent" : "; no spinning";
  s += config.spin_auto ? " (EDRI_SPIN=auto)" : " (EDRI_SPIN)";
  s += "; " + std::to_string(config.listener_workers) + (config.listener_workers == 1 ? " listener" : " listeners");
  s += config.listener_workers_auto ? " (EDRI_LISTENER_WORKERS=auto)" : " (EDRI_LISTENER_WORKERS)";
  return s;
}

std::vector<int> allowed_cpus() {
  std::vector<int> out;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) == 0)
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) out.push_back(c);
  return out;
}

bool let_thread_float(std::thread& t, const std::vector<int>& cpus) {
  if (cpus.empty()) return true;
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cpus) CPU_SET(c, &set);
  return ::pthread_setaffinity_np(t.native_handle(), sizeof set, &set) == 0;
}

CpuHolds::CpuHolds(std::span<std::atomic<std::uint16_t>> holders, std::size_t home, std::uint16_t slot)
    : holders_(holders), home_(home), slot_(slot) {
  for (auto& h : holders_) {
    auto mine = slot_;
    h.compare_exchange_strong(mine, 0, std::memory_order_acq_rel);
  }
}

bool CpuHolds::try_take(std::size_t position) {
  std::uint16_t none = 0;
  if (!holders_[position].compare_exchange_strong(none, slot_, std::memory_order_acq_rel)) return false;
  held_ = position;
  return true;
}

std::optional<std::size_t> CpuHolds::take() {
  if (held_) return held_;
  for (std::size_t p = 0; p < holders_.size(); ++p)
    if (p != home_ && try_take(p)) return held_;
  if (home_ < holders_.size() && try_take(home_)) return held_;
  return std::nullopt;
}

std::optional<std::size_t> CpuHolds::take_better() {
  if (held_ != home_) return std::nullopt;
  for (std::size_t p = 0; p < holders_.size(); ++p)
    if (p != home_ && try_take(p)) {
      holders_[home_].store(0, std::memory_order_release);
      return held_;
    }
  return std::nullopt;
}

void CpuHolds::give_back() {
  if (!held_) return;
  holders_[*held_].store(0, std::memory_order_release);
  held_.reset();
}

}  // namespace edri
