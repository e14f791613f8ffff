// Where a request waits (issue 39): edri's loop counters and each
// process's CPU, read from /metrics before and after a load, per request.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace edri::bench {

// One read of /metrics: per process, its loop counters and CPU seconds
// (edri_loop_*, edri_process_cpu_seconds_total); the responses sent so far.
struct LoopSample {
  std::map<std::string, std::map<std::string, double>> by_process;
  double requests = 0;
  std::chrono::steady_clock::time_point at;
};
std::optional<LoopSample> sample_loops(std::uint16_t port);

// What one process did per request between two samples.
struct LoopRow {
  int concurrency = 0;
  std::string process;
  double cpu_cores = 0;  // CPU used over the window, in cores
  double turns = 0;      // per request: loop turns that found work
  double records_per_turn = 0;
  double sleeps = 0;   // per request
  double rings = 0;    // per request: doorbell rings made to it
  double wake_us = 0;  // mean time from a ring to the turn it started
  double spins = 0;    // per request: turns spent spinning
};
// Rows of `after` against `before`, one per process that took part.
std::vector<LoopRow> loop_rows(int concurrency, const LoopSample& before, const LoopSample& after);

void print_loop_table(const std::vector<LoopRow>& rows);

}  // namespace edri::bench
