// middleware: what one pass-through middleware costs. GET /noop on edri
// started with BENCH_MIDDLEWARES=N for each N, with the CPU time edri's
// processes used per request; the difference to N=0, divided by N, is the
// cost of one middleware (request and response side).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "children_cpu_time.hpp"
#include "report.hpp"
#include "scenario_support.hpp"
#include "scenarios.hpp"

namespace edri::bench {
namespace {

const std::vector<int> kDefaultMiddlewareCounts{0, 1, 4, 8};
// One figure per middleware needs many requests behind it; c=32 keeps the
// server busy without measuring only queueing.
const std::vector<int> kDefaultMiddlewareConcurrencies{32};

// The CPU edri used per request over one measured window, from samples of
// its children taken as the window opened and closed (the supervisor only
// watches them). nullopt with `why_not` set when the samples do not allow it.
std::optional<double> cpu_us_per_request(const std::optional<ChildrenCpuTime>& at_start,
                                         const std::optional<ChildrenCpuTime>& at_end, std::uint64_t requests,
                                         std::string& why_not) {
  if (!at_start || !at_end) {
    why_not = "/proc could not be read";
  } else if (at_start->pids.empty()) {
    why_not = "no child processes of edri-server found";
  } else if (at_start->pids != at_end->pids) {
    why_not = "edri's processes changed during the measured window";
  } else if (requests == 0) {
    why_not = "no request completed";
  } else {
    return (at_end->seconds - at_start->seconds) / static_cast<double>(requests) * 1e6;
  }
  return std::nullopt;
}

// Starts edri with `middlewares` and measures it at every concurrency.
ScenarioOutcome measure_middlewares(const ScenarioContext& context, int middlewares,
                                    const std::vector<int>& concurrencies, std::vector<MiddlewareRow>& rows,
                                    std::vector<std::string>& notes) {
  const std::string name = "edri (BENCH_MIDDLEWARES=" + std::to_string(middlewares) + ")";
  const ServerSettings settings = server_settings(context, {{"BENCH_MIDDLEWARES", std::to_string(middlewares)}});
  StartedServer server = start_server_reporting(ServerKind::kEdri, name, settings, notes);
  if (server.outcome == StartedServer::Outcome::kInterrupted) return ScenarioOutcome::kInterrupted;
  if (server.outcome != StartedServer::Outcome::kRunning) {
    for (int c : concurrencies) {
      rows.push_back(MiddlewareRow{middlewares, Row{name, c, std::nullopt, unavailable_cell(server)}, std::nullopt});
    }
    return ScenarioOutcome::kServerFailed;
  }

  const pid_t supervisor = server.process->pid();
  for (int c : concurrencies) {
    std::optional<ChildrenCpuTime> at_start;
    std::optional<ChildrenCpuTime> at_end;
    LoadOptions load = load_options(context, server.port, c);
    load.on_window_start = [&] { at_start = children_cpu_time(supervisor); };
    load.on_window_end = [&] { at_end = children_cpu_time(supervisor); };
    const LoadResult result = run_reported_load(context, name, load);
    if (result.interrupted) return ScenarioOutcome::kInterrupted;

    std::string why_not;
    const std::optional<double> cpu = cpu_us_per_request(at_start, at_end, result.completed, why_not);
    if (cpu) {
      std::fprintf(stderr, "  server CPU: %.3f s in %zu processes, %.2f us/request\n",
                   at_end->seconds - at_start->seconds, at_end->pids.size(), *cpu);
    } else {
      std::fprintf(stderr, "  server CPU not measured: %s\n", why_not.c_str());
      notes.push_back(name + " c=" + std::to_string(c) + ": CPU not measured: " + why_not);
    }
    rows.push_back(MiddlewareRow{middlewares, Row{name, c, summarize(result), {}}, cpu});
    note_if_exited(server, name, c, notes);
  }
  std::fprintf(stderr, "stopping %s ...\n", name.c_str());
  return ScenarioOutcome::kDone;
}

}  // namespace

ScenarioOutcome run_middleware_scenario(const ScenarioContext& context) {
  const Options& options = context.options;
  const std::vector<int>& counts =
      options.middleware_counts.empty() ? kDefaultMiddlewareCounts : options.middleware_counts;
  const std::vector<int>& concurrencies = options.concurrencies_or(kDefaultMiddlewareConcurrencies);

  std::vector<MiddlewareRow> rows;
  std::vector<std::string> notes;
  if (std::find(counts.begin(), counts.end(), 0) == counts.end()) {
    notes.push_back("per middleware us is measured against N=0, which --middlewares left out");
  }
  bool any_failed = false;
  for (int middlewares : counts) {
    const ScenarioOutcome outcome = measure_middlewares(context, middlewares, concurrencies, rows, notes);
    if (outcome == ScenarioOutcome::kInterrupted || context.interrupted()) return ScenarioOutcome::kInterrupted;
    any_failed = any_failed || outcome == ScenarioOutcome::kServerFailed;
  }

  print_report_header(context, "keep-alive GET /noop, one edri start per middleware count");
  print_middleware_table(rows);
  std::printf(
      "\ncpu us/req: utime + stime of edri-server's child processes over the measured window, per request; "
      "per-middleware figures below ~0.1 us are within measurement noise (/proc counts CPU time in %g ms ticks).\n",
      cpu_tick_seconds() * 1e3);
  print_notes(notes);
  return any_failed ? ScenarioOutcome::kServerFailed : ScenarioOutcome::kDone;
}

}  // namespace edri::bench
