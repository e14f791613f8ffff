// wait: handlers that wait without blocking their manager (issue 36,
// docs/decisions/0030), on the bench app:
// - GET /wait/10, a coroutine awaiting a 10 ms timer, at each concurrency
//   against the ideal c / 10 ms, while one more client times GET /noop of
//   the same domain, against /noop timed alone first;
// - GET /fetch, one outbound GET of nginx's /noop per request, beside
//   FastAPI + httpx doing the same and nginx proxying it itself;
// - the manager's resident memory with 10,000 requests waiting at once on
//   GET /wait/5000, and whether every one of them is answered.
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "children_cpu_time.hpp"
#include "http_response_parser.hpp"
#include "report.hpp"
#include "scenario_support.hpp"
#include "scenarios.hpp"

namespace edri::bench {
namespace {

using Clock = std::chrono::steady_clock;

// ---- GET /wait/10 beside GET /noop

constexpr int kWaitMs = 10;
const std::string kWaitTarget = "/wait/" + std::to_string(kWaitMs);
const std::string kWaitAnswer = R"({"waited":)" + std::to_string(kWaitMs) + "}";
const std::string kNoopAnswer = R"({"ok":true})";
const std::string kWaits = "edri GET " + kWaitTarget;
const std::string kNoopBeside = "edri GET /noop (c=1) beside the waits";
const std::string kNoopAlone = "edri GET /noop (c=1) alone";
const std::vector<int> kWaitConcurrencies{1, 8, 32, 128};
// Issue 36: /noop's p99 beside the waits at most twice its p99 alone.
constexpr double kNoopP99Target = 2.0;

// ---- GET /fetch

const std::string kEdriFetch = "edri GET /fetch (libcurl on the manager's loop)";
const std::string kFastApiFetch = "FastAPI + httpx GET /fetch";
const std::string kNginxFetch = "nginx proxy_pass GET /fetch";
const std::string kUpstream = "nginx GET /noop (the upstream, alone)";
// What edri's and the FastAPI app's /fetch answer for nginx's /noop.
const std::string kFetchAnswer = R"({"bytes":11,"status":200})";
const std::vector<RateLine> kFetchLines{
    {kEdriFetch, "req/s"}, {kFastApiFetch, "req/s"}, {kNginxFetch, "req/s"}, {kUpstream, "req/s"}};
// Issue 36's targets, at c=32.
constexpr int kTargetConcurrency = 32;
const RatioLine kOverFastApi{"edri / FastAPI + httpx", kEdriFetch, kFastApiFetch, "≥ 5x at c=32"};
const RatioLine kOverNginx{"edri / nginx proxy_pass", kEdriFetch, kNginxFetch, "≥ 0.5x at c=32"};
constexpr double kOverFastApiTarget = 5.0;
constexpr double kOverNginxTarget = 0.5;

// ---- requests waiting at once

// `connections` x `per_connection` pipelined GET /wait/{wait_ms}; the memory
// is read `sample_after_s` after the first was sent, when all have arrived
// and none has been answered.
struct WaitingShape {
  int connections;
  int per_connection;
  int wait_ms;
  double sample_after_s;
  constexpr int total() const { return connections * per_connection; }
};
constexpr WaitingShape kFullShape{200, 50, 5000, 1.5};
constexpr WaitingShape kQuickShape{20, 50, 2000, 1.0};
// Issue 36: at most 2 KB in the manager per waiting request.
constexpr double kBytesPerWaitTarget = 2048;
// Past the wait, how long the answers may take to come back.
constexpr auto kAnswerGrace = std::chrono::seconds(30);
constexpr const char* kManagerTitle = "manager bench";
// edri's defaults for the limits the shapes need, written out so that an
// environment which lowers one cannot turn the measure into one of refusals.
const EnvironmentVariables kWaitingLimits{
    {"EDRI_MAX_PIPELINE", "64"}, {"EDRI_MAX_CONNECTIONS", "10000"}, {"EDRI_MAX_WAITING", "16384"}};
static_assert(kFullShape.per_connection <= 64 && kFullShape.connections <= 10000 && kFullShape.total() <= 16384);

struct WaitingMemory {
  int waiting = 0;  // requests sent
  std::map<pid_t, long> before;
  std::map<pid_t, long> during;
  std::map<pid_t, std::string> titles;  // read while the server runs
  std::uint64_t ok = 0;
  std::uint64_t other = 0;
  double last_answer_s = 0;
};

LoadOptions get_load(const ScenarioContext& context, std::uint16_t port, int c, const std::string& target,
                     const std::string& answer) {
  LoadOptions load = load_options(context, port, c);
  load.request.target = target;
  load.expected_body = answer;
  return load;
}

std::string format(const char* fmt, double value) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, value);
  return buf;
}

