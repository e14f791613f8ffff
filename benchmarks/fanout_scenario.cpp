// fanout: live streams pushed to many WebSocket subscribers (streams.md),
// edri beside a Node.js `ws` server with the same wire protocol and no
// coalescing (reference/streams_node) and any server `--reference-command`
// starts (the same protocol), the shapes of the published
// benchmark the issue quotes:
//
//   clients x streams   every client subscribes to every stream; the
//                       server publishes 50 updates to each stream, one
//                       round every 2 ms (POST /stream-burst, so no HTTP
//                       client's pace is measured), and the fleet is
//                       complete when every client holds the last
//                       revision of every stream
//   budgets (1,000 x 10) RSS per idle session, idle CPU, CPU per fan-out
//                       of one revision to 1,000 subscribers, threads
//   tenants             1,000 clients, each with 2 private streams and 5
//                       shared by all: bursts on the shared, the private,
//                       and both
//
// The fleet is bench's own: one thread, one epoll, every connection
// non-blocking; a frame is read for its stream, revisions and ts without
// a JSON parser (the servers write the members in one order), so the
// client costs little next to the servers on a shared machine.
#include <netinet/in.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include <boost/beast/zlib/inflate_stream.hpp>
#include <nlohmann/json.hpp>

#include "children_cpu_time.hpp"
#include "report.hpp"
#include "scenario_support.hpp"
#include "scenarios.hpp"
#include "websocket_frame.hpp"
#include "websocket_sessions.hpp"

namespace edri::bench {
namespace {

using Clock = std::chrono::steady_clock;

std::int64_t realtime_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The unsigned number after `key` in `text` from `from`, or -1.
long long number_after(std::string_view text, std::string_view key, std::size_t from = 0) {
  const auto at = text.find(key, from);
  if (at == std::string_view::npos) return -1;
  long long v = -1;
  const char* begin = text.data() + at + key.size();
  std::from_chars(begin, text.data() + text.size(), v);
  return v;
}

// One POST on a fresh connection, blocking; the status, 0 when it failed.
int post_json(std::uint16_t port, const std::string& path, const std::string& body, double timeout_s) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int status = 0;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
    const std::string req = "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" +
                            "Content-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
    if (::send(fd, req.data(), req.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(req.size())) {
      std::string in;
      char buf[4096];
      const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_s);
      while (in.find("\r\n") == std::string::npos && Clock::now() < deadline) {
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, 100) <= 0) continue;
        const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n <= 0) break;
        in.append(buf, static_cast<std::size_t>(n));
      }
      if (in.rfind("HTTP/1.", 0) == 0 && in.size() > 12) status = std::atoi(in.c_str() + 9);
    }
  }
  ::close(fd);
  return status;
}

std::string burst_body(const std::vector<std::string>& streams, int updates, int interval_ms) {
  return nlohmann::json{{"streams", streams}, {"updates", updates}, {"interval_ms", interval_ms}, {"fields", 5}}.dump();
}

// Many WebSocket clients, each following some streams.
class Fleet {
 public:
  ~Fleet() {
    for (auto& c : clients_) ::close(c.fd);
    if (epoll_ >= 0) ::close(epoll_);
  }

  // `deflate`: offer permessage-deflate (with server_no_context_takeover,
  // so one inflater serves every connection).
  bool open(std::uint16_t port, int n, const ScenarioContext& context, bool deflate = false) {
    epoll_ = ::epoll_create1(EPOLL_CLOEXEC);
    for (int fd : open_sessions(port, n, context, deflate)) {
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.u32 = static_cast<std::uint32_t>(clients_.size());
      ::epoll_ctl(epoll_, EPOLL_CTL_ADD, fd, &ev);
      clients_.push_back(Client{fd, {}, {}});
    }
    return static_cast<int>(clients_.size()) == n;
  }

