#include "scenario_support.hpp"

#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <optional>

#include "children_cpu_time.hpp"
#include "report.hpp"

namespace edri::bench {
namespace {

// Pins the calling thread (bench is single-threaded) while it lives.
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

}  // namespace

ServerSettings server_settings(const ScenarioContext& context, EnvironmentVariables extra_env) {
  return ServerSettings{.server_cpus = context.options.server_cpus,
                        .server_cpu_list = context.options.server_cpu_list,
                        .verbose = context.options.verbose,
                        .stop_requested = context.stop_requested,
                        .extra_env = std::move(extra_env)};
}

StartedServer start_server_reporting(ServerKind kind, const std::string& name, const ServerSettings& settings,
                                     std::vector<std::string>& notes) {
  std::fprintf(stderr, "starting %s ...\n", name.c_str());
  StartedServer server = start_server(kind, settings);
  if (server.outcome == StartedServer::Outcome::kRunning || server.outcome == StartedServer::Outcome::kInterrupted) {
    return server;
  }
  const std::string cell = unavailable_cell(server);
  std::fprintf(stderr, "%s: %s: %s\n", name.c_str(), cell.c_str(), server.message.c_str());
  notes.push_back(name + ": " + cell + ": " + server.message);
  return server;
}

std::string unavailable_cell(const StartedServer& server) {
  return server.outcome == StartedServer::Outcome::kNotInstalled ? "not installed" : "failed to start";
}

void note_if_exited(StartedServer& server, const std::string& name, int concurrency, std::vector<std::string>& notes) {
  if (auto how = server.process->exit_description()) {
    notes.push_back(name + ": server " + *how + " during the c=" + std::to_string(concurrency) + " run");
  }
}

LoadOptions load_options(const ScenarioContext& context, std::uint16_t port, int concurrency) {
  LoadOptions load;
  load.host = "127.0.0.1";
  load.port = port;
  load.concurrency = concurrency;
  load.warmup_seconds = context.options.warmup_seconds;
  load.duration_seconds = context.options.duration_seconds;
  load.rate = context.options.rate;
  load.stop_requested = context.stop_requested;
  return load;
}

LoadResult run_reported_load(const ScenarioContext& context, const std::string& label, const LoadOptions& load) {
  std::fprintf(stderr, "running %s c=%d ...\n", label.c_str(), load.concurrency);
  LoadResult result;
  {
    ScopedClientPin pin(context.options.client_cpu);
    result = run_load(load);
  }
  if (result.interrupted) return result;
  std::fprintf(stderr, "%s\n", progress_line(label, load.concurrency, summarize(result)).c_str());
  if (!result.first_error.empty()) std::fprintf(stderr, "  first error: %s\n", result.first_error.c_str());
  return result;
}

LoadWithCpu run_load_with_cpu(const ScenarioContext& context, const std::string& label, LoadOptions load,
                              pid_t supervisor, std::vector<std::string>& notes) {
  std::optional<ChildrenCpuTime> at_start;
  std::optional<ChildrenCpuTime> at_end;
  load.on_window_start = [&] { at_start = children_cpu_time(supervisor); };
  load.on_window_end = [&] { at_end = children_cpu_time(supervisor); };
  LoadWithCpu out{run_reported_load(context, label, load), std::nullopt};
  if (out.result.interrupted) return out;
  std::string why_not;
  out.cpu_us = cpu_us_per_request(at_start, at_end, out.result.completed, why_not);
  if (out.cpu_us) {
    std::fprintf(stderr, "  server CPU: %.3f s in %zu processes, %.2f us/request\n",
                 at_end->seconds - at_start->seconds, at_end->pids.size(), *out.cpu_us);
  } else {
    std::fprintf(stderr, "  server CPU not measured: %s\n", why_not.c_str());
    notes.push_back(label + " c=" + std::to_string(load.concurrency) + ": CPU not measured: " + why_not);
  }
  return out;
}

void add_measured_row(const std::string& label, int c, const RunSummary& summary, const std::string& first_error,
                      std::vector<Row>& rows, std::vector<std::string>& notes) {
  rows.push_back(Row{label, c, summary, {}});
  const std::uint64_t failed = summary.errors + summary.non_2xx;
  if (failed == 0) return;
  notes.push_back(label + " c=" + std::to_string(c) + ": " + std::to_string(summary.errors) + " errors, " +
                  std::to_string(summary.non_2xx) + " non-2xx" +
                  (first_error.empty() ? "" : "; first: " + first_error));
}

void add_unavailable_rows(const std::vector<std::string>& labels, const std::vector<int>& concurrencies,
                          const std::string& why, std::vector<Row>& rows) {
  for (int c : concurrencies)
    for (const auto& label : labels) rows.push_back(Row{label, c, std::nullopt, why});
}

bool measure_http_row(const ScenarioContext& context, const std::string& label, const LoadOptions& load,
                      std::vector<Row>& rows, std::vector<std::string>& notes) {
  const LoadResult result = run_reported_load(context, label, load);
  if (result.interrupted) return false;
  add_measured_row(label, load.concurrency, summarize(result), result.first_error, rows, notes);
  return true;
}

void with_client_pin(const ScenarioContext& context, const std::function<void()>& f) {
  ScopedClientPin pin(context.options.client_cpu);
  f();
}

void print_report_header(const ScenarioContext& context, std::string_view load_description, bool timed) {
  const Options& options = context.options;
  const std::string pinning =
      (options.client_cpu ? ", client on CPU " + std::to_string(*options.client_cpu) : "") +
      (options.server_cpus.empty() ? "" : ", server CPUs " + options.server_cpus) +
      (options.default_split ? ", servers on the other " + std::to_string(options.server_cpu_list.size()) + " CPUs"
                             : "");
  std::printf("%s\n", context.context_line.c_str());
  if (!timed) {
    std::printf("%.*s%s\n\n", static_cast<int>(load_description.size()), load_description.data(), pinning.c_str());
    return;
  }
  const std::string pacing = options.rate > 0
                                 ? ", open loop at " + std::to_string(static_cast<long long>(options.rate)) +
                                       " req/s per run (latency from each request's scheduled send; req/s is what was "
                                       "answered, below the rate when the server fell behind)"
                                 : "";
  std::printf("load: %.*s, warm-up %g s, measured %g s per run%s%s\n\n", static_cast<int>(load_description.size()),
              load_description.data(), options.warmup_seconds, options.duration_seconds, pacing.c_str(),
              pinning.c_str());
}

// A blocking GET of 127.0.0.1:port/path: the body, or nullopt.
std::optional<std::string> fetch(std::uint16_t port, const std::string& path, int timeout_ms,
                                 const std::optional<std::string>& json) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return std::nullopt;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::optional<std::string> body;
  const std::string head = (json ? "POST " : "GET ") + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n";
  const std::string req =
      json ? head + "Content-Type: application/json\r\nContent-Length: " + std::to_string(json->size()) + "\r\n\r\n" +
                 *json
           : head + "\r\n";
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      ::send(fd, req.data(), req.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(req.size())) {
    std::string in;
    char buf[4096];
    pollfd p{fd, POLLIN, 0};
    while (::poll(&p, 1, timeout_ms) > 0) {
      const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) break;
      in.append(buf, static_cast<std::size_t>(n));
    }
    const auto end = in.find("\r\n\r\n");
    if (in.rfind("HTTP/1.1 200", 0) == 0 && end != std::string::npos) body = in.substr(end + 4);
  }
  ::close(fd);
  return body;
}

// A number field of a flat JSON object, without a JSON library.
std::optional<double> json_number(const std::string& body, const std::string& key) {
  const auto at = body.find("\"" + key + "\":");
  if (at == std::string::npos) return std::nullopt;
  return std::strtod(body.c_str() + at + key.size() + 3, nullptr);
}

}  // namespace edri::bench