std::string met(bool ok) { return ok ? "met" : "missed"; }

// ---- GET /wait/10 beside GET /noop

// The waits at `c` on a thread of their own and, over the same window,
// /noop at c=1 on this one (each load has its own io_context); false when
// interrupted.
bool measure_wait_cell(const ScenarioContext& context, std::uint16_t port, int c, std::vector<Row>& rows,
                       std::vector<std::string>& notes) {
  LoadResult waits;
  std::thread waiting(
      [&] { waits = run_reported_load(context, kWaits, get_load(context, port, c, kWaitTarget, kWaitAnswer)); });
  const LoadResult noop = run_reported_load(context, kNoopBeside, get_load(context, port, 1, "/noop", kNoopAnswer));
  waiting.join();
  if (waits.interrupted || noop.interrupted) return false;
  add_measured_row(kWaits, c, summarize(waits), waits.first_error, rows, notes);
  // Kept under the waits' concurrency, which is what tells the rows apart.
  add_measured_row(kNoopBeside, c, summarize(noop), noop.first_error, rows, notes);
  return true;
}

ScenarioOutcome measure_waits(const ScenarioContext& context, const std::vector<int>& concurrencies,
                              std::vector<Row>& rows, std::vector<std::string>& notes) {
  StartedServer server = start_server_reporting(ServerKind::kEdri, "edri", server_settings(context), notes);
  if (server.outcome == StartedServer::Outcome::kInterrupted) return ScenarioOutcome::kInterrupted;
  if (server.outcome != StartedServer::Outcome::kRunning) {
    add_unavailable_rows({kWaits, kNoopBeside}, concurrencies, unavailable_cell(server), rows);
    add_unavailable_rows({kNoopAlone}, {1}, unavailable_cell(server), rows);
    return ScenarioOutcome::kServerFailed;
  }
  if (!measure_http_row(context, kNoopAlone, get_load(context, server.port, 1, "/noop", kNoopAnswer), rows, notes))
    return ScenarioOutcome::kInterrupted;
  for (int c : concurrencies) {
    if (!measure_wait_cell(context, server.port, c, rows, notes)) return ScenarioOutcome::kInterrupted;
    note_if_exited(server, "edri", c, notes);
  }
  std::fprintf(stderr, "stopping edri ...\n");
  return ScenarioOutcome::kDone;
}

// A figure of `row`, or its reason (or "-") when it was not measured.
std::string figure(const Row* row, double RunSummary::*field, const char* fmt) {
  if (row == nullptr) return "-";
  return row->summary ? format(fmt, (*row->summary).*field) : row->unavailable;
}

std::uint64_t failed(const Row* row) { return row && row->summary ? row->summary->errors + row->summary->non_2xx : 0; }

// /noop's p99 beside the waits at `c` over its p99 alone; nullopt when
// either is missing.
std::optional<double> noop_p99_ratio(const std::vector<Row>& rows, int c) {
  const Row* beside = find_row(rows, kNoopBeside, c);
  const Row* alone = find_row(rows, kNoopAlone, 1);
  if (!beside || !alone || !beside->summary || !alone->summary || alone->summary->p99_ms <= 0) return std::nullopt;
  return beside->summary->p99_ms / alone->summary->p99_ms;
}

