// bench: measures edri, and the references it is compared with, under a
// closed-loop keep-alive load on 127.0.0.1. See `bench --help`.
#include <algorithm>
#include <csignal>
#include <cstdio>
#include <string>
#include <string_view>

#include "ledger.hpp"
#include "options.hpp"
#include "report.hpp"
#include "scenarios.hpp"

namespace edri::bench {
namespace {

volatile std::sig_atomic_t g_stop_signal = 0;

extern "C" void on_stop_signal(int signo) { g_stop_signal = signo; }

// SA_RESETHAND: a second Ctrl-C kills bench outright; the servers then get
// SIGTERM from PR_SET_PDEATHSIG. No SA_RESTART, so blocking waits wake up.
void install_stop_handlers() {
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESETHAND;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

struct Scenario {
  std::string_view name;
  std::string_view description;
  ScenarioRunner run;
};

constexpr Scenario kScenarios[] = {
    {"noop", "edri: GET /noop (bench_app.so), keep-alive, at each concurrency", run_noop_scenario},
    {"compare", "edri vs FastAPI (uvicorn, uvloop, httptools) vs nginx: GET /noop side by side", run_compare_scenario},
    {"echo", "edri: GET /noop, POST /echo (about 100 bytes of JSON), WebSocket noop and echo, each vs GET /noop",
     run_echo_scenario},
    {"middleware", "edri: GET /noop at c=32 with BENCH_MIDDLEWARES=0,1,4,8; server CPU per request and per middleware",
     run_middleware_scenario},
    {"accesslog",
     "edri: GET /noop with EDRI_ACCESS_LOG off, combined, json, json + traces (files); each vs off, CPU per request",
     run_access_log_scenario},
    {"worker", "edri: GET /cpu/50 on worker threads and processes, BENCH_MAXW=1,2,4 at c=8, each vs maxw=1",
     run_worker_scenario},
    {"managers", "edri: GET /busy/{k}/2 over 1, 2, 4 managers (EDRI_CPUS one, auto, all) and replicas, c=32",
     run_managers_scenario},
    {"listener", "edri: GET /noop and WebSocket noop with 1 and 2 listener processes", run_listener_scenario},
    {"route", "edri: GET /route/{n}, n=1000,10000,100000 round trips between two managers, window 1 and 64",
     run_route_scenario},
    {"payload", "edri vs nginx: GET /payload/{bytes} of 1 KB, 100 KB, 1 MB, 16 MB at c=8", run_payload_scenario},
    {"slow", "edri: GET /noop at c=8 alone and beside 50 clients that never read /payload/16777216; RSS per process",
     run_slow_scenario},
    {"startup", "edri, FastAPI, nginx: launch to the first 200 on GET /noop, and edri to /ready", run_startup_scenario},
    {"session", "edri: 1,000 idle WebSocket sessions: RSS and threads per process, CPU while idle",
     run_session_scenario},
    {"fanout",
     "edri vs a Node.js ws server: live streams to 10..1,000 WebSocket clients x 1..20 streams (fleet completion, "
     "delivery latency, CPU, RSS), session budgets, tenants",
     run_fanout_scenario},
    {"cluster",
     "edri: GET /noop served on the instance that runs its domain vs through another instance over NATS (c=1/8/32), "
     "and /route round trips on one instance vs across two",
     run_cluster_scenario},
    {"grpc",
     "edri: the noop round trip over WebSocket, REST (HTTP/1.1, HTTP/2), gRPC unary and bidi, vs grpcio and nginx's "
     "HTTP/2, c=1/8/32, and the ratios",
     run_grpc_scenario},
    {"wait",
     "edri: GET /wait/10 (a coroutine on a timer) at c=1..128 beside /noop's latency; GET /fetch (an outbound GET) vs "
     "FastAPI + httpx and nginx proxy_pass; memory of 10,000 requests waiting at once",
     run_wait_scenario},
    {"techempower",
     "TechEmpower's 7 test types on Postgres (verified by techempower/verify.py), c=16/64/256: edri with "
     "techempower.so vs FastAPI + asyncpg, nginx (JSON, plaintext) and pgbench (single query)",
     run_techempower_scenario},
    {"serialization", "edri: envelope encode and decode by body size (Google Benchmark, bench_micro)",
     run_serialization_scenario},
    {"inprocess",
     "edri without sockets: route lookup (300 routes), binding, JSON answer, a middleware layer, manager dispatch",
     run_inprocess_scenario},
};

// Wide enough for the longest name, so descriptions line up.
constexpr int kNameWidth = [] {
  std::size_t width = 0;
  for (const auto& s : kScenarios) width = std::max(width, s.name.size());
  return static_cast<int>(width);
}();

void print_scenario_list(std::FILE* to, std::string_view indent) {
  for (const auto& s : kScenarios) {
    std::fprintf(to, "%.*s%-*.*s %.*s\n", static_cast<int>(indent.size()), indent.data(), kNameWidth,
                 static_cast<int>(s.name.size()), s.name.data(), static_cast<int>(s.description.size()),
                 s.description.data());
  }
}

void print_usage(std::FILE* to) {
  std::fprintf(to,
               "usage: bench --list\n"
               "       bench <scenario> [options]\n"
               "       bench all [options]     every scenario, in this order\n"
               "\n");
  print_options_help(to);
  std::fprintf(to, "\nscenarios (bench --list):\n");
  print_scenario_list(to, "  ");
}

const Scenario* find_scenario(std::string_view name) {
  for (const auto& s : kScenarios) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

std::string joined_command_line(int argc, char** argv) {
  std::string line;
  for (int i = 0; i < argc; ++i) {
    if (i > 0) line += ' ';
    line += argv[i];
  }
  return line;
}

// Runs `scenario` --runs times, its reports kept in the ledger (ledger.hpp).
ScenarioOutcome run_kept(const Scenario& scenario, const Options& options, const std::string& command_line) {
  const ScenarioContext context{
      .options = options, .context_line = context_line(command_line), .stop_requested = &g_stop_signal};
  RecordInfo info{std::string(scenario.name), command_line, {}};
  ScenarioOutcome worst = ScenarioOutcome::kDone;
  for (int run = 1; run <= options.runs; ++run) {
    if (options.runs > 1)
      std::fprintf(stderr, "== %.*s: run %d of %d\n", static_cast<int>(scenario.name.size()), scenario.name.data(), run,
                   options.runs);
    ScenarioOutcome outcome = ScenarioOutcome::kDone;
    const std::string report = capture_stdout([&] { outcome = scenario.run(context); });
    if (outcome == ScenarioOutcome::kInterrupted) return outcome;
    if (outcome == ScenarioOutcome::kServerFailed) worst = outcome;
    info.reports.push_back(report);
    if (run < options.runs) std::printf("\n");
  }
  std::string report = info.reports.front();
  if (options.runs > 1) {
    // The first report's heading, then its tables as ranges over the runs.
    const std::string& first = info.reports.front();
    const auto table_at = first.find("\n|");
    const std::string merged = merge_runs(info.reports);
    report = first.substr(0, table_at == std::string::npos ? first.size() : table_at + 1) + "\nranges over " +
             std::to_string(options.runs) + " runs:\n\n" + merged;
    std::printf("\nranges over %d runs:\n\n%s", options.runs, merged.c_str());
  }
  if (!options.quick) {
    const auto path = write_record(info);
    if (!path.empty()) std::fprintf(stderr, "bench: recorded %s\n", path.c_str());
  }
  if (options.record && append_to_ledger(info, report)) std::fprintf(stderr, "bench: appended to BENCHMARKS.md\n");
  if (options.record) {
    // Under a rate every server that keeps up answers the same req/s: the
    // tail latency is the figure, and it must not replace the closed-loop
    // chart the README shows.
    const auto chart = options.rate > 0 ? write_chart(info.scenario + "-paced", info.reports.front(), {"p99 ms"})
                                        : write_chart(info.scenario, info.reports.front());
    if (!chart.empty()) std::fprintf(stderr, "bench: drew %s\n", chart.c_str());
  }
  return worst;
}

int run(int argc, char** argv) {
  const auto options = parse_options(argc, argv);
  if (!options) {
    print_usage(stderr);
    return 2;
  }
  const bool all = options->scenario == "all";
  const Scenario* scenario = find_scenario(options->scenario);
  if (scenario == nullptr && !all) {
    if (!options->scenario.empty()) {
      std::fprintf(stderr, "bench: unknown scenario '%s'\n", options->scenario.c_str());
    }
    print_usage(stderr);
    return 2;
  }

  install_stop_handlers();
  const std::string command_line = joined_command_line(argc, argv);
  ScenarioOutcome outcome = ScenarioOutcome::kDone;
  if (all) {
    int done = 0;
    for (const auto& s : kScenarios) {
      std::fprintf(stderr, "== bench all: %.*s (%d of %zu)\n", static_cast<int>(s.name.size()), s.name.data(), ++done,
                   std::size(kScenarios));
      Options one = *options;
      one.scenario = std::string(s.name);
      const auto o = run_kept(s, one, command_line);
      if (o == ScenarioOutcome::kInterrupted) {
        outcome = o;
        break;
      }
      if (o == ScenarioOutcome::kServerFailed) outcome = o;
      std::printf("\n");
    }
  } else {
    outcome = run_kept(*scenario, *options, command_line);
  }
  switch (outcome) {
    case ScenarioOutcome::kDone: return 0;
    case ScenarioOutcome::kServerFailed: return 1;
    case ScenarioOutcome::kInterrupted: break;
  }
  std::fprintf(stderr, "bench: interrupted; server stopped\n");
  return 128 + (g_stop_signal != 0 ? g_stop_signal : SIGINT);
}

}  // namespace
}  // namespace edri::bench

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--list") {
      edri::bench::print_scenario_list(stdout, "");
      return 0;
    }
    if (arg == "--help" || arg == "-h") {
      edri::bench::print_usage(stdout);
      return 0;
    }
  }
  return edri::bench::run(argc, argv);
}
