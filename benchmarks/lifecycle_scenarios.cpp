// startup: launch to the first 200, for edri and the references, and to
// edri's /ready. session: what idle WebSocket sessions cost edri, in memory
// and threads per process and in CPU while they sit.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "children_cpu_time.hpp"
#include "report.hpp"
#include "scenario_support.hpp"
#include "scenarios.hpp"
#include "websocket_sessions.hpp"

namespace edri::bench {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

struct Range {
  double min = 0, median = 0, max = 0;
};

Range range_of(std::vector<double> v) {
  if (v.empty()) return {};
  std::sort(v.begin(), v.end());
  return {v.front(), v[v.size() / 2], v.back()};
}

std::string range_cell(const std::vector<double>& v) {
  if (v.empty()) return "-";
  const auto r = range_of(v);
  char buf[96];
  std::snprintf(buf, sizeof buf, "%.1f / %.1f / %.1f", r.min, r.median, r.max);
  return buf;
}

// The supervisor and its children: pid -> (title, RSS kB, threads).
struct ProcessSample {
  std::string title;
  long rss_kb = 0;
  int threads = 0;
};
std::map<pid_t, ProcessSample> sample_processes(pid_t supervisor) {
  std::map<pid_t, ProcessSample> out;
  std::vector<pid_t> pids{supervisor};
  if (const auto children = children_cpu_time(supervisor))
    pids.insert(pids.end(), children->pids.begin(), children->pids.end());
  for (const pid_t p : pids)
    if (const auto kb = resident_kb(p)) out[p] = ProcessSample{process_title(p), *kb, threads_of(p)};
  return out;
}

}  // namespace

ScenarioOutcome run_startup_scenario(const ScenarioContext& context) {
  const int runs = context.options.quick ? 2 : 5;
  std::vector<std::string> notes;
  struct Row {
    std::string name;
    std::vector<double> first_200, ready;
    std::string unavailable;
  };
  std::vector<Row> rows;
  for (ServerKind kind : {ServerKind::kEdri, ServerKind::kFastApi, ServerKind::kNginx}) {
    Row row{std::string(display_name(kind)), {}, {}, {}};
    // edri twice per run: waiting for GET /noop, then for GET /ready.
    for (const std::string& path : {std::string("/noop"), std::string("/ready")}) {
      if (path == "/ready" && kind != ServerKind::kEdri) continue;
      for (int i = 0; i < runs && row.unavailable.empty(); ++i) {
        auto settings = server_settings(context);
        settings.ready_path = path;
        std::fprintf(stderr, "starting %s, waiting for GET %s (%d of %d)\n", row.name.c_str(), path.c_str(), i + 1,
                     runs);
        const auto t0 = Clock::now();
        StartedServer server = start_server(kind, settings);
        const double ms = ms_since(t0);
        if (server.outcome == StartedServer::Outcome::kInterrupted || context.interrupted())
          return ScenarioOutcome::kInterrupted;
        if (server.outcome != StartedServer::Outcome::kRunning) {
          row.unavailable = unavailable_cell(server);
          notes.push_back(row.name + ": " + server.message);
          break;
        }
        (path == "/noop" ? row.first_200 : row.ready).push_back(ms);
        server.process->stop();
      }
    }
    rows.push_back(std::move(row));
  }
  print_report_header(context,
                      "a server launched (fork and exec) until GET /noop answers 200, and edri until "
                      "GET /ready does; probed every 2 ms; min / median / max of " +
                          std::to_string(runs) + " launches");
  std::printf("| server | launch to first 200 ms | launch to /ready 200 ms |\n|---|---:|---:|\n");
  for (const auto& r : rows) {
    if (!r.unavailable.empty() && r.first_200.empty()) {
      std::printf("| %s | %s | - |\n", r.name.c_str(), r.unavailable.c_str());
      continue;
    }
    std::printf("| %s | %s | %s |\n", r.name.c_str(), range_cell(r.first_200).c_str(), range_cell(r.ready).c_str());
  }
  print_notes(notes);
  return ScenarioOutcome::kDone;
}