void print_wait_table(const std::vector<Row>& rows, const std::vector<int>& concurrencies) {
  std::printf(
      "| GET %s c | req/s | ideal c / %d ms | of ideal | p50 ms | p99 ms | /noop c=1 beside: req/s | /noop p50 ms | "
      "/noop p99 ms | /noop p99 vs alone | errors |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
      kWaitTarget.c_str(), kWaitMs);
  const Row* alone = find_row(rows, kNoopAlone, 1);
  std::printf("| none (/noop alone) | - | - | - | - | - | %s | %s | %s | 1.00x | %llu |\n",
              figure(alone, &RunSummary::requests_per_second, "%.0f").c_str(),
              figure(alone, &RunSummary::p50_ms, "%.3f").c_str(), figure(alone, &RunSummary::p99_ms, "%.3f").c_str(),
              static_cast<unsigned long long>(failed(alone)));
  for (int c : concurrencies) {
    const Row* waits = find_row(rows, kWaits, c);
    const Row* noop = find_row(rows, kNoopBeside, c);
    const double ideal = c * 1000.0 / kWaitMs;
    const auto ratio = noop_p99_ratio(rows, c);
    const std::string of_ideal =
        waits && waits->summary ? format("%.2fx", waits->summary->requests_per_second / ideal) : "-";
    std::printf("| %d | %s | %.0f | %s | %s | %s | %s | %s | %s | %s | %llu |\n", c,
                figure(waits, &RunSummary::requests_per_second, "%.0f").c_str(), ideal, of_ideal.c_str(),
                figure(waits, &RunSummary::p50_ms, "%.3f").c_str(), figure(waits, &RunSummary::p99_ms, "%.3f").c_str(),
                figure(noop, &RunSummary::requests_per_second, "%.0f").c_str(),
                figure(noop, &RunSummary::p50_ms, "%.3f").c_str(), figure(noop, &RunSummary::p99_ms, "%.3f").c_str(),
                ratio ? format("%.2fx", *ratio).c_str() : "-",
                static_cast<unsigned long long>(failed(waits) + failed(noop)));
  }
}

// Which concurrencies met the /noop target and which did not.
void note_wait_target(const std::vector<Row>& rows, const std::vector<int>& concurrencies,
                      std::vector<std::string>& notes) {
  std::string met_at, missed_at;
  for (int c : concurrencies) {
    const auto ratio = noop_p99_ratio(rows, c);
    if (!ratio) continue;
    std::string& list = *ratio <= kNoopP99Target ? met_at : missed_at;
    list += (list.empty() ? "" : ", ") + std::to_string(c) + " (" + format("%.2fx", *ratio) + ")";
  }
  notes.push_back("target, /noop's p99 beside the waits at most " + format("%.0fx", kNoopP99Target) +
                  " its p99 alone: " + (met_at.empty() ? "met nowhere" : "met at c=" + met_at) + "; " +
                  (missed_at.empty() ? "missed nowhere" : "missed at c=" + missed_at));
}

// ---- GET /fetch

// GET /fetch on one server at each concurrency, once one GET has answered
// 200 (a missing module or URL would otherwise time errors); false when
// interrupted.
bool measure_fetch_rows(const ScenarioContext& context, const std::string& label, std::uint16_t port,
                        const std::string& answer, const std::vector<int>& concurrencies, std::vector<Row>& rows,
                        std::vector<std::string>& notes) {
  if (!fetch(port, "/fetch", 5000)) {
    notes.push_back(label + ": GET /fetch did not answer 200 once (for FastAPI: is python3-httpx installed?)");
    add_unavailable_rows({label}, concurrencies, "no 200", rows);
    return true;
  }
  for (int c : concurrencies)
    if (!measure_http_row(context, label, get_load(context, port, c, "/fetch", answer), rows, notes)) return false;
  return true;
}

