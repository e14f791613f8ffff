#include <utility>

#include "reference_servers.hpp"

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>

#include "h2_client_link.hpp"
#include "load_generator.hpp"

#ifndef EDRI_SOURCE_DIR
#error "EDRI_SOURCE_DIR must name the source tree (benchmarks/reference lives there)"
#endif
#ifndef EDRI_BINARY_DIR
#error "EDRI_BINARY_DIR must name the build tree (bin/edri-server, plugins/bench_app.so)"
#endif

namespace edri::bench {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr const char* kLoopback = "127.0.0.1";
constexpr auto kStartTimeout = std::chrono::seconds(10);
constexpr const char* kPython = "/usr/bin/python3";
constexpr const char* kNode = "/usr/bin/node";
constexpr const char* kNginx = "/usr/sbin/nginx";
constexpr std::string_view kEdriReadyPrefix = "edri: listening on http://";
constexpr std::string_view kGrpcioReadyPrefix = "grpc_noop_server: listening on ";

fs::path reference_dir() { return fs::path(EDRI_SOURCE_DIR) / "benchmarks" / "reference"; }

bool interrupted(const ServerSettings& s) { return s.stop_requested != nullptr && *s.stop_requested != 0; }

OutputTo server_output(const ServerSettings& s) { return s.verbose ? OutputTo::kStderr : OutputTo::kDevNull; }

// Replaces an entry of the same name rather than appending a second one,
// which would reach the server as a duplicate variable.
void add_extra_env(ProcessSpec& spec, const ServerSettings& settings) {
  for (const auto& [name, value] : settings.extra_env) {
    auto same = std::find_if(spec.env.begin(), spec.env.end(), [&](const auto& entry) { return entry.first == name; });
    if (same != spec.env.end()) {
      same->second = value;
    } else {
      spec.env.emplace_back(name, value);
    }
  }
}

StartedServer not_running(StartedServer::Outcome outcome, std::string message) {
  StartedServer out;
  out.outcome = outcome;
  out.message = std::move(message);
  return out;
}

// The kernel picks a free port; it is released again for the server to take,
// which leaves a small window for another process to grab it first.
std::optional<std::uint16_t> pick_free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return std::nullopt;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  std::optional<std::uint16_t> port;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  ::close(fd);
  return port;
}

using ReadyProbe = bool (*)(const std::string& host, std::uint16_t port, const std::string& path,
                            double timeout_seconds);