  // Client `i` subscribes to `names`; its revisions start unknown.
  void subscribe(std::size_t i, const std::vector<std::string>& names) {
    std::string frames;
    for (const auto& name : names) {
      auto [it, fresh] = index_.try_emplace(name, static_cast<int>(index_.size()));
      clients_[i].held.push_back(Held{it->second, kNone});
      frames += masked_text_frame(R"({"command":"stream.subscribe","stream":")" + name + "\"}");
    }
    std::size_t off = 0;
    while (off < frames.size()) {
      const ssize_t n = ::send(clients_[i].fd, frames.data() + off, frames.size() - off, MSG_NOSIGNAL);
      if (n <= 0) break;
      off += static_cast<std::size_t>(n);
    }
  }
  std::size_t size() const { return clients_.size(); }

  // Reads until every client holds revision `target` of every stream it
  // follows (a snapshot is revision 0 of a fresh stream), or the deadline.
  bool run_until(std::uint64_t target, Clock::time_point deadline) {
    targets_.assign(index_.size(), target);
    return run(deadline);
  }
  // The same for `streams` only, each `more` revisions past where the
  // fleet holds it now.
  bool run_until_more(const std::vector<std::string>& streams, std::uint64_t more, Clock::time_point deadline) {
    targets_.assign(index_.size(), kNone);
    for (const auto& c : clients_)
      for (const auto& h : c.held) targets_[h.stream] = h.revision;  // all clients are current here
    std::vector<std::uint64_t> only(index_.size(), kNone);
    for (const auto& name : streams)
      if (const auto it = index_.find(name); it != index_.end()) only[it->second] = targets_[it->second] + more;
    targets_ = std::move(only);
    return run(deadline);
  }

 private:
  bool run(Clock::time_point deadline) {
    pending_ = 0;
    for (const auto& c : clients_)
      for (const auto& h : c.held) pending_ += targets_[h.stream] != kNone && h.revision != targets_[h.stream] ? 1 : 0;
    epoll_event events[256];
    while (pending_ > 0 && Clock::now() < deadline) {
      const int n = ::epoll_wait(epoll_, events, 256, 50);
      for (int i = 0; i < n; ++i) read_client(clients_[events[i].data.u32]);
    }
    return pending_ == 0;
  }

 public:
  void reset_counts() {
    patch_frames_ = 0;
    gaps_ = 0;
    latency_us_.clear();
  }
  std::uint64_t patch_frames() const { return patch_frames_; }
  std::uint64_t gaps() const { return gaps_; }
  std::uint64_t subscriptions() const {
    std::uint64_t n = 0;
    for (const auto& c : clients_) n += c.held.size();
    return n;
  }
  // Delivery latency percentile `q` (0..1) in ms, of the patch frames read.
  double latency_ms(double q) {
    if (latency_us_.empty()) return 0;
    std::sort(latency_us_.begin(), latency_us_.end());
    const auto at = std::min(latency_us_.size() - 1, static_cast<std::size_t>(q * latency_us_.size()));
    return latency_us_[at] / 1000.0;
  }

 private:
  static constexpr std::uint64_t kNone = UINT64_MAX;
  struct Held {
    int stream;
    std::uint64_t revision;
  };
  struct Client {
    int fd;
    std::string in;
    std::vector<Held> held;
  };

  void read_client(Client& c) {
    char buf[65536];
    for (;;) {
      const ssize_t n = ::recv(c.fd, buf, sizeof buf, MSG_DONTWAIT);
      if (n <= 0) break;
      c.in.append(buf, static_cast<std::size_t>(n));
      if (n < static_cast<ssize_t>(sizeof buf)) break;
    }
    std::size_t off = 0;
    const std::int64_t now = realtime_us();
    for (;;) {
      const auto f = parse_server_frame(std::string_view(c.in).substr(off));
      if (f.state != ParsedFrame::State::kComplete) break;
      const std::string_view payload =
          std::string_view(c.in).substr(off + f.payload_offset, f.total_size - f.payload_offset);
      const bool compressed = (static_cast<unsigned char>(c.in[off]) & 0x40) != 0;  // RSV1
      if (f.opcode == 1) on_frame(c, compressed ? inflate(payload) : payload, now);
      off += f.total_size;
    }
    c.in.erase(0, off);
  }

  // A permessage-deflate payload back to its text (RFC 7692 7.2.2).
  std::string_view inflate(std::string_view payload) {
    namespace zlib = boost::beast::zlib;
    compressed_.assign(payload);
    compressed_.append("\0\0\xff\xff", 4);
    inflater_.reset(15);
    inflated_.resize(std::max<std::size_t>(inflated_.size(), 1 << 20));
    zlib::z_params zs;
    zs.next_in = compressed_.data();
    zs.avail_in = compressed_.size();
    zs.next_out = inflated_.data();
    zs.avail_out = inflated_.size();
    boost::beast::error_code ec;
    inflater_.write(zs, zlib::Flush::sync, ec);
    return std::string_view(inflated_.data(), zs.total_out);
  }

  void on_frame(Client& c, std::string_view text, std::int64_t now) {
    constexpr std::string_view kStream = R"({"stream":")";
    if (text.substr(0, kStream.size()) != kStream) return;
    const auto end = text.find('"', kStream.size());
    if (end == std::string_view::npos) return;
    const auto it = index_.find(std::string(text.substr(kStream.size(), end - kStream.size())));
    if (it == index_.end()) return;
    Held* h = nullptr;
    for (auto& x : c.held)
      if (x.stream == it->second) h = &x;
    if (!h) return;
    const bool patch = text.substr(end + 1, 8) == R"(,"from":)";
    const long long revision = number_after(text, R"("revision":)", end);
    if (revision < 0) return;
    const std::uint64_t target = targets_[h->stream];
    const bool was = target != kNone && h->revision == target;
    if (patch) {
      ++patch_frames_;
      if (static_cast<std::uint64_t>(number_after(text, R"("from":)", end)) != h->revision) ++gaps_;
      const auto ts_at = text.rfind(R"("ts":)");
      long long ts = 0;
      if (ts_at != std::string_view::npos) std::from_chars(text.data() + ts_at + 5, text.data() + text.size(), ts);
      if (ts > 0) latency_us_.push_back(static_cast<double>(now - ts));
    }
    h->revision = static_cast<std::uint64_t>(revision);
    const bool is = target != kNone && h->revision == target;
    if (is && !was) --pending_;
    if (was && !is) ++pending_;
  }

  int epoll_ = -1;
  std::vector<Client> clients_;
  std::unordered_map<std::string, int> index_;
  std::vector<std::uint64_t> targets_;  // by stream: the revision awaited, or kNone
  std::size_t pending_ = 0;
  std::uint64_t patch_frames_ = 0, gaps_ = 0;
  std::vector<double> latency_us_;
  boost::beast::zlib::inflate_stream inflater_;
  std::string compressed_, inflated_;
};