// A server started with BENCH_FETCH_URL, its /fetch measured, then stopped.
ScenarioOutcome measure_fetching_server(const ScenarioContext& context, ServerKind kind, const std::string& label,
                                        const std::string& fetch_url, const std::vector<int>& concurrencies,
                                        std::vector<Row>& rows, std::vector<std::string>& notes) {
  const std::string name(display_name(kind));
  const ServerSettings settings = server_settings(context, {{"BENCH_FETCH_URL", fetch_url}});
  StartedServer server = start_server_reporting(kind, name, settings, notes);
  if (server.outcome == StartedServer::Outcome::kInterrupted) return ScenarioOutcome::kInterrupted;
  if (server.outcome != StartedServer::Outcome::kRunning) {
    add_unavailable_rows({label}, concurrencies, unavailable_cell(server), rows);
    return server.outcome == StartedServer::Outcome::kNotInstalled ? ScenarioOutcome::kDone
                                                                   : ScenarioOutcome::kServerFailed;
  }
  if (!measure_fetch_rows(context, label, server.port, kFetchAnswer, concurrencies, rows, notes))
    return ScenarioOutcome::kInterrupted;
  note_if_exited(server, name, concurrencies.back(), notes);
  std::fprintf(stderr, "stopping %s ...\n", name.c_str());
  return ScenarioOutcome::kDone;
}

// nginx (one worker) is the upstream of every /fetch: its /noop alone, edri
// and FastAPI fetching it, and nginx proxying to itself.
ScenarioOutcome measure_fetches(const ScenarioContext& context, const std::vector<int>& concurrencies,
                                std::vector<Row>& rows, std::vector<std::string>& notes) {
  StartedServer upstream = start_server_reporting(ServerKind::kNginx, "nginx", server_settings(context), notes);
  if (upstream.outcome == StartedServer::Outcome::kInterrupted) return ScenarioOutcome::kInterrupted;
  if (upstream.outcome != StartedServer::Outcome::kRunning) {
    add_unavailable_rows({kEdriFetch, kFastApiFetch, kNginxFetch, kUpstream}, concurrencies,
                         "no upstream: " + unavailable_cell(upstream), rows);
    return upstream.outcome == StartedServer::Outcome::kNotInstalled ? ScenarioOutcome::kDone
                                                                     : ScenarioOutcome::kServerFailed;
  }
  for (int c : concurrencies)
    if (!measure_http_row(context, kUpstream, get_load(context, upstream.port, c, "/noop", kNoopAnswer), rows, notes))
      return ScenarioOutcome::kInterrupted;
  const std::string url = "http://127.0.0.1:" + std::to_string(upstream.port) + "/noop";
  ScenarioOutcome worst = ScenarioOutcome::kDone;
  const std::pair<ServerKind, std::string> fetching[] = {{ServerKind::kEdri, kEdriFetch},
                                                         {ServerKind::kFastApi, kFastApiFetch}};
  for (const auto& [kind, label] : fetching) {
    const ScenarioOutcome outcome = measure_fetching_server(context, kind, label, url, concurrencies, rows, notes);
    if (outcome == ScenarioOutcome::kInterrupted) return outcome;
    if (outcome == ScenarioOutcome::kServerFailed) worst = outcome;
  }
  if (!measure_fetch_rows(context, kNginxFetch, upstream.port, kNoopAnswer, concurrencies, rows, notes))
    return ScenarioOutcome::kInterrupted;
  note_if_exited(upstream, "nginx", concurrencies.back(), notes);
  std::fprintf(stderr, "stopping nginx ...\n");
  return worst;
}

