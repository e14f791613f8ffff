#include "runtime/placement.hpp"

#include <sched.h>

#include <algorithm>

namespace edri {

namespace {

bool cores_to_spare(std::uint32_t cpus, std::uint32_t processes) {
  return cpus >= std::max(kSpreadMinCpus, processes + kSpareCpus);
}

}  // namespace

PlacementChoice choose_placement(const Config& config, std::uint32_t cpus_allowed, std::uint32_t processes) {
  PlacementChoice c;
  c.cpus = cpus_allowed;
  c.processes = processes;
  using P = Config::Placement;
  switch (config.placement) {
    case P::Auto: c.spread = cores_to_spare(cpus_allowed, processes); break;
    case P::All: c.spread = true; break;
    case P::List: c.spread = cores_to_spare(static_cast<std::uint32_t>(config.cpus.size()), processes); break;
    case P::One: c.spread = false; break;
  }
  // Spinning pays only where the processes do not wait for each other's
  // CPU; on shared cores it delays the very process it waits for
  // (docs/decisions/0003).
  const bool own_cores = c.spread && (config.placement != P::All || cores_to_spare(cpus_allowed, processes));
  c.spin = config.spin_auto ? (own_cores ? kAutoSpinPolls : 0) : config.spin;
  return c;
}

std::string PlacementChoice::describe(const Config& config) const {
  std::string s = std::to_string(processes) + " processes, " + std::to_string(cpus) + " CPUs allowed: ";
  using P = Config::Placement;
  switch (config.placement) {
    case P::Auto:
      s += spread ? "EDRI_CPUS=auto spreads them (cores to spare)"
                  : "EDRI_CPUS=auto keeps listeners, broker and router on one CPU (few cores)";
      break;
    case P::One: s += "EDRI_CPUS=one: every process on one CPU"; break;
    case P::All: s += "EDRI_CPUS=all: wherever the scheduler puts them"; break;
    case P::List: s += "EDRI_CPUS pins them to a list"; break;
  }
  s += spin ? "; spinning up to " + std::to_string(spin) + " polls while traffic is recent" : "; no spinning";
  s += config.spin_auto ? " (EDRI_SPIN=auto)" : " (EDRI_SPIN)";
  return s;
}

std::uint32_t allowed_cpu_count() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) != 0) return 1;
  return static_cast<std::uint32_t>(std::max(1, CPU_COUNT(&set)));
}

}  // namespace edri