// The server's processes: edri's supervisor and children, or the one
// reference process.
std::vector<pid_t> server_pids(const StartedServer& s) {
  std::vector<pid_t> pids{s.process->pid()};
  if (const auto kids = children_cpu_time(s.process->pid()))
    pids.insert(pids.end(), kids->pids.begin(), kids->pids.end());
  return pids;
}
std::uint64_t cpu_ns(const std::vector<pid_t>& pids) {
  std::uint64_t t = 0;
  for (pid_t p : pids) t += process_cpu_ns(p);
  return t;
}
long rss_kb(const std::vector<pid_t>& pids) {
  long kb = 0;
  for (pid_t p : pids) kb += resident_kb(p).value_or(0);
  return kb;
}
int threads(const std::vector<pid_t>& pids) {
  int n = 0;
  for (pid_t p : pids) n += threads_of(p);
  return n;
}

struct BurstResult {
  bool complete = false;
  double cpu_ms = 0, completion_ms = 0, p50 = 0, p95 = 0, p99 = 0, max = 0, cpu_percent = 0, frames_percent = 0;
  long rss_kb = 0;
  std::uint64_t gaps = 0;
};

// Publishes `updates` rounds to `streams` inside the server and reads
// until every client is current.
BurstResult burst(Fleet& fleet, const StartedServer& server, const std::vector<std::string>& streams, int updates,
                  int interval_ms, std::uint64_t followers_per_update) {
  const auto pids = server_pids(server);
  fleet.reset_counts();
  const std::uint64_t cpu0 = cpu_ns(pids);
  const auto t0 = Clock::now();
  std::thread publisher(
      [&] { post_json(server.port, "/stream-burst", burst_body(streams, updates, interval_ms), 60); });
  BurstResult r;
  r.complete = fleet.run_until_more(streams, static_cast<std::uint64_t>(updates), t0 + std::chrono::seconds(60));
  r.completion_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  publisher.join();
  const double wall_ns = std::chrono::duration<double, std::nano>(Clock::now() - t0).count();
  r.cpu_ms = static_cast<double>(cpu_ns(pids) - cpu0) / 1e6;
  r.cpu_percent = 100.0 * static_cast<double>(cpu_ns(pids) - cpu0) / wall_ns;
  r.rss_kb = rss_kb(pids);
  r.p50 = fleet.latency_ms(0.50);
  r.p95 = fleet.latency_ms(0.95);
  r.p99 = fleet.latency_ms(0.99);
  r.max = fleet.latency_ms(1.0);
  r.frames_percent = 100.0 * static_cast<double>(fleet.patch_frames()) /
                     static_cast<double>(std::max<std::uint64_t>(1, followers_per_update * updates));
  r.gaps = fleet.gaps();
  return r;
}