void note_fetch_target(const std::vector<Row>& rows, const RatioLine& line, double at_least,
                       std::vector<std::string>& notes) {
  const Row* numerator = find_row(rows, line.numerator, kTargetConcurrency);
  const Row* denominator = find_row(rows, line.denominator, kTargetConcurrency);
  if (!numerator || !denominator || !numerator->summary || !denominator->summary ||
      denominator->summary->requests_per_second <= 0) {
    notes.push_back("target, " + line.name + " " + line.target + ": not measured");
    return;
  }
  const double ratio = numerator->summary->requests_per_second / denominator->summary->requests_per_second;
  notes.push_back("target, " + line.name + " " + line.target + ": " + met(ratio >= at_least) + " (" +
                  format("%.2fx", ratio) + ")");
}

// ---- requests waiting at once

// One connection with its GETs written, and what came back on it.
struct PipelinedConnection {
  int fd = -1;
  std::string in;
  int answered = 0;
};

// Connects to 127.0.0.1:port and writes `n` GETs of `target` at once; -1
// on failure.
int open_pipelined(std::uint16_t port, const std::string& target, int n) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string requests;
  for (int i = 0; i < n; ++i) requests += "GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      ::send(fd, requests.data(), requests.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(requests.size()))
    return fd;
  ::close(fd);
  return -1;
}

// Takes the complete answers at the front of `conn.in`; false when what is
// there is no HTTP answer.
bool take_answers(PipelinedConnection& conn, WaitingMemory& out, Clock::time_point sent) {
  for (;;) {
    const ParsedResponse r = parse_http_response(conn.in);
    if (r.state == ParsedResponse::State::kMalformed) return false;
    if (r.state == ParsedResponse::State::kIncomplete) return true;
    ++(r.status == 200 ? out.ok : out.other);
    ++conn.answered;
    out.last_answer_s = std::chrono::duration<double>(Clock::now() - sent).count();
    conn.in.erase(0, r.total_size);
  }
}

// Reads until every connection has all its answers, or closed, or the
// deadline passed (the rest are unanswered).
void read_answers(std::vector<PipelinedConnection>& conns, int per_connection, Clock::time_point sent,
                  Clock::time_point deadline, const ScenarioContext& context, WaitingMemory& out) {
  char buf[16384];
  while (Clock::now() < deadline && !context.interrupted()) {
    std::vector<pollfd> fds;
    std::vector<PipelinedConnection*> open;
    for (auto& conn : conns)
      if (conn.fd >= 0 && conn.answered < per_connection) {
        fds.push_back(pollfd{conn.fd, POLLIN, 0});
        open.push_back(&conn);
      }
    if (fds.empty()) return;
    if (::poll(fds.data(), fds.size(), 100) <= 0) continue;
    for (std::size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      const ssize_t n = ::recv(fds[i].fd, buf, sizeof buf, 0);
      if (n > 0) open[i]->in.append(buf, static_cast<std::size_t>(n));
      if (n <= 0 || !take_answers(*open[i], out, sent)) {
        ::close(open[i]->fd);
        open[i]->fd = -1;
      }
    }
  }
}

// 200 sockets are far below any usual limit; a lowered soft limit is
// raised as far as the hard one allows.
void allow_descriptors(rlim_t wanted) {
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) != 0 || lim.rlim_cur >= wanted) return;
  lim.rlim_cur = std::min(wanted, lim.rlim_max);
  ::setrlimit(RLIMIT_NOFILE, &lim);
}

// Sends the shape's requests, reads every process's memory while they
// wait, then reads their answers.
void wait_at_once(const ScenarioContext& context, const StartedServer& server, const WaitingShape& shape,
                  WaitingMemory& out) {
  // One wait first, so that what the manager sets up once is not counted.
  fetch(server.port, "/wait/1", 2000);
  out.before = resident_by_process(server.process->pid());
  const std::string target = "/wait/" + std::to_string(shape.wait_ms);
  const auto sent = Clock::now();
  std::vector<PipelinedConnection> conns(static_cast<std::size_t>(shape.connections));
  for (auto& conn : conns) {
    conn.fd = open_pipelined(server.port, target, shape.per_connection);
    if (conn.fd >= 0) out.waiting += shape.per_connection;
  }
  std::this_thread::sleep_until(sent + std::chrono::duration<double>(shape.sample_after_s));
  out.during = resident_by_process(server.process->pid());
  for (const auto& [pid, kb] : out.during) out.titles[pid] = process_title(pid);
  read_answers(conns, shape.per_connection, sent, sent + std::chrono::milliseconds(shape.wait_ms) + kAnswerGrace,
               context, out);
  for (auto& conn : conns)
    if (conn.fd >= 0) ::close(conn.fd);
}

