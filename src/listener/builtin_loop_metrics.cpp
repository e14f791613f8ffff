// BuiltinEndpoints, the loops' part of /metrics: what each process's loop
// did (LoopStats in shm_layout.hpp) and the CPU it used, so that a request
// can be followed by the wake-ups it caused (issue 39; docs/performance.md
// "Where a request waits"); and per domain, its managers summed, what
// waits in their channels and in their handlers.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <optional>
#include <string_view>
#include <vector>

#include "listener/builtin_endpoints.hpp"
#include "listener/proc_stat.hpp"

namespace edri::listener {

namespace {

// utime + stime of `pid`, every thread, in seconds; nullopt when it is gone.
std::optional<double> cpu_seconds(std::uint32_t pid) {
  const auto fields = proc_stat_fields(pid);
  unsigned long utime = 0, stime = 0;
  // utime and stime are the 12th and 13th fields from the state on.
  if (!fields ||
      std::sscanf(fields->c_str(), "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &utime, &stime) != 2)
    return std::nullopt;
  return static_cast<double>(utime + stime) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

}  // namespace

void BuiltinEndpoints::loop_metrics(std::ostringstream& o) const {
  struct Counter {
    const char* name;
    const char* help;
    std::atomic<std::uint64_t> transport::LoopStats::*field;
    double scale = 1;
  };
  static constexpr Counter kCounters[] = {
      {"edri_loop_turns_total", "Loop turns that found work.", &transport::LoopStats::turns},
      {"edri_loop_records_total", "Records the loop took from its inbound channels.", &transport::LoopStats::records},
      {"edri_loop_spin_turns_total", "Loop turns spent spinning (EDRI_SPIN) that found nothing.",
       &transport::LoopStats::spins},
      {"edri_loop_sleeps_total", "Times the loop blocked in epoll_wait.", &transport::LoopStats::sleeps},
      {"edri_loop_sleep_seconds_total", "Time the loop spent blocked.", &transport::LoopStats::slept_us, 1e-6},
      {"edri_loop_rung_wakeups_total", "Sleeps a doorbell ring ended.", &transport::LoopStats::woken},
      {"edri_loop_wakeup_delay_seconds_total", "Time from those rings to the turn they started.",
       &transport::LoopStats::wake_us, 1e-6},
  };
  for (const auto& c : kCounters) {
    o << "# HELP " << c.name << ' ' << c.help << "\n# TYPE " << c.name << " counter\n";
    for (std::uint32_t s = 1; s < topology_.process_slots(); ++s) {
      const auto v = (segment_.doorbell(s).loop.*c.field).load(std::memory_order_relaxed);
      o << c.name << "{process=\"" << label(slot_names_[s]) << "\"} " << static_cast<double>(v) * c.scale << '\n';
    }
  }
  o << "# HELP edri_loop_doorbell_rings_total Doorbell rings (eventfd writes) made to the process.\n"
       "# TYPE edri_loop_doorbell_rings_total counter\n";
  for (std::uint32_t s = 1; s < topology_.process_slots(); ++s)
    o << "edri_loop_doorbell_rings_total{process=\"" << label(slot_names_[s]) << "\"} "
      << segment_.doorbell(s).rings.load(std::memory_order_relaxed) << '\n';
  if (config_.tracing()) {
    o << "# HELP edri_trace_spans_dropped_total Spans a process dropped: its exporter was behind (EDRI_TRACE_BUFFER).\n"
         "# TYPE edri_trace_spans_dropped_total counter\n";
    for (std::uint32_t s = 1; s < topology_.process_slots(); ++s)
      o << "edri_trace_spans_dropped_total{process=\"" << label(slot_names_[s]) << "\"} "
        << segment_.doorbell(s).spans_dropped.load(std::memory_order_relaxed) << '\n';
    o << "# HELP edri_trace_batches_failed_total Export requests a process failed to POST to "
         "EDRI_TRACE_OTLP_ENDPOINT (not retried: their spans are lost to it).\n"
         "# TYPE edri_trace_batches_failed_total counter\n";
    for (std::uint32_t s = 1; s < topology_.process_slots(); ++s)
      o << "edri_trace_batches_failed_total{process=\"" << label(slot_names_[s]) << "\"} "
        << segment_.doorbell(s).trace_batches_failed.load(std::memory_order_relaxed) << '\n';
  }
  o << "# HELP edri_process_cpu_seconds_total CPU time the process used (user and system, every thread).\n"
       "# TYPE edri_process_cpu_seconds_total counter\n";
  // Once per process, under its first slot: a domain run inside the
  // listener (EDRI_LISTENER_DOMAINS) shares the listener's pid.
  std::vector<std::uint32_t> counted;
  for (std::uint32_t s = 1; s < topology_.process_slots(); ++s) {
    const auto pid = segment_.doorbell(s).pid.load(std::memory_order_relaxed);
    if (std::find(counted.begin(), counted.end(), pid) != counted.end()) continue;
    counted.push_back(pid);
    if (const auto cpu = cpu_seconds(pid))
      o << "edri_process_cpu_seconds_total{process=\"" << label(slot_names_[s]) << "\"} " << *cpu << '\n';
  }
}

void BuiltinEndpoints::domain_metrics(std::ostringstream& o) const {
  std::vector<std::uint64_t> queued(domains_.size()), waiting(domains_.size()), calls(domains_.size());
  auto domain_of = [&](std::uint32_t slot) -> std::size_t {
    const auto it = std::find(domains_.begin(), domains_.end(), slot_domains_[slot]);
    return slot_domains_[slot].empty() ? domains_.size() : static_cast<std::size_t>(it - domains_.begin());
  };
  const auto& specs = topology_.channels();
  for (std::uint32_t c = 0; c < specs.size(); ++c)
    if (const auto d = domain_of(specs[c].consumer); d < domains_.size()) {
      const auto& ctl = segment_.control(c);
      queued[d] += ctl.tail.load(std::memory_order_relaxed) - ctl.head.load(std::memory_order_relaxed);
    }
  for (std::uint32_t s = 1; s < topology_.process_slots(); ++s)
    if (const auto d = domain_of(s); d < domains_.size()) {
      waiting[d] += segment_.doorbell(s).loop.waiting.load(std::memory_order_relaxed);
      calls[d] += segment_.doorbell(s).loop.calls.load(std::memory_order_relaxed);
    }
  const struct {
    const char* name;
    const char* help;
    const std::vector<std::uint64_t>& values;
  } gauges[] = {
      {"edri_domain_queue_bytes", "Bytes written to a domain's managers and not yet read.", queued},
      {"edri_domain_waiting_requests",
       "Requests a domain's handlers hold while they wait (coroutines, streamed answers being made).", waiting},
      {"edri_domain_waiting_calls", "Calls a domain's handlers made (to other domains, live streams) not yet answered.",
       calls},
  };
  for (const auto& g : gauges) {
    o << "# HELP " << g.name << ' ' << g.help << "\n# TYPE " << g.name << " gauge\n";
    for (std::size_t d = 0; d < domains_.size(); ++d)
      o << g.name << "{domain=\"" << label(domains_[d]) << "\"} " << g.values[d] << '\n';
  }
}

}  // namespace edri::listener
