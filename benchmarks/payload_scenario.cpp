// payload: GET /payload/{bytes} of 1 KB, 100 KB, 1 MB and 16 MB from edri
// and from nginx (the same bytes as files, sent with sendfile), side by side.
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "report.hpp"
#include "scenario_support.hpp"
#include "scenarios.hpp"

namespace edri::bench {
namespace {

struct Cell {
  std::optional<RunSummary> summary;
  std::string unavailable;
};

}  // namespace

ScenarioOutcome run_payload_scenario(const ScenarioContext& context) {
  const std::vector<int> concurrencies = context.options.concurrencies_or({8});
  std::vector<std::string> notes;
  // (server, size, concurrency) -> cell
  std::map<std::tuple<std::string, std::size_t, int>, Cell> cells;
  ScenarioOutcome outcome = ScenarioOutcome::kDone;
  for (ServerKind kind : {ServerKind::kEdri, ServerKind::kNginx}) {
    const std::string name(display_name(kind));
    StartedServer server = start_server_reporting(kind, name, server_settings(context), notes);
    if (server.outcome == StartedServer::Outcome::kInterrupted) return ScenarioOutcome::kInterrupted;
    for (std::size_t size : kPayloadSizes)
      for (int c : concurrencies) {
        Cell& cell = cells[{name, size, c}];
        if (server.outcome != StartedServer::Outcome::kRunning) {
          cell.unavailable = unavailable_cell(server);
          continue;
        }
        LoadOptions load = load_options(context, server.port, c);
        load.request.method = "GET";
        load.request.target = "/payload/" + std::to_string(size);
        const LoadResult result = run_reported_load(context, name + " " + std::to_string(size) + " B", load);
        if (result.interrupted || context.interrupted()) return ScenarioOutcome::kInterrupted;
        cell.summary = summarize(result);
        if (!result.first_error.empty())
          notes.push_back(name + " " + std::to_string(size) + " B: " + result.first_error);
        note_if_exited(server, name, c, notes);
      }
    if (server.outcome == StartedServer::Outcome::kFailed) outcome = ScenarioOutcome::kServerFailed;
  }

  print_report_header(context,
                      "keep-alive GET /payload/{bytes}: edri (bench_app; bodies from EDRI_BLOB_THRESHOLD on through "
                      "the blob area, above 1 MiB streamed in 64 KiB pieces with Content-Length) beside nginx (the "
                      "same bytes as files, sendfile on)");
  std::printf(
      "| bytes | c | edri req/s | edri MB/s | edri p50 ms | edri p99 ms | nginx req/s | nginx MB/s | nginx p50 ms | "
      "nginx p99 ms | edri/nginx |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (std::size_t size : kPayloadSizes)
    for (int c : concurrencies) {
      std::string line = "| " + std::to_string(size) + " | " + std::to_string(c);
      const Cell& e = cells[{"edri", size, c}];
      const Cell& n = cells[{"nginx", size, c}];
      auto add = [&](const Cell& cell) {
        char buf[160];
        if (!cell.summary) {
          line += " | " + (cell.unavailable.empty() ? std::string("-") : cell.unavailable) + " | - | - | -";
          return;
        }
        const auto& s = *cell.summary;
        const bool failed = s.errors > 0 || s.non_2xx > 0;
        std::snprintf(buf, sizeof buf, " | %.0f%s | %.1f | %.3f | %.3f", s.requests_per_second,
                      failed ? " (errors)" : "", s.requests_per_second * static_cast<double>(size) / 1e6, s.p50_ms,
                      s.p99_ms);
        line += buf;
      };
      add(e);
      add(n);
      char ratio[32] = "-";
      if (e.summary && n.summary && n.summary->requests_per_second > 0)
        std::snprintf(ratio, sizeof ratio, "%.2fx", e.summary->requests_per_second / n.summary->requests_per_second);
      line += std::string(" | ") + ratio + " |";
      std::printf("%s\n", line.c_str());
    }
  print_notes(notes);
  return outcome;
}

}  // namespace edri::bench