struct Shape {
  int clients, streams;
  bool deflate = false;
};

// permessage-deflate on, for both servers (each reads its own variable).
const EnvironmentVariables kDeflateEnv{{"EDRI_WEBSOCKET_DEFLATE", "1"}, {"DEFLATE", "1"}};

std::vector<std::string> names(const std::string& prefix, int n) {
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) out.push_back(prefix + std::to_string(i));
  return out;
}

// Every client follows every one of `streams`.
bool connect_fleet(Fleet& fleet, const StartedServer& server, int clients, const std::vector<std::string>& streams,
                   const ScenarioContext& context, bool deflate = false) {
  if (!fleet.open(server.port, clients, context, deflate)) return false;
  for (std::size_t i = 0; i < fleet.size(); ++i) fleet.subscribe(i, streams);
  return fleet.run_until(0, Clock::now() + std::chrono::seconds(30));
}

// Every server answers GET /stream/{name}; the Node one has no /noop.
ServerSettings fanout_settings(const ScenarioContext& context, bool deflate = false) {
  auto settings = server_settings(context, deflate ? kDeflateEnv : EnvironmentVariables{});
  settings.ready_path = "/stream/ready";
  settings.command = context.options.reference_command;
  return settings;
}

// The servers measured side by side, by their names in the tables: edri,
// the Node one, and the user's (--reference-command) where given.
struct FanoutServer {
  ServerKind kind;
  std::string name;
};
std::vector<FanoutServer> fanout_servers(const ScenarioContext& context) {
  std::vector<FanoutServer> servers{{ServerKind::kEdri, std::string(display_name(ServerKind::kEdri))},
                                    {ServerKind::kNodeStreams, std::string(display_name(ServerKind::kNodeStreams))}};
  if (!context.options.reference_command.empty())
    servers.push_back({ServerKind::kCommand, context.options.reference_name});
  return servers;
}

