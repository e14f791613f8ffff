// noop and compare: GET /noop on one or more servers, each started once and
// measured at every concurrency.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "children_cpu_time.hpp"
#include "loop_breakdown.hpp"
#include "report.hpp"
#include "scenario_support.hpp"
#include "scenarios.hpp"

namespace edri::bench {
namespace {

enum class ServerRunOutcome { kDone, kUnavailable, kFailed, kInterrupted };

// A server of a comparison: its kind and processes (uvicorn workers,
// nginx worker processes; edri ignores it).
struct Contender {
  ServerKind kind;
  int workers = 1;
  std::string label = {};  // its name in the tables, where not the kind's
  EnvironmentVariables env = {};
  std::string name() const {
    if (!label.empty()) return label;
    std::string n(display_name(kind));
    if (workers > 1) n.append(" ").append(std::to_string(workers)).append(" workers");
    return n;
  }
};

// How many listener processes a running edri has (EDRI_LISTENER_WORKERS=auto
// settles it by the machine).
int listener_processes(const StartedServer& server) {
  int n = 0;
  if (const auto children = children_cpu_time(server.process->pid()))
    for (pid_t pid : children->pids) n += process_title(pid).rfind("edri-server: listener", 0) == 0;
  return n;
}

// Starts `who` once and measures it at every concurrency, appending one row
// per concurrency (unavailable rows too, so every table has the same shape).
// `listeners`, when given, learns how many listener processes edri runs;
// `loops`, when given, gets edri's loops per request at each concurrency.
ServerRunOutcome measure_server(const ScenarioContext& context, const Contender& who,
                                const std::vector<int>& concurrencies, std::vector<Row>& rows,
                                std::vector<std::string>& notes, int* listeners = nullptr,
                                std::vector<LoopRow>* loops = nullptr) {
  const std::string name = who.name();
  ServerSettings settings = server_settings(context, who.env);
  settings.workers = who.workers;
  StartedServer server = start_server_reporting(who.kind, name, settings, notes);
  if (server.outcome == StartedServer::Outcome::kInterrupted) return ServerRunOutcome::kInterrupted;
  if (server.outcome != StartedServer::Outcome::kRunning) {
    for (int c : concurrencies) rows.push_back(Row{name, c, std::nullopt, unavailable_cell(server)});
    return server.outcome == StartedServer::Outcome::kNotInstalled ? ServerRunOutcome::kUnavailable
                                                                   : ServerRunOutcome::kFailed;
  }

  for (int c : concurrencies) {
    const auto before = loops ? sample_loops(server.port) : std::nullopt;
    const LoadResult result = run_reported_load(context, name, load_options(context, server.port, c));
    if (result.interrupted) return ServerRunOutcome::kInterrupted;
    if (const auto after = before ? sample_loops(server.port) : std::nullopt)
      for (auto& r : loop_rows(c, *before, *after)) loops->push_back(std::move(r));
    rows.push_back(Row{name, c, summarize(result), {}});
    note_if_exited(server, name, c, notes);
  }
  // Counted once measured: by then every listener has long started.
  if (listeners != nullptr) *listeners = std::max(1, listener_processes(server));
  std::fprintf(stderr, "stopping %s ...\n", name.c_str());
  return ServerRunOutcome::kDone;
}

// Measures `servers` one after the other; a server that is not installed
// leaves its rows marked and the others still run.
ScenarioOutcome measure_servers(const ScenarioContext& context, const std::vector<Contender>& servers,
                                const std::vector<int>& concurrencies, std::vector<Row>& rows,
                                std::vector<std::string>& notes) {
  bool any_failed = false;
  for (const Contender& who : servers) {
    const ServerRunOutcome outcome = measure_server(context, who, concurrencies, rows, notes);
    if (outcome == ServerRunOutcome::kInterrupted || context.interrupted()) return ScenarioOutcome::kInterrupted;
    any_failed = any_failed || outcome == ServerRunOutcome::kFailed;
  }
  return any_failed ? ScenarioOutcome::kServerFailed : ScenarioOutcome::kDone;
}

}  // namespace

ScenarioOutcome run_noop_scenario(const ScenarioContext& context) {
  const std::vector<int>& concurrencies = context.options.concurrencies_or(kDefaultConcurrencies);
  std::vector<Row> rows;
  std::vector<std::string> notes;
  std::vector<LoopRow> loops;
  const ServerRunOutcome edri =
      measure_server(context, {ServerKind::kEdri}, concurrencies, rows, notes, nullptr, &loops);
  if (edri == ServerRunOutcome::kInterrupted || context.interrupted()) return ScenarioOutcome::kInterrupted;
  print_report_header(context, "keep-alive GET /noop");
  print_noop_table(rows);
  if (!loops.empty()) print_loop_table(loops);
  print_notes(notes);
  return edri == ServerRunOutcome::kFailed ? ScenarioOutcome::kServerFailed : ScenarioOutcome::kDone;
}

ScenarioOutcome run_compare_scenario(const ScenarioContext& context) {
  const std::vector<int>& concurrencies = context.options.concurrencies_or(kDefaultConcurrencies);
  std::vector<Row> rows;
  std::vector<std::string> notes;
  // Upstream's columns: FastAPI with 1 and 4 workers; nginx with one worker
  // (the ratio column's), and with as many as edri has listener processes
  // where that is more (EDRI_LISTENER_WORKERS=auto on a machine with cores
  // to spare).
  int listeners = 1;
  const ServerRunOutcome edri = measure_server(context, {ServerKind::kEdri}, concurrencies, rows, notes, &listeners);
  if (edri == ServerRunOutcome::kInterrupted || context.interrupted()) return ScenarioOutcome::kInterrupted;
  // The same app with its domain run inside the listener (opt-in,
  // docs/decisions/0038): what the hops between processes cost.
  std::vector<Contender> others{{ServerKind::kEdri, 1, "edri, bench in listener", {{"EDRI_LISTENER_DOMAINS", "bench"}}},
                                {ServerKind::kFastApi, 1},
                                {ServerKind::kFastApi, 4},
                                {ServerKind::kNginx, 1}};
  if (listeners > 1) {
    others.push_back({ServerKind::kNginx, listeners});
    notes.push_back("edri ran " + std::to_string(listeners) + " listener processes; \"nginx " +
                    std::to_string(listeners) + " workers\" is their like");
  }
  ScenarioOutcome outcome = measure_servers(context, others, concurrencies, rows, notes);
  if (outcome == ScenarioOutcome::kInterrupted) return outcome;
  if (edri == ServerRunOutcome::kFailed) outcome = ScenarioOutcome::kServerFailed;
  print_report_header(context, "keep-alive GET /noop");
  print_compare_table(rows, concurrencies);
  print_notes(notes);
  return outcome;
}

}  // namespace edri::bench
