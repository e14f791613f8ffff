// bench: measures edri, and the references it is compared with, under a
// closed-loop keep-alive load on 127.0.0.1. See `bench --help`.
#include <utility>

#include <sched.h>

#include <charconv>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "load_generator.hpp"
#include "reference_servers.hpp"
#include "report.hpp"

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
};

constexpr Scenario kScenarios[] = {
    {"noop", "edri: GET /noop (bench_app.so), keep-alive, at each concurrency"},
    {"compare", "edri vs FastAPI (uvicorn, uvloop, httptools) vs nginx: GET /noop side by side"},
};

struct Options {
  std::string scenario;
  double duration_seconds = 5.0;
  double warmup_seconds = 1.0;
  std::vector<int> concurrencies{1, 8, 32};
  std::optional<int> client_cpu;
  std::string server_cpus;
  std::vector<int> server_cpu_list;
  bool verbose = false;
};

void print_usage(std::FILE* to) {
  std::fprintf(to,
               "usage: bench --list\n"
               "       bench <scenario> [options]\n"
               "\n"
               "options:\n"
               "  --duration S         measured seconds per run (default 5)\n"
               "  --warmup S           unmeasured seconds before each run (default 1)\n"
               "  --concurrency LIST   connections, e.g. 1,8,32 (the default)\n"
               "  --quick              --duration 1 --warmup 0.3 unless given\n"
               "  --client-cpu N       pin the load generator to CPU N\n"
               "  --server-cpus LIST   CPUs for the server: EDRI_CPUS for edri, affinity for\n"
               "                       the references (e.g. 0 or 0,1 or 0-3)\n"
               "  --verbose            server logs to stderr\n"
               "\n"
               "scenarios (bench --list):\n");
  for (const auto& s : kScenarios) {
    std::fprintf(to, "  %-8.*s %.*s\n", static_cast<int>(s.name.size()), s.name.data(),
                 static_cast<int>(s.description.size()), s.description.data());
  }
}

void print_scenarios() {
  for (const auto& s : kScenarios) {
    std::printf("%-8.*s %.*s\n", static_cast<int>(s.name.size()), s.name.data(), static_cast<int>(s.description.size()),
                s.description.data());
  }
}

std::optional<double> parse_seconds(std::string_view text) {
  double value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size() || value < 0 || value > 86400) return std::nullopt;
  return value;
}

std::optional<int> parse_int(std::string_view text) {
  int value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
}

// "1,8,32"; with ranges ("0-3") when `allow_ranges`.
std::optional<std::vector<int>> parse_int_list(std::string_view text, bool allow_ranges) {
  std::vector<int> out;
  while (!text.empty()) {
    const std::size_t comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
    const std::size_t dash = allow_ranges ? item.find('-') : std::string_view::npos;
    if (dash == std::string_view::npos) {
      const auto value = parse_int(item);
      if (!value) return std::nullopt;
      out.push_back(*value);
    } else {
      const auto first = parse_int(item.substr(0, dash));
      const auto last = parse_int(item.substr(dash + 1));
      if (!first || !last || *first > *last) return std::nullopt;
      for (int v = *first; v <= *last; ++v) out.push_back(v);
    }
  }
  if (out.empty()) return std::nullopt;
  return out;
}