ScenarioOutcome run_session_scenario(const ScenarioContext& context) {
  const int sessions = context.options.quick ? 200 : 1000;
  const double idle_seconds = context.options.quick ? 1.0 : 5.0;
  std::vector<std::string> notes;
  StartedServer server = start_server_reporting(ServerKind::kEdri, "edri", server_settings(context), notes);
  if (server.outcome == StartedServer::Outcome::kInterrupted) return ScenarioOutcome::kInterrupted;
  if (server.outcome != StartedServer::Outcome::kRunning) {
    print_report_header(context, "idle WebSocket sessions", false);
    print_notes(notes);
    return ScenarioOutcome::kServerFailed;
  }
  const pid_t supervisor = server.process->pid();
  // Settled after start: one connection opened and closed first.
  for (int fd : open_sessions(server.port, 1, context)) ::close(fd);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const auto before = sample_processes(supervisor);
  std::fprintf(stderr, "opening %d WebSocket sessions\n", sessions);
  const auto t0 = Clock::now();
  std::vector<int> fds = open_sessions(server.port, sessions, context);
  const double open_ms = ms_since(t0);
  if (context.interrupted()) {
    for (int fd : fds) ::close(fd);
    return ScenarioOutcome::kInterrupted;
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const auto cpu0 = children_cpu_time(supervisor);
  std::fprintf(stderr, "%zu sessions open; idle for %.0f s\n", fds.size(), idle_seconds);
  std::this_thread::sleep_for(std::chrono::duration<double>(idle_seconds));
  const auto cpu1 = children_cpu_time(supervisor);
  const auto after = sample_processes(supervisor);
  for (int fd : fds) ::close(fd);
  if (static_cast<int>(fds.size()) < sessions)
    notes.push_back("only " + std::to_string(fds.size()) + " of " + std::to_string(sessions) +
                    " sessions opened (ulimit -n?)");
  const double opened = static_cast<double>(std::max<std::size_t>(fds.size(), 1));

  print_report_header(context,
                      std::to_string(sessions) +
                          " WebSocket sessions opened one after another at /ws, "
                          "then left idle for " +
                          std::to_string(static_cast<int>(idle_seconds)) + " s",
                      false);
  std::printf(
      "| process | RSS before MB | RSS with sessions MB | kB per session | threads before | threads after |\n"
      "|---|---:|---:|---:|---:|---:|\n");
  long total_before = 0, total_after = 0;
  for (const auto& [pid, b] : before) {
    auto it = after.find(pid);
    if (it == after.end()) continue;
    const auto& a = it->second;
    total_before += b.rss_kb;
    total_after += a.rss_kb;
    std::printf("| %s | %.1f | %.1f | %.2f | %d | %d |\n", b.title.c_str(), b.rss_kb / 1024.0, a.rss_kb / 1024.0,
                static_cast<double>(a.rss_kb - b.rss_kb) / opened, b.threads, a.threads);
  }
  std::printf("| all | %.1f | %.1f | %.2f | | |\n\n", total_before / 1024.0, total_after / 1024.0,
              static_cast<double>(total_after - total_before) / opened);
  double cpu_ms = -1;
  if (cpu0 && cpu1 && cpu0->pids == cpu1->pids) cpu_ms = (cpu1->seconds - cpu0->seconds) * 1000.0;
  std::printf("| sessions | open all ms | per open ms | server CPU while idle ms/s |\n|---:|---:|---:|---:|\n");
  std::printf("| %zu | %.0f | %.3f | %s |\n", fds.size(), open_ms, open_ms / opened,
              cpu_ms < 0 ? "-" : std::to_string(cpu_ms / idle_seconds).substr(0, 6).c_str());
  print_notes(notes);
  return ScenarioOutcome::kDone;
}

}  // namespace edri::bench