// Polls until the server answers, has died, or the time is up. The process
// check matters: a server that exits at once should say so, not time out.
StartedServer wait_until_serving(StartedServer server, const ServerSettings& settings,
                                 ReadyProbe probe = &probe_http_ok) {
  const auto deadline = Clock::now() + kStartTimeout;
  while (Clock::now() < deadline) {
    if (interrupted(settings)) {
      server.outcome = StartedServer::Outcome::kInterrupted;
      server.message = "interrupted";
      return server;
    }
    if (auto how = server.process->exit_description()) {
      server.outcome = StartedServer::Outcome::kFailed;
      server.message = "server " + *how + " before answering GET " + settings.ready_path;
      return server;
    }
    if (probe(kLoopback, server.port, settings.ready_path, 0.5)) {
      server.outcome = StartedServer::Outcome::kRunning;
      return server;
    }
    // Short: the startup scenario measures this wait.
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  server.outcome = StartedServer::Outcome::kFailed;
  server.message = "GET " + settings.ready_path + " did not answer 200 within 10 s";
  return server;
}

std::optional<std::uint16_t> port_from_ready_line(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (line.substr(0, kEdriReadyPrefix.size()) != kEdriReadyPrefix) return std::nullopt;
  std::string_view authority = line.substr(kEdriReadyPrefix.size());
  authority = authority.substr(0, authority.find('/'));
  const std::size_t colon = authority.rfind(':');
  if (colon == std::string_view::npos) return std::nullopt;
  const std::string_view digits = authority.substr(colon + 1);
  unsigned value = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (ec != std::errc{} || end != digits.data() + digits.size() || value == 0 || value > 65535) return std::nullopt;
  return static_cast<std::uint16_t>(value);
}

// Reads the server's stdout until `ready(line)` says it is serving; false
// (and `server` says why: interrupted, timed out, or the server exited)
// when it does not within kStartTimeout.
template <class Ready>
bool read_until_ready(StartedServer& server, const ServerSettings& settings, std::string_view what, Ready&& ready) {
  const auto deadline = Clock::now() + kStartTimeout;
  for (;;) {
    const double left = std::chrono::duration<double>(deadline - Clock::now()).count();
    std::string line;
    const auto status = server.process->read_stdout_line(left, settings.stop_requested, line);
    if (status == ServerProcess::LineStatus::kInterrupted) {
      server.outcome = StartedServer::Outcome::kInterrupted;
      server.message = "interrupted";
      return false;
    }
    if (status != ServerProcess::LineStatus::kLine) {
      server.outcome = StartedServer::Outcome::kFailed;
      if (status == ServerProcess::LineStatus::kTimeout) {
        server.message = "no \"" + std::string(what) + "\" line on stdout within 10 s";
      } else {
        server.process->wait_for_exit(1.0);
        server.message = "stdout closed before the \"" + std::string(what) + "\" line (server " +
                         server.process->exit_description().value_or(std::string("still running")) + ")";
      }
      return false;
    }
    if (ready(line)) return true;
  }
}

StartedServer start_edri(const ServerSettings& settings) {
  const fs::path binary = fs::path(EDRI_BINARY_DIR) / "bin" / "edri-server";
  const fs::path plugin = fs::path(EDRI_BINARY_DIR) / "plugins" / "bench_app.so";
  if (!fs::exists(binary)) {
    return not_running(StartedServer::Outcome::kFailed, binary.string() + " is not built");
  }
  if (!fs::exists(plugin)) {
    return not_running(StartedServer::Outcome::kFailed, plugin.string() + " is not built");
  }

  ProcessSpec spec{.program = binary.string(),
                   .args = {},
                   .env = {{"EDRI_HOST", kLoopback}, {"EDRI_PORT", "0"}, {"EDRI_PLUGINS", plugin.string()}},
                   .working_dir = {},
                   // edri pins its own processes from EDRI_CPUS; confined by
                   // affinity otherwise (bench's default split), it decides
                   // within what it is given.
                   .cpus = settings.server_cpus.empty() ? settings.server_cpu_list : std::vector<int>{},
                   .stdout_to = OutputTo::kPipe,
                   .stderr_to = server_output(settings)};
  if (!settings.server_cpus.empty()) spec.env.emplace_back("EDRI_CPUS", settings.server_cpus);
  add_extra_env(spec, settings);

  StartedServer server;
  std::string error;
  server.process = ServerProcess::start(spec, error);
  if (!server.process) return not_running(StartedServer::Outcome::kFailed, error);

  if (!read_until_ready(server, settings, "edri: listening on", [&](const std::string& line) {
        const auto port = port_from_ready_line(line);
        if (port) server.port = *port;
        if (!port && settings.verbose) std::fprintf(stderr, "edri stdout: %s\n", line.c_str());
        return port.has_value();
      }))
    return server;
  // Nothing else on stdout is for us; the server ignores SIGPIPE.
  server.process->close_stdout();
  return wait_until_serving(std::move(server), settings);
}

// Starts a reference told its port on the command line or in its
// environment, and waits until it serves.
StartedServer start_on_port(ProcessSpec spec, std::uint16_t port, const ServerSettings& settings) {
  add_extra_env(spec, settings);
  StartedServer server;
  std::string error;
  server.process = ServerProcess::start(spec, error);
  if (!server.process) return not_running(StartedServer::Outcome::kFailed, error);
  server.port = port;
  return wait_until_serving(std::move(server), settings);
}

// fastapi_app.py of `app_dir` under uvicorn; `modules`, the Python modules
// it needs, as `import` takes them.
StartedServer start_fastapi(const ServerSettings& settings, const fs::path& app_dir,
                            const std::string& modules = "fastapi, uvicorn, uvloop, httptools") {
  if (::access(kPython, X_OK) != 0 || run_quietly({kPython, "-c", "import " + modules}) != 0) {
    return not_running(StartedServer::Outcome::kNotInstalled, std::string(kPython) + " lacks one of " + modules);
  }
  if (!fs::exists(app_dir / "fastapi_app.py")) {
    return not_running(StartedServer::Outcome::kFailed, (app_dir / "fastapi_app.py").string() + " is missing");
  }
  const auto port = pick_free_port();
  if (!port) return not_running(StartedServer::Outcome::kFailed, "no free port on 127.0.0.1");

  ProcessSpec spec{.program = kPython,
                   .args = {"-m", "uvicorn", "fastapi_app:app", "--host", kLoopback, "--port", std::to_string(*port),
                            "--loop", "uvloop", "--http", "httptools", "--workers", std::to_string(settings.workers),
                            "--no-access-log", "--log-level", "warning"},
                   // Keeps __pycache__ out of the source tree.
                   .env = {{"PYTHONDONTWRITEBYTECODE", "1"}},
                   .working_dir = app_dir.string(),
                   .cpus = settings.server_cpu_list,
                   .stdout_to = server_output(settings),
                   .stderr_to = server_output(settings)};
  return start_on_port(std::move(spec), *port, settings);
}

StartedServer start_node_streams(const ServerSettings& settings) {
  const fs::path dir = reference_dir() / "streams_node";
  if (::access(kNode, X_OK) != 0) return not_running(StartedServer::Outcome::kNotInstalled, "node not found");
  if (!fs::exists(dir / "node_modules" / "ws"))
    return not_running(StartedServer::Outcome::kNotInstalled,
                       "the ws package is not installed in " + dir.string() + " (scripts/setup.sh)");
  const auto port = pick_free_port();
  if (!port) return not_running(StartedServer::Outcome::kFailed, "no free port on 127.0.0.1");
  ProcessSpec spec{.program = kNode,
                   .args = {"server.js"},
                   .env = {{"PORT", std::to_string(*port)}},
                   .working_dir = dir.string(),
                   .cpus = settings.server_cpu_list,
                   .stdout_to = server_output(settings),
                   .stderr_to = server_output(settings)};
  return start_on_port(std::move(spec), *port, settings);
}

std::optional<std::string> read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

void replace_all(std::string& text, std::string_view from, std::string_view to) {
  for (std::size_t pos = text.find(from); pos != std::string::npos; pos = text.find(from, pos + to.size())) {
    text.replace(pos, from.size(), to);
  }
}

// A server of the user's, through the shell (`exec`, so that the server is
// the process bench stops, where the command is one), in bench's working
// directory.
StartedServer start_command(const ServerSettings& settings) {
  if (settings.command.empty()) return not_running(StartedServer::Outcome::kFailed, "no command given");
  const auto port = pick_free_port();
  if (!port) return not_running(StartedServer::Outcome::kFailed, "no free port on 127.0.0.1");
  std::string command = settings.command;
  const std::string port_text = std::to_string(*port);
  replace_all(command, "{port}", port_text);
  ProcessSpec spec{.program = "/bin/sh",
                   .args = {"-c", "exec " + command},
                   .env = {{"PORT", port_text}},
                   .working_dir = {},
                   .cpus = settings.server_cpu_list,
                   .stdout_to = server_output(settings),
                   .stderr_to = server_output(settings)};
  return start_on_port(std::move(spec), *port, settings);
}

std::string last_line_of(const fs::path& path) {
  const auto text = read_file(path);
  if (!text) return {};
  std::string_view view(*text);
  while (!view.empty() && (view.back() == '\n' || view.back() == '\r')) view.remove_suffix(1);
  return std::string(view.substr(view.rfind('\n') == std::string_view::npos ? 0 : view.rfind('\n') + 1));
}

// `http2`: the port speaks HTTP/2 only (prior knowledge), as nginx 1.22's
// `listen ... http2` without ssl does.
StartedServer start_nginx(const ServerSettings& settings, bool http2) {
  if (::access(kNginx, X_OK) != 0) {
    return not_running(StartedServer::Outcome::kNotInstalled, std::string(kNginx) + " not found");
  }
  const fs::path template_path = reference_dir() / "nginx.conf.in";
  auto config = read_file(template_path);
  if (!config) {
    return not_running(StartedServer::Outcome::kFailed, "cannot read " + template_path.string());
  }
  const auto port = pick_free_port();
  if (!port) return not_running(StartedServer::Outcome::kFailed, "no free port on 127.0.0.1");

  StartedServer server;
  std::string error;
  server.temp_dir = TempDir::create("edri-bench-nginx", error);
  if (!server.temp_dir) return not_running(StartedServer::Outcome::kFailed, error);
  const fs::path prefix = server.temp_dir->path();

  replace_all(*config, "@PREFIX@", prefix.string());
  const std::string address = std::string(kLoopback) + ":" + std::to_string(*port);
  replace_all(*config, "@LISTEN@", address + (http2 ? " http2" : ""));
  replace_all(*config, "@ADDRESS@", address);
  replace_all(*config, "@WORKERS@", std::to_string(settings.workers));
  {
    std::ofstream out(prefix / "nginx.conf", std::ios::binary);
    out << *config;
    if (!out.flush()) {
      server.outcome = StartedServer::Outcome::kFailed;
      server.message = "cannot write " + (prefix / "nginx.conf").string();
      return server;
    }
  }

  // The payloads of `bench payload`, the same bytes bench-app's
  // /payload/{bytes} answers.
  fs::create_directories(prefix / "payload");
  for (std::size_t n : kPayloadSizes) {
    std::ofstream out(prefix / "payload" / std::to_string(n), std::ios::binary);
    std::string bytes(n, '\0');
    for (std::size_t i = 0; i < n; ++i) bytes[i] = static_cast<char>('a' + i % 26);
    out << bytes;
  }

  const fs::path error_log = prefix / "error.log";
  ProcessSpec spec{
      .program = kNginx,
      // -e: the compiled-in error log path is used until the
      // config is read, and may not be writable.
      .args = {"-p", prefix.string() + "/", "-c", (prefix / "nginx.conf").string(), "-e", error_log.string()},
      .env = {},
      .working_dir = prefix.string(),
      .cpus = settings.server_cpu_list,
      .stdout_to = server_output(settings),
      .stderr_to = server_output(settings)};
  add_extra_env(spec, settings);
  server.process = ServerProcess::start(spec, error);
  if (!server.process) {
    server.outcome = StartedServer::Outcome::kFailed;
    server.message = error;
    return server;
  }
  server.port = *port;
  server = wait_until_serving(std::move(server), settings, http2 ? &probe_h2_ok : &probe_http_ok);
  if (server.outcome == StartedServer::Outcome::kFailed) {
    if (const std::string last = last_line_of(error_log); !last.empty()) {
      server.message += " (error.log: " + last + ")";
    }
  }
  return server;
}

// Waits for grpc_noop_server.py's "listening" line: grpcio answers no
// HTTP/1.1 GET to probe, and it binds before it prints.
StartedServer wait_for_grpcio_line(StartedServer server, const ServerSettings& settings) {
  if (!read_until_ready(server, settings, kGrpcioReadyPrefix,
                        [](const std::string& line) { return std::string_view(line).starts_with(kGrpcioReadyPrefix); }))
    return server;
  server.process->close_stdout();  // nothing else on stdout is for us
  server.outcome = StartedServer::Outcome::kRunning;
  return server;
}

StartedServer start_grpcio(const ServerSettings& settings) {
  const fs::path script = reference_dir() / "grpc_noop_server.py";
  if (::access(kPython, X_OK) != 0 || run_quietly({kPython, "-c", "import grpc"}) != 0) {
    return not_running(StartedServer::Outcome::kNotInstalled, std::string(kPython) + " lacks grpc (python3-grpcio)");
  }
  if (!fs::exists(script)) return not_running(StartedServer::Outcome::kFailed, script.string() + " is missing");
  const auto port = pick_free_port();
  if (!port) return not_running(StartedServer::Outcome::kFailed, "no free port on 127.0.0.1");

  ProcessSpec spec{.program = kPython,
                   .args = {script.string(), std::to_string(*port)},
                   // Keeps __pycache__ out of the source tree.
                   .env = {{"PYTHONDONTWRITEBYTECODE", "1"}},
                   .working_dir = reference_dir().string(),
                   .cpus = settings.server_cpu_list,
                   .stdout_to = OutputTo::kPipe,
                   .stderr_to = server_output(settings)};
  if (settings.handler_threads > 0) spec.args.push_back(std::to_string(settings.handler_threads));
  add_extra_env(spec, settings);
  StartedServer server;
  std::string error;
  server.process = ServerProcess::start(spec, error);
  if (!server.process) return not_running(StartedServer::Outcome::kFailed, error);
  server.port = *port;
  return wait_for_grpcio_line(std::move(server), settings);
}

}  // namespace