// Accepts "--name value" and "--name=value". Returns nullopt after printing
// the problem.
std::optional<Options> parse_options(int argc, char** argv) {
  Options options;
  std::optional<double> duration;
  std::optional<double> warmup;
  bool quick = false;

  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    std::optional<std::string_view> inline_value;
    if (arg.starts_with("--")) {
      if (const auto eq = arg.find('='); eq != std::string_view::npos) {
        inline_value = arg.substr(eq + 1);
        arg = arg.substr(0, eq);
      }
    }
    auto value = [&]() -> std::optional<std::string_view> {
      if (inline_value) return inline_value;
      if (i + 1 < argc) return std::string_view(argv[++i]);
      std::fprintf(stderr, "bench: %.*s needs a value\n", static_cast<int>(arg.size()), arg.data());
      return std::nullopt;
    };
    auto invalid = [&](std::string_view v) {
      std::fprintf(stderr, "bench: invalid value for %.*s: '%.*s'\n", static_cast<int>(arg.size()), arg.data(),
                   static_cast<int>(v.size()), v.data());
      return std::nullopt;
    };

    if (arg == "--duration" || arg == "--warmup") {
      const auto v = value();
      if (!v) return std::nullopt;
      const auto seconds = parse_seconds(*v);
      if (!seconds || (arg == "--duration" && *seconds <= 0)) return invalid(*v);
      (arg == "--duration" ? duration : warmup) = *seconds;
    } else if (arg == "--concurrency") {
      const auto v = value();
      if (!v) return std::nullopt;
      auto list = parse_int_list(*v, false);
      if (!list) return invalid(*v);
      for (int c : *list) {
        if (c < 1 || c > 10000) return invalid(*v);
      }
      options.concurrencies = std::move(*list);
    } else if (arg == "--quick") {
      quick = true;
    } else if (arg == "--client-cpu") {
      const auto v = value();
      if (!v) return std::nullopt;
      const auto cpu = parse_int(*v);
      if (!cpu || *cpu < 0 || *cpu >= CPU_SETSIZE) return invalid(*v);
      options.client_cpu = *cpu;
    } else if (arg == "--server-cpus") {
      const auto v = value();
      if (!v) return std::nullopt;
      auto list = parse_int_list(*v, true);
      if (!list) return invalid(*v);
      for (int cpu : *list) {
        if (cpu < 0 || cpu >= CPU_SETSIZE) return invalid(*v);
      }
      options.server_cpus = std::string(*v);
      options.server_cpu_list = std::move(*list);
    } else if (arg == "--verbose") {
      options.verbose = true;
    } else if (!arg.starts_with("-") && options.scenario.empty()) {
      options.scenario = std::string(arg);
    } else {
      std::fprintf(stderr, "bench: unexpected argument '%s'\n", argv[i]);
      return std::nullopt;
    }
  }

  options.duration_seconds = duration.value_or(quick ? 1.0 : 5.0);
  options.warmup_seconds = warmup.value_or(quick ? 0.3 : 1.0);
  return options;
}

// Pins the calling thread (bench is single-threaded) for the duration of one
// load run only, so servers forked between runs do not inherit the pin.
class ScopedClientPin {
 public:
  explicit ScopedClientPin(std::optional<int> cpu) {
    if (!cpu) return;
    if (sched_getaffinity(0, sizeof saved_, &saved_) != 0) return;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(*cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0) {
      std::perror("bench: --client-cpu");
      return;
    }
    pinned_ = true;
  }
  ScopedClientPin(const ScopedClientPin&) = delete;
  ScopedClientPin& operator=(const ScopedClientPin&) = delete;
  ~ScopedClientPin() {
    if (pinned_) sched_setaffinity(0, sizeof saved_, &saved_);
  }

 private:
  cpu_set_t saved_{};
  bool pinned_ = false;
};

enum class ServerRunOutcome { kDone, kUnavailable, kFailed, kInterrupted };

