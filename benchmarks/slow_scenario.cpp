// slow: GET /noop for normal clients, alone and while 50 clients ask for
// /payload/16777216 and never read; latency of the normal clients and the
// resident memory of every edri process in both cases.
#include <utility>  // before Asio (Boost 1.74 under C++20)

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "children_cpu_time.hpp"
#include "report.hpp"
#include "scenario_support.hpp"
#include "scenarios.hpp"

namespace edri::bench {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

constexpr int kStalled = 50;
constexpr const char* kStalledTarget = "/payload/16777216";

// A connection with a small receive window that asks for `target` and
// never reads; nullopt on failure.
std::optional<tcp::socket> stalled_client(asio::io_context& io, std::uint16_t port, const std::string& target) {
  tcp::socket socket(io);
  boost::system::error_code ec;
  socket.open(tcp::v4(), ec);
  socket.set_option(asio::socket_base::receive_buffer_size(4096), ec);
  socket.connect(tcp::endpoint(asio::ip::address_v4::loopback(), port), ec);
  if (ec) return std::nullopt;
  asio::write(socket, asio::buffer("GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"), ec);
  if (ec) return std::nullopt;
  return socket;
}

}  // namespace

ScenarioOutcome run_slow_scenario(const ScenarioContext& context) {
  const std::vector<int> concurrencies = context.options.concurrencies_or({8});
  std::vector<std::string> notes;
  StartedServer server = start_server_reporting(ServerKind::kEdri, "edri", server_settings(context), notes);
  if (server.outcome == StartedServer::Outcome::kInterrupted) return ScenarioOutcome::kInterrupted;
  if (server.outcome != StartedServer::Outcome::kRunning) {
    print_report_header(context, "slow clients");
    print_notes(notes);
    return ScenarioOutcome::kServerFailed;
  }
  const pid_t supervisor = server.process->pid();
  const auto idle = resident_by_process(supervisor);

  struct Case {
    std::string label;
    std::vector<Row> rows;
    std::map<pid_t, long> memory;
  };
  std::vector<Case> cases;
  asio::io_context io;
  std::vector<tcp::socket> stalled;
  for (const bool with_stalled : {false, true}) {
    Case c{with_stalled ? std::to_string(kStalled) + " clients not reading " + kStalledTarget : "alone", {}, {}};
    if (with_stalled) {
      for (int i = 0; i < kStalled; ++i)
        if (auto socket = stalled_client(io, server.port, kStalledTarget)) stalled.push_back(std::move(*socket));
      if (static_cast<int>(stalled.size()) < kStalled)
        notes.push_back("only " + std::to_string(stalled.size()) + " stalled clients could connect");
      std::this_thread::sleep_for(std::chrono::seconds(2));  // their answers are made and queued
    }
    for (int conc : concurrencies) {
      LoadOptions load = load_options(context, server.port, conc);
      load.request.method = "GET";
      load.request.target = "/noop";
      const LoadResult result = run_reported_load(context, "edri /noop " + c.label, load);
      if (result.interrupted || context.interrupted()) return ScenarioOutcome::kInterrupted;
      c.rows.push_back(Row{c.label, conc, summarize(result), {}});
    }
    c.memory = resident_by_process(supervisor);
    cases.push_back(std::move(c));
  }
  stalled.clear();

  print_report_header(context, std::string("keep-alive GET /noop, alone and beside ") + std::to_string(kStalled) +
                                   " connections that each sent GET " + kStalledTarget + " and read nothing");
  std::printf(
      "| normal clients | c | req/s | p50 ms | p99 ms | errors | p99 vs alone "
      "|\n|---|---:|---:|---:|---:|---:|---:|\n");
  for (std::size_t i = 0; i < cases.front().rows.size(); ++i)
    for (const auto& c : cases) {
      const auto& s = *c.rows[i].summary;
      const auto& alone = *cases.front().rows[i].summary;
      std::printf("| %s | %d | %.0f | %.3f | %.3f | %llu | %.2fx |\n", c.label.c_str(), c.rows[i].concurrency,
                  s.requests_per_second, s.p50_ms, s.p99_ms, static_cast<unsigned long long>(s.errors + s.non_2xx),
                  alone.p99_ms > 0 ? s.p99_ms / alone.p99_ms : 0.0);
    }
  std::printf(
      "\n| process | idle RSS MB | alone MB | with stalled clients MB | vs idle | vs alone "
      "|\n|---|---:|---:|---:|---:|---:|\n");
  for (const auto& [pid, kb] : idle) {
    const auto at = [&](const Case& c) {
      auto it = c.memory.find(pid);
      return it == c.memory.end() ? -1L : it->second;
    };
    const long stalled_kb = at(cases.back());
    const long alone_kb = at(cases.front());
    std::printf("| %s | %.1f | %.1f | %.1f | %.2fx | %.2fx |\n", process_title(pid).c_str(), kb / 1024.0,
                alone_kb / 1024.0, stalled_kb / 1024.0, kb > 0 ? static_cast<double>(stalled_kb) / kb : 0.0,
                alone_kb > 0 ? static_cast<double>(stalled_kb) / alone_kb : 0.0);
  }
  print_notes(notes);
  return ScenarioOutcome::kDone;
}

}  // namespace edri::bench
