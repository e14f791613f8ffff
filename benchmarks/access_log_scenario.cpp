// accesslog: what the access log and tracing cost. GET /noop on edri
// started with EDRI_ACCESS_LOG=off, combined and json (to a file in a
// temporary folder), then json with requests traced (EDRI_TRACE_PATH, a
// file of OTLP JSON; EDRI_TRACE_SAMPLE=1 and 0.1), one start each, with the CPU
// edri's processes used per request; each setting's rate against off's at
// the same concurrency.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "report.hpp"
#include "scenario_support.hpp"
#include "scenarios.hpp"

namespace edri::bench {
namespace {

// The access log's settings, then json with traces: every one exported
// ("traced"), or one in ten ("sampled", EDRI_TRACE_SAMPLE=0.1).
const std::vector<std::string> kSettings{"off", "combined", "json", "traced", "sampled"};

std::string label_of(const std::string& setting) {
  if (setting == "traced") return "edri, EDRI_ACCESS_LOG=json + all traces";
  if (setting == "sampled") return "edri, EDRI_ACCESS_LOG=json + 1 trace in 10";
  return "edri, EDRI_ACCESS_LOG=" + setting;
}

bool traces(const std::string& setting) { return setting == "traced" || setting == "sampled"; }

// Removed with what the servers wrote into it.
struct LogFolder {
  std::filesystem::path path;
  LogFolder() {
    std::string tmpl = "/tmp/edri-bench-access.XXXXXX";
    if (::mkdtemp(tmpl.data())) path = tmpl;
  }
  ~LogFolder() {
    std::error_code ec;
    if (!path.empty()) std::filesystem::remove_all(path, ec);
  }
};

ScenarioOutcome measure_setting(const ScenarioContext& context, const std::string& setting, const LogFolder& folder,
                                const std::vector<int>& concurrencies, std::vector<Row>& rows,
                                std::vector<std::pair<std::string, double>>& cpu, std::vector<std::string>& notes) {
  const std::string name = label_of(setting);
  const auto file = folder.path / (setting + ".log");
  const auto spans = folder.path / (setting + ".spans");
  EnvironmentVariables env{{"EDRI_ACCESS_LOG", traces(setting) ? "json" : setting},
                           {"EDRI_ACCESS_LOG_PATH", file.string()}};
  if (traces(setting))
    env.insert(env.end(),
               {{"EDRI_TRACE_PATH", spans.string()}, {"EDRI_TRACE_SAMPLE", setting == "traced" ? "1" : "0.1"}});
  StartedServer server =
      start_server_reporting(ServerKind::kEdri, name, server_settings(context, std::move(env)), notes);
  if (server.outcome == StartedServer::Outcome::kInterrupted) return ScenarioOutcome::kInterrupted;
  if (server.outcome != StartedServer::Outcome::kRunning) {
    add_unavailable_rows({name}, concurrencies, unavailable_cell(server), rows);
    return ScenarioOutcome::kServerFailed;
  }
  for (int c : concurrencies) {
    const auto [result, cpu_us] =
        run_load_with_cpu(context, name, load_options(context, server.port, c), server.process->pid(), notes);
    if (result.interrupted) return ScenarioOutcome::kInterrupted;
    add_measured_row(name, c, summarize(result), result.first_error, rows, notes);
    if (cpu_us) cpu.emplace_back(name + " c=" + std::to_string(c), *cpu_us);
    note_if_exited(server, name, c, notes);
  }
  std::error_code ec;
  const auto bytes = std::filesystem::file_size(file, ec);
  if (!ec)
    std::fprintf(stderr, "  %s wrote %ju bytes of access log\n", name.c_str(), static_cast<std::uintmax_t>(bytes));
  if (const auto traced = std::filesystem::file_size(spans, ec); !ec)
    std::fprintf(stderr, "  %s wrote %ju bytes of spans\n", name.c_str(), static_cast<std::uintmax_t>(traced));
  std::fprintf(stderr, "stopping %s ...\n", name.c_str());
  return ScenarioOutcome::kDone;
}

}  // namespace

ScenarioOutcome run_access_log_scenario(const ScenarioContext& context) {
  const std::vector<int>& concurrencies = context.options.concurrencies_or(kDefaultConcurrencies);
  const LogFolder folder;
  std::vector<Row> rows;
  std::vector<std::pair<std::string, double>> cpu;
  std::vector<std::string> notes;
  bool any_failed = false;
  for (const auto& setting : kSettings) {
    const ScenarioOutcome outcome = measure_setting(context, setting, folder, concurrencies, rows, cpu, notes);
    if (outcome == ScenarioOutcome::kInterrupted || context.interrupted()) return ScenarioOutcome::kInterrupted;
    any_failed = any_failed || outcome == ScenarioOutcome::kServerFailed;
  }
  print_report_header(context,
                      "keep-alive GET /noop, one edri start per EDRI_ACCESS_LOG setting (off, combined, json) and "
                      "json with requests traced (EDRI_TRACE_PATH; EDRI_TRACE_SAMPLE=1 and 0.1), the log and the spans "
                      "written to files on " +
                          folder.path.parent_path().string());
  std::vector<RateLine> lines;
  for (const auto& s : kSettings) lines.push_back({label_of(s), "req/s"});
  print_rate_table(rows, lines, concurrencies);
  std::printf("\n");
  print_ratio_table(rows,
                    {{"combined / off", label_of("combined"), label_of("off"), ">= 0.95x at c=32"},
                     {"json / off", label_of("json"), label_of("off"), ">= 0.95x at c=32"},
                     {"json + all traces / off", label_of("traced"), label_of("off"), ">= 0.95x at c=32"},
                     {"json + 1 trace in 10 / off", label_of("sampled"), label_of("off"), ">= 0.95x at c=32"}},
                    concurrencies);
  std::printf("\n| server CPU per request | us |\n|---|---:|\n");
  for (const auto& [what, us] : cpu) std::printf("| %s | %.2f |\n", what.c_str(), us);
  print_notes(notes);
  return any_failed ? ScenarioOutcome::kServerFailed : ScenarioOutcome::kDone;
}

}  // namespace edri::bench
