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
    const auto [result, cpu] =
        run_load_with_cpu(context, name, load_options(context, server.port, c), supervisor, notes);
    if (result.interrupted) return ScenarioOutcome::kInterrupted;
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