ScenarioOutcome measure_waiting_memory(const ScenarioContext& context, const WaitingShape& shape, WaitingMemory& out,
                                       std::vector<std::string>& notes) {
  allow_descriptors(static_cast<rlim_t>(shape.connections) + 256);
  StartedServer server =
      start_server_reporting(ServerKind::kEdri, "edri", server_settings(context, kWaitingLimits), notes);
  if (server.outcome == StartedServer::Outcome::kInterrupted) return ScenarioOutcome::kInterrupted;
  if (server.outcome != StartedServer::Outcome::kRunning) return ScenarioOutcome::kServerFailed;
  std::fprintf(stderr, "running %d x %d GET /wait/%d at once ...\n", shape.connections, shape.per_connection,
               shape.wait_ms);
  wait_at_once(context, server, shape, out);
  if (context.interrupted()) return ScenarioOutcome::kInterrupted;
  std::fprintf(stderr, "  %d waiting: %llu answered 200, %llu other, last after %.2f s\n", out.waiting,
               static_cast<unsigned long long>(out.ok), static_cast<unsigned long long>(out.other), out.last_answer_s);
  if (out.waiting < shape.total())
    notes.push_back("only " + std::to_string(out.waiting) + " of " + std::to_string(shape.total()) +
                    " requests could be sent");
  if (auto how = server.process->exit_description()) notes.push_back("edri: server " + *how + " while they waited");
  std::fprintf(stderr, "stopping edri ...\n");
  return ScenarioOutcome::kDone;
}

// Bytes per waiting request that `pid`'s resident memory grew by.
std::optional<double> bytes_per_wait(const WaitingMemory& m, pid_t pid) {
  const auto before = m.before.find(pid);
  const auto during = m.during.find(pid);
  if (before == m.before.end() || during == m.during.end() || m.waiting == 0) return std::nullopt;
  return static_cast<double>(during->second - before->second) * 1024.0 / m.waiting;
}

void print_memory_tables(const WaitingMemory& m, const WaitingShape& shape) {
  std::printf(
      "| process | RSS before MB | RSS with %d waiting MB | bytes per waiting request |\n|---|---:|---:|---:|\n",
      m.waiting);
  long before_all = 0, during_all = 0;
  for (const auto& [pid, kb] : m.before) {
    const auto during = m.during.find(pid);
    if (during == m.during.end()) continue;
    before_all += kb;
    during_all += during->second;
    std::printf("| %s | %.1f | %.1f | %.0f |\n", m.titles.at(pid).c_str(), kb / 1024.0, during->second / 1024.0,
                bytes_per_wait(m, pid).value_or(0));
  }
  std::printf("| all | %.1f | %.1f | %.0f |\n\n", before_all / 1024.0, during_all / 1024.0,
              m.waiting > 0 ? static_cast<double>(during_all - before_all) * 1024.0 / m.waiting : 0.0);
  std::printf(
      "| requests | connections x pipelined | GET | RSS read after s | answered 200 | other answers | unanswered | "
      "last answer after s |\n|---:|---|---|---:|---:|---:|---:|---:|\n");
  std::printf("| %d | %d x %d | /wait/%d | %.1f | %llu | %llu | %llu | %.2f |\n", m.waiting, shape.connections,
              shape.per_connection, shape.wait_ms, shape.sample_after_s, static_cast<unsigned long long>(m.ok),
              static_cast<unsigned long long>(m.other),
              static_cast<unsigned long long>(static_cast<std::uint64_t>(m.waiting) - m.ok - m.other), m.last_answer_s);
}

