#pragma once

// The steps every scenario takes: start a server, run measured loads against
// it, print the report header.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "load_generator.hpp"
#include "reference_servers.hpp"
#include "report.hpp"
#include "scenarios.hpp"

namespace edri::bench {

using EnvironmentVariables = std::vector<std::pair<std::string, std::string>>;

// The scenarios' default --concurrency, unless they say otherwise.
inline const std::vector<int> kDefaultConcurrencies{1, 8, 32};

// --server-cpus, --verbose and the stop flag, plus this start's environment.
ServerSettings server_settings(const ScenarioContext& context, EnvironmentVariables extra_env = {});

// Starts a server, saying so on stderr. When it is not running for a reason
// other than an interrupt, says why on stderr and in `notes` ("<name>: ...").
StartedServer start_server_reporting(ServerKind kind, const std::string& name, const ServerSettings& settings,
                                     std::vector<std::string>& notes);

// What a table shows for a server that is not running.
std::string unavailable_cell(const StartedServer& server);

// Adds a note when the server has exited since it was started.
void note_if_exited(StartedServer& server, const std::string& name, int concurrency, std::vector<std::string>& notes);

// --warmup, --duration and the stop flag for one run at `concurrency`
// against 127.0.0.1:`port`; the request is GET /noop until the caller sets
// another.
LoadOptions load_options(const ScenarioContext& context, std::uint16_t port, int concurrency);

// Runs `load` with bench pinned to --client-cpu for this run only, so that
// servers started between runs do not inherit the pin. Prints
// "running <label> c=N ..." and then the figures, on stderr.
LoadResult run_reported_load(const ScenarioContext& context, const std::string& label, const LoadOptions& load);

// run_reported_load, with the CPU `supervisor`'s children used per request
// over the measured window (µs): nullopt, said on stderr and in `notes`,
// when /proc cannot tell it.
struct LoadWithCpu {
  LoadResult result;
  std::optional<double> cpu_us;
};
LoadWithCpu run_load_with_cpu(const ScenarioContext& context, const std::string& label, LoadOptions load,
                              pid_t supervisor, std::vector<std::string>& notes);

// Keeps a run's figures, and says in the notes when it had errors (the
// tables only count them).
void add_measured_row(const std::string& label, int c, const RunSummary& summary, const std::string& first_error,
                      std::vector<Row>& rows, std::vector<std::string>& notes);

// A row saying `why` for each label at each concurrency.
void add_unavailable_rows(const std::vector<std::string>& labels, const std::vector<int>& concurrencies,
                          const std::string& why, std::vector<Row>& rows);

// One HTTP/1.1 or WebSocket run of `load` (run_reported_load), kept with
// add_measured_row; false when interrupted.
bool measure_http_row(const ScenarioContext& context, const std::string& label, const LoadOptions& load,
                      std::vector<Row>& rows, std::vector<std::string>& notes);

// Runs `f` with bench pinned to --client-cpu for that call only, as
// run_reported_load runs its load (for loads it does not drive).
void with_client_pin(const ScenarioContext& context, const std::function<void()>& f);

// The context line, "load: <load_description>, warm-up ..., measured ... per
// run" with any pinning, and a blank line.
// `timed`: false for scenarios without a timed load (startup, session):
// the description alone.
void print_report_header(const ScenarioContext& context, std::string_view load_description, bool timed = true);

// A blocking GET of 127.0.0.1:port/path: the body of a 200, or nullopt.
// With `json`, a POST of it.
std::optional<std::string> fetch(std::uint16_t port, const std::string& path, int timeout_ms,
                                 const std::optional<std::string>& json = std::nullopt);

// A number field of a flat JSON object, without a JSON library.
std::optional<double> json_number(const std::string& body, const std::string& key);

}  // namespace edri::bench