std::string_view display_name(ServerKind kind) {
  switch (kind) {
    case ServerKind::kEdri: return "edri";
    case ServerKind::kFastApi: return "FastAPI";
    case ServerKind::kNginx: return "nginx";
    case ServerKind::kNodeStreams: return "Node ws";
    case ServerKind::kNginxHttp2: return "nginx h2";
    case ServerKind::kGrpcio: return "grpcio";
    case ServerKind::kTechEmpowerFastApi: return "FastAPI";
    case ServerKind::kCommand: return "reference";
  }
  return "?";
}

std::unique_ptr<TempDir> TempDir::create(const std::string& name_prefix, std::string& error) {
  std::string pattern = "/tmp/" + name_prefix + "-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) {
    error = "mkdtemp: " + std::string(std::strerror(errno));
    return nullptr;
  }
  // nginx workers started by root run as nobody and must be able to reach it.
  ::chmod(pattern.c_str(), 0755);
  return std::unique_ptr<TempDir>(new TempDir(pattern));
}

TempDir::~TempDir() {
  std::error_code ignored;
  fs::remove_all(path_, ignored);
}

StartedServer start_server(ServerKind kind, const ServerSettings& settings) {
  switch (kind) {
    case ServerKind::kEdri: return start_edri(settings);
    case ServerKind::kFastApi: return start_fastapi(settings, reference_dir());
    case ServerKind::kTechEmpowerFastApi:
      return start_fastapi(settings, fs::path(EDRI_SOURCE_DIR) / "benchmarks" / "techempower",
                           "fastapi, uvicorn, uvloop, httptools, asyncpg, jinja2");
    case ServerKind::kNginx: return start_nginx(settings, false);
    case ServerKind::kNodeStreams: return start_node_streams(settings);
    case ServerKind::kNginxHttp2: return start_nginx(settings, true);
    case ServerKind::kGrpcio: return start_grpcio(settings);
    case ServerKind::kCommand: return start_command(settings);
  }
  return not_running(StartedServer::Outcome::kFailed, "unknown server");
}

}  // namespace edri::bench