void note_memory_targets(const WaitingMemory& m, std::vector<std::string>& notes) {
  std::optional<double> manager;
  for (const auto& [pid, title] : m.titles)
    if (title.find(kManagerTitle) != std::string::npos) manager = bytes_per_wait(m, pid);
  notes.push_back(
      manager ? "target, at most 2 KB in the manager per waiting request: " + met(*manager <= kBytesPerWaitTarget) +
                    " (" + format("%.0f", *manager) + " bytes)"
              : std::string("target, at most 2 KB per waiting request: no \"") + kManagerTitle + "\" process found");
  notes.push_back(
      "target, every waiting request answered: " + met(m.waiting > 0 && m.ok == static_cast<std::uint64_t>(m.waiting)) +
      " (" + std::to_string(m.ok) + " of " + std::to_string(m.waiting) + " answered 200)");
}

void print_report(const ScenarioContext& context, const std::vector<Row>& wait_rows,
                  const std::vector<int>& wait_concurrencies, const std::vector<Row>& fetch_rows,
                  const std::vector<int>& fetch_concurrencies, const WaitingMemory& memory, const WaitingShape& shape,
                  std::vector<std::string> notes) {
  print_report_header(context,
                      "keep-alive GET " + kWaitTarget + " (a coroutine awaiting a " + std::to_string(kWaitMs) +
                          " ms timer) with GET /noop at c=1 on the same domain alongside; keep-alive GET /fetch (one "
                          "outbound GET of nginx's /noop per request); then " +
                          std::to_string(shape.total()) + " GET /wait/" + std::to_string(shape.wait_ms) +
                          " waiting at once; each run checks its first answer");
  print_wait_table(wait_rows, wait_concurrencies);
  std::printf("\n");
  print_rate_table(fetch_rows, kFetchLines, fetch_concurrencies);
  std::printf("\n");
  print_ratio_table(fetch_rows, {kOverFastApi, kOverNginx}, fetch_concurrencies);
  std::printf("\n");
  print_memory_tables(memory, shape);
  note_wait_target(wait_rows, wait_concurrencies, notes);
  note_fetch_target(fetch_rows, kOverFastApi, kOverFastApiTarget, notes);
  note_fetch_target(fetch_rows, kOverNginx, kOverNginxTarget, notes);
  note_memory_targets(memory, notes);
  notes.push_back(
      "nginx is one worker that is the upstream of every /fetch; proxying, that worker does the proxy's work and "
      "the upstream's");
  print_notes(notes);
}

}  // namespace

ScenarioOutcome run_wait_scenario(const ScenarioContext& context) {
  const std::vector<int>& wait_concurrencies = context.options.concurrencies_or(kWaitConcurrencies);
  const std::vector<int>& fetch_concurrencies = context.options.concurrencies_or(kDefaultConcurrencies);
  const WaitingShape& shape = context.options.quick ? kQuickShape : kFullShape;
  std::vector<Row> wait_rows, fetch_rows;
  WaitingMemory memory;
  std::vector<std::string> notes;
  ScenarioOutcome worst = ScenarioOutcome::kDone;
  const auto keep = [&](ScenarioOutcome outcome) {
    if (outcome == ScenarioOutcome::kServerFailed) worst = outcome;
    return outcome != ScenarioOutcome::kInterrupted && !context.interrupted();
  };
  if (!keep(measure_waits(context, wait_concurrencies, wait_rows, notes)) ||
      !keep(measure_fetches(context, fetch_concurrencies, fetch_rows, notes)) ||
      !keep(measure_waiting_memory(context, shape, memory, notes)))
    return ScenarioOutcome::kInterrupted;
  print_report(context, wait_rows, wait_concurrencies, fetch_rows, fetch_concurrencies, memory, shape,
               std::move(notes));
  return worst;
}

}  // namespace edri::bench