std::string cell(double v, const char* format = "%.1f") {
  char buf[32];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

void print_burst_row(const std::string& server, const std::string& shape, std::uint64_t subs, const BurstResult& r) {
  std::printf("| %s | %s | %llu | %s | %s / %s / %s / %s | %s | %.1f | %s |\n", server.c_str(), shape.c_str(),
              static_cast<unsigned long long>(subs), r.complete ? cell(r.completion_ms, "%.0f").c_str() : "incomplete",
              cell(r.p50).c_str(), cell(r.p95).c_str(), cell(r.p99).c_str(), cell(r.max).c_str(),
              cell(r.cpu_percent, "%.0f").c_str(), r.rss_kb / 1024.0, cell(r.frames_percent, "%.0f").c_str());
}

void shapes_table(const ScenarioContext& context, std::vector<std::string>& notes) {
  const bool quick = context.options.quick;
  const std::vector<Shape> shapes =
      quick ? std::vector<Shape>{{10, 1}, {100, 10}, {100, 10, true}}
            : std::vector<Shape>{{10, 1}, {100, 10}, {250, 20}, {1000, 10}, {1000, 10, true}};
  const int runs = quick ? 1 : std::max(3, context.options.runs);
  std::printf(
      "| server | clients x streams | subscriptions | fleet completion ms (median of %d) | delivery p50 / p95 / "
      "p99 / max ms | server CPU %% | RSS MB | revisions as frames %% |\n|---|---|---:|---:|---:|---:|---:|---:|\n",
      runs);
  for (const auto& shape : shapes) {
    for (const auto& [kind, name] : fanout_servers(context)) {
      const std::string label =
          std::to_string(shape.clients) + " x " + std::to_string(shape.streams) + (shape.deflate ? ", deflate" : "");
      std::vector<BurstResult> results;
      std::string unavailable;
      for (int run = 0; run < runs && unavailable.empty() && !context.interrupted(); ++run) {
        StartedServer server = start_server_reporting(kind, name, fanout_settings(context, shape.deflate), notes);
        if (server.outcome != StartedServer::Outcome::kRunning) {
          unavailable = unavailable_cell(server);
          break;
        }
        Fleet fleet;
        const auto streams = names("fan." + std::to_string(run) + ".", shape.streams);
        if (!connect_fleet(fleet, server, shape.clients, streams, context, shape.deflate)) {
          notes.push_back(name + " " + label + ": the fleet did not get its snapshots");
          unavailable = "no snapshots";
          break;
        }
        std::fprintf(stderr, "%s %s: burst %d of %d\n", name.c_str(), label.c_str(), run + 1, runs);
        results.push_back(burst(fleet, server, streams, 50, 2, fleet.subscriptions()));
        if (results.back().gaps) notes.push_back(name + " " + label + ": frames not contiguous");
      }
      if (results.empty()) {
        std::printf("| %s | %s | | %s | | | | |\n", name.c_str(), label.c_str(), unavailable.c_str());
        continue;
      }
      std::sort(results.begin(), results.end(),
                [](const BurstResult& a, const BurstResult& b) { return a.completion_ms < b.completion_ms; });
      print_burst_row(name, label, static_cast<std::uint64_t>(shape.clients) * shape.streams,
                      results[results.size() / 2]);
    }
  }
  std::printf("\n");
}

void budgets_table(const ScenarioContext& context, std::vector<std::string>& notes) {
  const bool quick = context.options.quick;
  const int clients = quick ? 200 : 1000, fanouts = quick ? 100 : 500;
  const double idle_s = quick ? 1.0 : 2.0;
  std::printf(
      "| server | sessions x streams | RSS per idle session KB | idle CPU %% | CPU per fan-out to %d subscribers ms | "
      "threads before / after |\n|---|---|---:|---:|---:|---:|\n",
      clients);
  for (const bool deflate : {false, true})
    for (const auto& server_named : fanout_servers(context)) {
      const ServerKind kind = server_named.kind;
      const std::string name = server_named.name + (deflate ? ", deflate" : "");
      StartedServer server = start_server_reporting(kind, name, fanout_settings(context, deflate), notes);
      if (server.outcome != StartedServer::Outcome::kRunning) {
        std::printf("| %s | | %s | | | |\n", name.c_str(), unavailable_cell(server).c_str());
        continue;
      }
      // Settled: one publish, one session opened and closed.
      post_json(server.port, "/stream/budget.warm", "{}", 5);
      for (int fd : open_sessions(server.port, 1, context)) ::close(fd);
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      const auto pids = server_pids(server);
      const long rss0 = rss_kb(pids);
      const int threads0 = threads(pids);
      Fleet fleet;
      const auto streams = names("budget.", 10);
      if (!connect_fleet(fleet, server, clients, streams, context, deflate)) {
        std::printf("| %s | | no snapshots | | | |\n", name.c_str());
        continue;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      const long rss1 = rss_kb(pids);
      const int threads1 = threads(pids);
      const std::uint64_t idle0 = cpu_ns(pids);
      std::this_thread::sleep_for(std::chrono::duration<double>(idle_s));
      const double idle_percent = 100.0 * static_cast<double>(cpu_ns(pids) - idle0) / (idle_s * 1e9);
      // One stream every session follows, `fanouts` revisions 1 ms apart.
      const auto r = burst(fleet, server, {streams[0]}, fanouts, 1, fleet.size());
      std::printf("| %s | %d x 10 | %.1f | %.2f | %s | %d / %d |\n", name.c_str(), clients,
                  static_cast<double>(rss1 - rss0) / clients, idle_percent,
                  r.complete ? cell(r.cpu_ms / fanouts, "%.3f").c_str() : "incomplete", threads0, threads1);
    }
  std::printf("\n");
}

void tenants_table(const ScenarioContext& context, std::vector<std::string>& notes) {
  const bool quick = context.options.quick;
  const int clients = quick ? 100 : 1000, updates = quick ? 10 : 50;
  std::printf(
      "| server | burst on | streams | fleet completion ms | delivery p50 / p95 / p99 / max ms | server CPU %% | RSS "
      "MB "
      "| revisions as frames %% |\n|---|---|---:|---:|---:|---:|---:|---:|\n");
  for (const auto& [kind, name] : fanout_servers(context)) {
    StartedServer server = start_server_reporting(kind, name, fanout_settings(context), notes);
    if (server.outcome != StartedServer::Outcome::kRunning) {
      std::printf("| %s | | | %s | | | | |\n", name.c_str(), unavailable_cell(server).c_str());
      continue;
    }
    Fleet fleet;
    if (!fleet.open(server.port, clients, context)) {
      std::printf("| %s | | | sessions did not open | | | | |\n", name.c_str());
      continue;
    }
    const auto shared = names("shared.", 5);
    std::vector<std::string> privates;
    for (std::size_t i = 0; i < fleet.size(); ++i) {
      auto own = names("t" + std::to_string(i) + ".p", 2);
      privates.insert(privates.end(), own.begin(), own.end());
      own.insert(own.end(), shared.begin(), shared.end());
      fleet.subscribe(i, own);
    }
    if (!fleet.run_until(0, Clock::now() + std::chrono::seconds(30))) {
      std::printf("| %s | | | no snapshots | | | | |\n", name.c_str());
      continue;
    }
    // Each burst is awaited on its own streams only (Fleet::run_until_more).
    struct Mode {
      const char* label;
      std::vector<std::string> streams;
      std::uint64_t followers;
    };
    std::vector<std::string> mixed = shared;
    mixed.insert(mixed.end(), privates.begin(), privates.end());
    const std::uint64_t n = fleet.size();
    const Mode modes[] = {{"shared only", shared, n * shared.size()},
                          {"private only", privates, privates.size()},
                          {"mixed", mixed, n * shared.size() + privates.size()}};
    for (const auto& m : modes) {
      std::fprintf(stderr, "%s tenants: %s\n", name.c_str(), m.label);
      const auto r = burst(fleet, server, m.streams, updates, 2, m.followers);
      print_burst_row(name, m.label, m.streams.size(), r);
    }
  }
  std::printf("\n");
}

}  // namespace

ScenarioOutcome run_fanout_scenario(const ScenarioContext& context) {
  std::vector<std::string> notes;
  print_report_header(
      context,
      "live streams: WebSocket clients subscribe, the server publishes 50 rounds of one patch per "
      "stream 2 ms apart (POST /stream-burst); edri beside a Node.js ws server with the same wire "
      "protocol and no coalescing" +
          (context.options.reference_command.empty()
               ? std::string()
               : ", and " + context.options.reference_name + ": `" + context.options.reference_command + "`"),
      false);
  shapes_table(context, notes);
  if (context.interrupted()) return ScenarioOutcome::kInterrupted;
  budgets_table(context, notes);
  if (context.interrupted()) return ScenarioOutcome::kInterrupted;
  tenants_table(context, notes);
  if (context.interrupted()) return ScenarioOutcome::kInterrupted;
  notes.push_back(
      "fleet completion: from the burst's POST until every client holds the last revision of every "
      "stream; delivery: receipt time minus the revision's ts, over the patch frames read");
  notes.push_back(
      "deflate: permessage-deflate offered by the clients with server_no_context_takeover; edri "
      "with EDRI_WEBSOCKET_DEFLATE=1, Node ws with perMessageDeflate");
  print_notes(notes);
  return ScenarioOutcome::kDone;
}

}  // namespace edri::bench