// Starts `kind` once and measures it at every concurrency, appending one row
// per concurrency (unavailable rows too, so every table has the same shape).
ServerRunOutcome measure_server(ServerKind kind, const Options& options, std::vector<Row>& rows,
                                std::vector<std::string>& notes) {
  const std::string name(display_name(kind));
  std::fprintf(stderr, "starting %s ...\n", name.c_str());

  const ServerSettings settings{.server_cpus = options.server_cpus,
                                .server_cpu_list = options.server_cpu_list,
                                .verbose = options.verbose,
                                .stop_requested = &g_stop_signal};
  StartedServer server = start_server(kind, settings);
  if (server.outcome == StartedServer::Outcome::kInterrupted) return ServerRunOutcome::kInterrupted;
  if (server.outcome != StartedServer::Outcome::kRunning) {
    const bool missing = server.outcome == StartedServer::Outcome::kNotInstalled;
    const std::string cell = missing ? "not installed" : "failed to start";
    std::fprintf(stderr, "%s: %s: %s\n", name.c_str(), cell.c_str(), server.message.c_str());
    notes.push_back(name + ": " + cell + ": " + server.message);
    for (int c : options.concurrencies) rows.push_back(Row{name, c, std::nullopt, cell});
    return missing ? ServerRunOutcome::kUnavailable : ServerRunOutcome::kFailed;
  }

  for (int c : options.concurrencies) {
    std::fprintf(stderr, "running %s c=%d ...\n", name.c_str(), c);
    LoadResult result;
    {
      ScopedClientPin pin(options.client_cpu);
      result = run_load(LoadOptions{.host = "127.0.0.1",
                                    .port = server.port,
                                    .path = "/noop",
                                    .concurrency = c,
                                    .warmup_seconds = options.warmup_seconds,
                                    .duration_seconds = options.duration_seconds,
                                    .stop_requested = &g_stop_signal});
    }
    if (result.interrupted) return ServerRunOutcome::kInterrupted;
    const RunSummary summary = summarize(result);
    std::fprintf(stderr, "%s\n", progress_line(name, c, summary).c_str());
    if (!result.first_error.empty()) {
      std::fprintf(stderr, "  first error: %s\n", result.first_error.c_str());
    }
    rows.push_back(Row{name, c, summary, {}});
    if (auto how = server.process->exit_description()) {
      notes.push_back(name + ": server " + *how + " during the c=" + std::to_string(c) + " run");
    }
  }
  std::fprintf(stderr, "stopping %s ...\n", name.c_str());
  return ServerRunOutcome::kDone;
}

std::string joined_command_line(int argc, char** argv) {
  std::string line;
  for (int i = 0; i < argc; ++i) {
    if (i > 0) line += ' ';
    line += argv[i];
  }
  return line;
}

int run(int argc, char** argv) {
  const auto parsed = parse_options(argc, argv);
  if (!parsed) {
    print_usage(stderr);
    return 2;
  }
  const Options& options = *parsed;

  std::vector<ServerKind> servers;
  if (options.scenario == "noop") {
    servers = {ServerKind::kEdri};
  } else if (options.scenario == "compare") {
    servers = {ServerKind::kEdri, ServerKind::kFastApi, ServerKind::kNginx};
  } else {
    if (!options.scenario.empty()) {
      std::fprintf(stderr, "bench: unknown scenario '%s'\n", options.scenario.c_str());
    }
    print_usage(stderr);
    return 2;
  }

  install_stop_handlers();
  const std::string context = context_line(joined_command_line(argc, argv));

  std::vector<Row> rows;
  std::vector<std::string> notes;
  bool any_failed = false;
  for (ServerKind kind : servers) {
    const ServerRunOutcome outcome = measure_server(kind, options, rows, notes);
    if (outcome == ServerRunOutcome::kInterrupted || g_stop_signal != 0) {
      std::fprintf(stderr, "bench: interrupted; server stopped\n");
      return 128 + (g_stop_signal != 0 ? g_stop_signal : SIGINT);
    }
    any_failed = any_failed || outcome == ServerRunOutcome::kFailed;
  }

  std::printf("%s\n", context.c_str());
  const std::string pinning = (options.client_cpu ? ", client on CPU " + std::to_string(*options.client_cpu) : "") +
                              (options.server_cpus.empty() ? "" : ", server CPUs " + options.server_cpus);
  std::printf("load: keep-alive GET /noop, warm-up %g s, measured %g s per run%s\n\n", options.warmup_seconds,
              options.duration_seconds, pinning.c_str());
  if (options.scenario == "noop") {
    print_noop_table(rows);
  } else {
    print_compare_table(rows, options.concurrencies);
  }
  if (!notes.empty()) {
    std::printf("\n");
    for (const auto& note : notes) std::printf("- %s\n", note.c_str());
  }
  return any_failed ? 1 : 0;
}

}  // namespace
}  // namespace edri::bench

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--list") {
      edri::bench::print_scenarios();
      return 0;
    }
    if (arg == "--help" || arg == "-h") {
      edri::bench::print_usage(stdout);
      return 0;
    }
  }
  return edri::bench::run(argc, argv);
}
