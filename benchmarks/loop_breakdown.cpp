#include "loop_breakdown.hpp"

#include <cstdio>
#include <sstream>

#include "scenario_support.hpp"

namespace edri::bench {

namespace {

// `name{process="p"} value` lines of the loop counters; the sum of
// edri_requests_total's lines.
void read_line(const std::string& line, LoopSample& s) {
  const auto space = line.rfind(' ');
  if (line.empty() || line[0] == '#' || space == std::string::npos) return;
  const double value = std::strtod(line.c_str() + space + 1, nullptr);
  if (line.rfind("edri_requests_total{", 0) == 0) {
    s.requests += value;
    return;
  }
  const bool loop = line.rfind("edri_loop_", 0) == 0 || line.rfind("edri_process_cpu_seconds_total", 0) == 0;
  const auto open = line.find("{process=\"");
  if (!loop || open == std::string::npos) return;
  const auto from = open + 10, to = line.find('"', from);
  if (to == std::string::npos) return;
  s.by_process[line.substr(from, to - from)][line.substr(0, open)] = value;
}

double per(double n, double d) { return d > 0 ? n / d : 0; }

}  // namespace

std::optional<LoopSample> sample_loops(std::uint16_t port) {
  LoopSample s;
  s.at = std::chrono::steady_clock::now();
  const auto body = fetch(port, "/metrics", 5000);
  if (!body) return std::nullopt;
  std::istringstream in(*body);
  for (std::string line; std::getline(in, line);) read_line(line, s);
  return s;
}

std::vector<LoopRow> loop_rows(int concurrency, const LoopSample& before, const LoopSample& after) {
  std::vector<LoopRow> rows;
  const double requests = after.requests - before.requests;
  const double seconds = std::chrono::duration<double>(after.at - before.at).count();
  for (const auto& [process, a] : after.by_process) {
    const auto found = before.by_process.find(process);
    if (found == before.by_process.end()) continue;
    const auto& b = found->second;
    auto delta = [&](const char* name) {
      const auto x = a.find(name), y = b.find(name);
      return x == a.end() || y == b.end() ? 0.0 : x->second - y->second;
    };
    LoopRow r{concurrency, process};
    r.cpu_cores = per(delta("edri_process_cpu_seconds_total"), seconds);
    r.turns = per(delta("edri_loop_turns_total"), requests);
    r.records_per_turn = per(delta("edri_loop_records_total"), delta("edri_loop_turns_total"));
    r.sleeps = per(delta("edri_loop_sleeps_total"), requests);
    r.rings = per(delta("edri_loop_doorbell_rings_total"), requests);
    r.wake_us = per(delta("edri_loop_wakeup_delay_seconds_total") * 1e6, delta("edri_loop_rung_wakeups_total"));
    r.spins = per(delta("edri_loop_spin_turns_total"), requests);
    if (r.turns > 0 || r.cpu_cores >= 0.005) rows.push_back(r);
  }
  return rows;
}

void print_loop_table(const std::vector<LoopRow>& rows) {
  std::printf(
      "\nwhere a request waits: each process's loop per request over the whole run (warm-up included), from "
      "/metrics\n\n");
  std::printf(
      "| c | process | CPU, cores | turns / req | records / turn | sleeps / req | rings / req | ring to turn us | "
      "spin turns / req |\n");
  std::printf("|---:|---|---:|---:|---:|---:|---:|---:|---:|\n");
  for (const auto& r : rows)
    std::printf("| %d | %s | %.2f | %.2f | %.2f | %.2f | %.2f | %.1f | %.1f |\n", r.concurrency, r.process.c_str(),
                r.cpu_cores, r.turns, r.records_per_turn, r.sleeps, r.rings, r.wake_us, r.spins);
}

}  // namespace edri::bench
