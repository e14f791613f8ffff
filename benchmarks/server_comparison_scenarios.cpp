// noop and compare: GET /noop on one or more servers, each started once and
// measured at every concurrency.
#include <cstdio>
#include <string>
#include <vector>

#include "report.hpp"
#include "scenario_support.hpp"
#include "scenarios.hpp"

namespace edri::bench {
namespace {

enum class ServerRunOutcome { kDone, kUnavailable, kFailed, kInterrupted };

// Starts `kind` once and measures it at every concurrency, appending one row
// per concurrency (unavailable rows too, so every table has the same shape).
ServerRunOutcome measure_server(const ScenarioContext& context, ServerKind kind, const std::vector<int>& concurrencies,
                                std::vector<Row>& rows, std::vector<std::string>& notes) {
  const std::string name(display_name(kind));
  StartedServer server = start_server_reporting(kind, name, server_settings(context), notes);
  if (server.outcome == StartedServer::Outcome::kInterrupted) return ServerRunOutcome::kInterrupted;
  if (server.outcome != StartedServer::Outcome::kRunning) {
    for (int c : concurrencies) rows.push_back(Row{name, c, std::nullopt, unavailable_cell(server)});
    return server.outcome == StartedServer::Outcome::kNotInstalled ? ServerRunOutcome::kUnavailable
                                                                   : ServerRunOutcome::kFailed;
  }

  for (int c : concurrencies) {
    const LoadResult result = run_reported_load(context, name, load_options(context, server.port, c));
    if (result.interrupted) return ServerRunOutcome::kInterrupted;
    rows.push_back(Row{name, c, summarize(result), {}});
    note_if_exited(server, name, c, notes);
  }
  std::fprintf(stderr, "stopping %s ...\n", name.c_str());
  return ServerRunOutcome::kDone;
}

// Measures `servers` one after the other; a server that is not installed
// leaves its rows marked and the others still run.
ScenarioOutcome measure_servers(const ScenarioContext& context, const std::vector<ServerKind>& servers,
                                const std::vector<int>& concurrencies, std::vector<Row>& rows,
                                std::vector<std::string>& notes) {
  bool any_failed = false;
  for (ServerKind kind : servers) {
    const ServerRunOutcome outcome = measure_server(context, kind, concurrencies, rows, notes);
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
  const ScenarioOutcome outcome = measure_servers(context, {ServerKind::kEdri}, concurrencies, rows, notes);
  if (outcome == ScenarioOutcome::kInterrupted) return outcome;
  print_report_header(context, "keep-alive GET /noop");
  print_noop_table(rows);
  print_notes(notes);
  return outcome;
}

ScenarioOutcome run_compare_scenario(const ScenarioContext& context) {
  const std::vector<int>& concurrencies = context.options.concurrencies_or(kDefaultConcurrencies);
  std::vector<Row> rows;
  std::vector<std::string> notes;
  const ScenarioOutcome outcome = measure_servers(
      context, {ServerKind::kEdri, ServerKind::kFastApi, ServerKind::kNginx}, concurrencies, rows, notes);
  if (outcome == ScenarioOutcome::kInterrupted) return outcome;
  print_report_header(context, "keep-alive GET /noop");
  print_compare_table(rows, concurrencies);
  print_notes(notes);
  return outcome;
}

}  // namespace edri::bench
