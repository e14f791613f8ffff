// `bench cluster`: two edri instances joined through a nats-server on this
// machine (docs/cluster.md). Instance S runs domain bench, instance R runs
// domain pong; both load bench_app.so. GET /noop sent to S is served
// locally, sent to R it crosses to S and back; beside them the same request
// on one instance without EDRI_NATS_URL (what a local request costs when
// NATS is configured, A/B). Then /route/{n}: bench asks pong n times in a
// row (window 1) or 64 at a time, on one instance and across the two.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "loopback_port.hpp"
#include "report.hpp"
#include "scenario_support.hpp"
#include "scenarios.hpp"
#include "server_process.hpp"

namespace edri::bench {
namespace {

constexpr const char* kNatsServer = "/usr/sbin/nats-server";

// nats-server on a free loopback port, or nullptr with `error` set.
std::unique_ptr<ServerProcess> start_nats(const ScenarioContext& context, std::uint16_t port, const std::string& store,
                                          std::string& error) {
  if (::access(kNatsServer, X_OK) != 0) {
    error = "nats-server is not installed (scripts/setup.sh installs it)";
    return nullptr;
  }
  ProcessSpec spec;
  spec.program = kNatsServer;
  // JetStream: live streams are ordered there across instances.
  spec.args = {"-a", "127.0.0.1", "-p", std::to_string(port), "-js", "-sd", store};
  spec.cpus = context.options.server_cpu_list;
  auto nats = ServerProcess::start(spec, error);
  for (int i = 0; nats && i < 500 && !loopback_port_accepts(port); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  if (nats && !loopback_port_accepts(port)) error = "nats-server did not listen within 5 s";
  return error.empty() ? std::move(nats) : nullptr;
}

struct Pair {
  StartedServer serving;  // runs bench (and streams' domain)
  StartedServer asking;   // runs pong only: /noop crosses to `serving`
  bool running() const {
    return serving.outcome == StartedServer::Outcome::kRunning && asking.outcome == StartedServer::Outcome::kRunning;
  }
};

// S, then R (whose readiness, GET /noop answered 200, means it reached S).
Pair start_pair(const ScenarioContext& context, const std::string& url, const EnvironmentVariables& extra,
                std::vector<std::string>& notes) {
  auto env = [&](const char* domains) {
    EnvironmentVariables e{{"EDRI_NATS_URL", url}, {"EDRI_DOMAINS", domains}};
    e.insert(e.end(), extra.begin(), extra.end());
    return server_settings(context, e);
  };
  Pair p;
  p.serving = start_server_reporting(ServerKind::kEdri, "edri S (bench)", env("bench"), notes);
  if (p.serving.outcome == StartedServer::Outcome::kRunning)
    p.asking = start_server_reporting(ServerKind::kEdri, "edri R (pong)", env("pong"), notes);
  return p;
}

ScenarioOutcome measure_noop(const ScenarioContext& context, const std::string& label, const StartedServer& server,
                             const std::vector<int>& concurrencies, std::vector<Row>& rows) {
  for (const int c : concurrencies) {
    if (server.outcome != StartedServer::Outcome::kRunning) {
      rows.push_back(Row{label, c, std::nullopt, unavailable_cell(server)});
      continue;
    }
    const LoadResult result = run_reported_load(context, label, load_options(context, server.port, c));
    if (result.interrupted) return ScenarioOutcome::kInterrupted;
    rows.push_back(Row{label, c, summarize(result), {}});
  }
  return ScenarioOutcome::kDone;
}

struct RouteResult {
  std::string where;
  int window;
  long n;
  std::optional<double> per_second;
};

void measure_route(const StartedServer& server, const std::string& where, int window, long n,
                   std::vector<RouteResult>& results, std::vector<std::string>& notes) {
  RouteResult r{where, window, n, std::nullopt};
  if (server.outcome == StartedServer::Outcome::kRunning) {
    std::fprintf(stderr, "running %s /route/%ld window %d ...\n", where.c_str(), n, window);
    if (auto body = fetch(server.port, "/route/" + std::to_string(n), 120000))
      r.per_second = json_number(*body, "per_second");
    else
      notes.push_back(where + " /route/" + std::to_string(n) + " window " + std::to_string(window) + ": no 200");
  }
  results.push_back(r);
}

// Live streams: publishes ordered by the broker of one instance, against
// publishes ordered in JetStream (S with EDRI_NATS_URL set).
struct StreamResult {
  std::string where;
  std::optional<double> burst_per_second;  // POST /stream-burst, inside the server
  std::optional<double> one_ms;            // median of sequential POST /stream/{name}
};

StreamResult measure_streams(const StartedServer& server, const std::string& where, int publishes) {
  StreamResult r{where, std::nullopt, std::nullopt};
  if (server.outcome != StartedServer::Outcome::kRunning) return r;
  std::fprintf(stderr, "running %s stream publishes ...\n", where.c_str());
  const std::string burst = R"({"streams":["b0","b1","b2","b3"],"updates":)" + std::to_string(publishes / 4) +
                            R"(,"interval_ms":0,"fields":5})";
  if (const auto body = fetch(server.port, "/stream-burst", 120000, burst)) {
    const auto published = json_number(*body, "published");
    const auto seconds = json_number(*body, "seconds");
    if (published && seconds && *seconds > 0) r.burst_per_second = *published / *seconds;
  }
  std::vector<double> ms;
  for (int i = 0; i < 200; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    if (!fetch(server.port, "/stream/one", 10000, R"({"n":)" + std::to_string(i) + "}")) return r;
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::nth_element(ms.begin(), ms.begin() + ms.size() / 2, ms.end());
  r.one_ms = ms[ms.size() / 2];
  return r;
}

std::string cell(const char* fmt, double value) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, value);
  return buf;
}

void print_route_table(const std::vector<RouteResult>& results) {
  std::printf("\n| window | n | one instance round trips/s | across two instances round trips/s | across / one |\n");
  std::printf("|---:|---:|---:|---:|---:|\n");
  for (std::size_t i = 0; i + 1 < results.size(); i += 2) {
    const auto& local = results[i];
    const auto& remote = results[i + 1];
    auto rate = [](const std::optional<double>& v) { return v ? cell("%.0f", *v) : std::string("failed"); };
    const std::string ratio =
        local.per_second && remote.per_second ? cell("%.2fx", *remote.per_second / *local.per_second) : "-";
    std::printf("| %d | %ld | %s | %s | %s |\n", local.window, local.n, rate(local.per_second).c_str(),
                rate(remote.per_second).c_str(), ratio.c_str());
  }
}

void print_stream_table(const std::vector<StreamResult>& results, int publishes) {
  std::printf("\n| live streams | %d publishes in a burst, per s | one publish over HTTP, median ms |\n", publishes);
  std::printf("|---|---:|---:|\n");
  for (const auto& r : results)
    std::printf("| %s | %s | %s |\n", r.where.c_str(),
                r.burst_per_second ? cell("%.0f", *r.burst_per_second).c_str() : "failed",
                r.one_ms ? cell("%.3f", *r.one_ms).c_str() : "failed");
}

}  // namespace

ScenarioOutcome run_cluster_scenario(const ScenarioContext& context) {
  const std::vector<int> concurrencies = context.options.concurrencies_or(kDefaultConcurrencies);
  std::vector<Row> rows;
  std::vector<std::string> notes;
  std::string error;
  const std::uint16_t nats_port = free_loopback_port();
  char store_template[] = "/tmp/edri-bench-jetstream.XXXXXX";
  const std::string store = ::mkdtemp(store_template) ? store_template : "/tmp";
  struct RemoveStore {
    std::string dir;
    ~RemoveStore() {
      std::error_code ignored;
      if (dir != "/tmp") std::filesystem::remove_all(dir, ignored);
    }
  } remove_store{store};
  const auto nats = start_nats(context, nats_port, store, error);
  if (!nats) {
    print_report_header(context, "GET /noop across two edri instances joined by NATS");
    notes.push_back("not measured: " + error);
    print_notes(notes);
    return ScenarioOutcome::kServerFailed;
  }
  const std::string url = "nats://127.0.0.1:" + std::to_string(nats_port);
  {
    // One instance without NATS first: the A/B of a local request.
    const auto alone = start_server_reporting(ServerKind::kEdri, "edri alone", server_settings(context), notes);
    if (measure_noop(context, "one instance, no EDRI_NATS_URL", alone, concurrencies, rows) ==
        ScenarioOutcome::kInterrupted)
      return ScenarioOutcome::kInterrupted;
  }
  {
    const Pair pair = start_pair(context, url, {}, notes);
    if (measure_noop(context, "local: S serves it (EDRI_NATS_URL set)", pair.serving, concurrencies, rows) ==
            ScenarioOutcome::kInterrupted ||
        measure_noop(context, "remote: R sends it to S over NATS", pair.asking, concurrencies, rows) ==
            ScenarioOutcome::kInterrupted)
      return ScenarioOutcome::kInterrupted;
  }
  std::vector<RouteResult> routes;
  const long n = context.options.quick ? 1000 : 20000;
  for (const int window : {1, 64}) {
    const EnvironmentVariables w{{"BENCH_ROUTE_WINDOW", std::to_string(window)}};
    {
      const auto alone = start_server_reporting(ServerKind::kEdri, "edri alone", server_settings(context, w), notes);
      measure_route(alone, "one instance", window, n, routes, notes);
    }
    const Pair pair = start_pair(context, url, w, notes);
    measure_route(pair.serving, "across", window, n, routes, notes);
    if (context.interrupted()) return ScenarioOutcome::kInterrupted;
  }
  std::vector<StreamResult> streams;
  const int publishes = context.options.quick ? 400 : 8000;
  {
    const auto alone = start_server_reporting(ServerKind::kEdri, "edri alone", server_settings(context), notes);
    streams.push_back(measure_streams(alone, "one instance: its broker orders", publishes));
  }
  {
    const Pair pair = start_pair(context, url, {}, notes);
    // The bucket opens in the background: wait until a publish is taken.
    for (int i = 0; i < 100 && pair.running() && !fetch(pair.serving.port, "/stream/warm", 2000, "{}"); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    streams.push_back(measure_streams(pair.serving, "S, EDRI_NATS_URL set: JetStream orders", publishes));
  }
  if (context.interrupted()) return ScenarioOutcome::kInterrupted;
  print_report_header(context,
                      "GET /noop on one instance without NATS, on instance S that runs its domain (bench), and on "
                      "instance R that runs only pong and sends it to S through a nats-server on this machine");
  print_scaling_table(rows, "where",
                      [](const std::string&) { return std::string("local: S serves it (EDRI_NATS_URL set)"); });
  print_route_table(routes);
  print_stream_table(streams, publishes);
  notes.push_back("route: GET /route/" + std::to_string(n) +
                  " on S: bench asks pong n times, at most `window` in flight; pong runs on S itself (one "
                  "instance, no NATS) or on R (across)");
  notes.push_back(
      "live streams: POST /stream-burst publishes inside the server to 4 streams, as fast as it can; "
      "then 200 POST /stream/one one after another, each on a new connection");
  print_notes(notes);
  return ScenarioOutcome::kDone;
}

}  // namespace edri::bench
