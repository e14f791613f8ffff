// Scenarios that use more than one core: worker threads (`worker`), CPU
// work spread over managers (`managers`), listener processes (`listener`),
// and request/response round trips between managers (`route`).
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "options.hpp"
#include "report.hpp"
#include "scenario_support.hpp"
#include "scenarios.hpp"

namespace edri::bench {
namespace {

HttpRequest get(const std::string& target) {
  HttpRequest r;
  r.method = "GET";
  r.target = target;
  return r;
}

// One start of `kind` (edri unless named; `workers` for a reference) with
// `env`, measured with `requests` (spread over the connections; a WebSocket
// message when `websocket`) at each concurrency.
ScenarioOutcome measure(const ScenarioContext& context, const std::string& label, const EnvironmentVariables& env,
                        const std::vector<HttpRequest>& requests, bool websocket, const std::vector<int>& concurrencies,
                        std::vector<Row>& rows, std::vector<std::string>& notes, ServerKind kind = ServerKind::kEdri,
                        int workers = 1) {
  const std::string name = kind == ServerKind::kEdri ? "edri " + label : label;
  ServerSettings settings = server_settings(context, env);
  settings.workers = workers;
  StartedServer server = start_server_reporting(kind, name, settings, notes);
  if (server.outcome == StartedServer::Outcome::kInterrupted) return ScenarioOutcome::kInterrupted;
  for (int c : concurrencies) {
    if (server.outcome != StartedServer::Outcome::kRunning) {
      rows.push_back(Row{label, c, std::nullopt, unavailable_cell(server)});
      continue;
    }
    LoadOptions load = load_options(context, server.port, c);
    if (websocket) {
      load.websocket_path = "/ws";
      load.request.body = R"({"command":"noop"})";
    } else {
      load.requests = requests;
    }
    const LoadResult result = run_reported_load(context, name, load);
    if (result.interrupted) return ScenarioOutcome::kInterrupted;
    rows.push_back(Row{label, c, summarize(result), {}});
    note_if_exited(server, name, c, notes);
  }
  return server.outcome == StartedServer::Outcome::kRunning ? ScenarioOutcome::kDone : ScenarioOutcome::kServerFailed;
}

// The CPUs the servers may use: the scaling scenarios' counts go up to it.
int server_cpu_count(const ScenarioContext& context) {
  const auto& list = context.options.server_cpu_list;
  return static_cast<int>(list.empty() ? allowed_cpus().size() : list.size());
}

// The label with 1 for its first number: "managers=4 EDRI_CPUS=all" ->
// "managers=1 EDRI_CPUS=all".
std::string with_one(const std::string& label) {
  const auto eq = label.find('=');
  if (eq == std::string::npos) return label;
  const auto end = label.find(' ', eq);
  return label.substr(0, eq + 1) + "1" + (end == std::string::npos ? std::string() : label.substr(end));
}

ScenarioOutcome finish(const ScenarioContext& context, ScenarioOutcome outcome, const std::string& load,
                       const std::vector<Row>& rows, const std::string& what,
                       const std::function<std::string(const std::string&)>& baseline_of,
                       const std::vector<std::string>& notes) {
  if (outcome == ScenarioOutcome::kInterrupted || context.interrupted()) return ScenarioOutcome::kInterrupted;
  print_report_header(context, load);
  print_scaling_table(rows, what, baseline_of);
  print_notes(notes);
  return outcome;
}

}  // namespace

ScenarioOutcome run_worker_scenario(const ScenarioContext& context) {
  const std::vector<int> concurrencies = context.options.concurrencies_or({8});
  std::vector<Row> rows;
  std::vector<std::string> notes;
  ScenarioOutcome outcome = ScenarioOutcome::kDone;
  for (const std::string kind : {"thread", "process"})
    for (int maxw : doubling_up_to(server_cpu_count(context))) {
      const std::string label = kind + " maxw=" + std::to_string(maxw);
      const auto o = measure(context, label, {{"BENCH_WORKER", kind}, {"BENCH_MAXW", std::to_string(maxw)}},
                             {get("/cpu/50")}, false, concurrencies, rows, notes);
      if (o == ScenarioOutcome::kInterrupted) return o;
      if (o == ScenarioOutcome::kServerFailed) outcome = o;
    }
  return finish(context, outcome,
                "GET /cpu/50 (50 ms of CPU per request in the BENCH_WORKER pool of BENCH_MAXW threads or processes)",
                rows, "workers", with_one, notes);
}

ScenarioOutcome run_managers_scenario(const ScenarioContext& context) {
  const std::vector<int> concurrencies = context.options.concurrencies_or({32});
  std::vector<Row> rows;
  std::vector<std::string> notes;
  ScenarioOutcome outcome = ScenarioOutcome::kDone;
  const auto counts = doubling_up_to(std::min(server_cpu_count(context), 64));
  for (const std::string cpus : {"one", "auto", "all"}) {
    for (int m : counts) {
      std::vector<HttpRequest> requests;
      for (int k = 0; k < m; ++k) requests.push_back(get("/busy/" + std::to_string(k) + "/2"));
      const std::string label = "managers=" + std::to_string(m) + " EDRI_CPUS=" + cpus;
      const auto o = measure(context, label, {{"BENCH_MANAGERS", std::to_string(m)}, {"EDRI_CPUS", cpus}}, requests,
                             false, concurrencies, rows, notes);
      if (o == ScenarioOutcome::kInterrupted) return o;
      if (o == ScenarioOutcome::kServerFailed) outcome = o;
    }
  }
  // Replicas: one domain in several processes, the router spreading its requests.
  for (int n : counts) {
    const std::string label = "replicas=" + std::to_string(n) + " EDRI_CPUS=auto";
    const auto o = measure(context, label, {{"EDRI_MANAGER_REPLICAS", std::to_string(n)}}, {get("/busy/0/2")}, false,
                           concurrencies, rows, notes);
    if (o == ScenarioOutcome::kInterrupted) return o;
    if (o == ScenarioOutcome::kServerFailed) outcome = o;
  }
  // Uneven work (1 ms and 8 ms requests) on 2 replicas: which way of sharing wins.
  for (const std::string routing : {"round_robin", "least_loaded"}) {
    const std::string label = "replicas=2 mixed 1/8 ms EDRI_ROUTING=" + routing;
    const auto o = measure(context, label, {{"EDRI_MANAGER_REPLICAS", "2"}, {"EDRI_ROUTING", routing}},
                           {get("/busy/0/1"), get("/busy/0/8")}, false, concurrencies, rows, notes);
    if (o == ScenarioOutcome::kInterrupted) return o;
    if (o == ScenarioOutcome::kServerFailed) outcome = o;
  }
  return finish(context, outcome,
                "GET /busy/{k}/2 (2 ms of CPU inline in manager k), the connections spread evenly over the managers; "
                "replicas: GET /busy/0/2 on one domain run by EDRI_MANAGER_REPLICAS processes (EDRI_ROUTING as set)",
                rows, "managers", with_one, notes);
}

ScenarioOutcome run_listener_scenario(const ScenarioContext& context) {
  const std::vector<int> concurrencies = context.options.concurrencies_or(kDefaultConcurrencies);
  std::vector<Row> rows;
  std::vector<std::string> notes;
  ScenarioOutcome outcome = ScenarioOutcome::kDone;
  // Listener processes beside nginx with as many workers, 1, 2, 4, ... up
  // to the CPUs the servers may use.
  for (const int n : doubling_up_to(std::min(server_cpu_count(context), 64))) {
    for (const bool websocket : {false, true}) {
      const std::string label = std::string(websocket ? "WS noop" : "GET /noop") + " listeners=" + std::to_string(n);
      const auto o = measure(context, label, {{"EDRI_LISTENER_WORKERS", std::to_string(n)}}, {get("/noop")}, websocket,
                             concurrencies, rows, notes);
      if (o == ScenarioOutcome::kInterrupted) return o;
      if (o == ScenarioOutcome::kServerFailed) outcome = o;
    }
    const auto o = measure(context, "nginx GET /noop workers=" + std::to_string(n), {}, {get("/noop")}, false,
                           concurrencies, rows, notes, ServerKind::kNginx, n);
    if (o == ScenarioOutcome::kInterrupted) return o;
  }
  return finish(context, outcome,
                "GET /noop and the WebSocket command noop on 1, 2, 4, ... listener processes (EDRI_CPUS=auto), and "
                "GET /noop on nginx with as many workers",
                rows, "listeners", with_one, notes);
}

ScenarioOutcome run_route_scenario(const ScenarioContext& context) {
  std::vector<std::string> notes;
  struct Result {
    int window;
    long n;
    std::optional<double> per_second, seconds;
  };
  std::vector<Result> results;
  for (int window : {1, 64}) {
    const std::string name = "edri BENCH_ROUTE_WINDOW=" + std::to_string(window);
    StartedServer server = start_server_reporting(
        ServerKind::kEdri, name, server_settings(context, {{"BENCH_ROUTE_WINDOW", std::to_string(window)}}), notes);
    if (server.outcome == StartedServer::Outcome::kInterrupted) return ScenarioOutcome::kInterrupted;
    for (long n : {1000L, 10000L, 100000L}) {
      Result r{window, n, std::nullopt, std::nullopt};
      if (server.outcome == StartedServer::Outcome::kRunning) {
        std::fprintf(stderr, "running %s /route/%ld ...\n", name.c_str(), n);
        if (auto body = fetch(server.port, "/route/" + std::to_string(n), 120000)) {
          r.per_second = json_number(*body, "per_second");
          r.seconds = json_number(*body, "seconds");
        } else {
          notes.push_back(name + " /route/" + std::to_string(n) + ": no 200 answer");
        }
      }
      results.push_back(r);
      if (context.interrupted()) return ScenarioOutcome::kInterrupted;
    }
  }
  print_report_header(context,
                      "GET /route/{n}: n request/response round trips, manager bench -> manager pong -> "
                      "bench (straight, the router told; docs/decisions/0028), at most BENCH_ROUTE_WINDOW in "
                      "flight");
  std::printf("| window | n | round trips/s | seconds | vs upstream (12k-18k/s) |\n|---:|---:|---:|---:|---:|\n");
  for (const auto& r : results) {
    char line[200];
    if (r.per_second)
      std::snprintf(line, sizeof line, "| %d | %ld | %.0f | %.3f | %.1fx-%.1fx |", r.window, r.n, *r.per_second,
                    r.seconds.value_or(0), *r.per_second / 18000, *r.per_second / 12000);
    else
      std::snprintf(line, sizeof line, "| %d | %ld | failed | - | - |", r.window, r.n);
    std::printf("%s\n", line);
  }
  print_notes(notes);
  return ScenarioOutcome::kDone;
}

}  // namespace edri::bench
