// The pipeline end to end: a request crosses listener -> broker -> router ->
// manager and back, in separate single-threaded processes, and nothing is
// left behind when the server stops.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "support/http_client.hpp"
#include "support/server_process.hpp"
#include "support/test_helpers.hpp"

using namespace edri::test;

namespace {
// Kills `manager` and returns how many requests the router says it had
// taken and answered 503 ("" when it says nothing).
std::string taken_by_killed_manager(ServerProcess& server, const std::string& manager = "manager test") {
  if (::kill(server.child(manager), SIGKILL) != 0) return "kill failed";
  std::smatch m;
  std::string log;
  const std::regex died(R"(died: (\d+) requests it had taken answered 503)");
  if (!eventually([&] {
        log = server.log();
        return std::regex_search(log, m, died);
      }))
    return "";
  return m[1].str();
}

// GET `path` of test_app, whose handler asks manager "other" (/ask,
// /ask-sleep/{ms}): the status that manager's answer had, -1 if none.
int asked_status(HttpClient& c, const std::string& path) {
  const auto r = c.get(path);
  if (r.status != 200) return -1;
  return nlohmann::json::parse(r.body).at("status").get<int>();
}

// Stops the router and sends 3,000 requests one after another
// (`request(client, i)`: whether the i-th was answered as it should be).
// Answers come until a request's notice cannot enter the router's ring:
// that request waits behind it, for the router, which then goes on; every
// request is answered as it should be.
void run_with_router_stopped(ServerProcess& server, const std::function<bool(HttpClient&, int)>& request) {
  const pid_t router = server.child("router");
  REQUIRE(::kill(router, SIGSTOP) == 0);
  constexpr int kRequests = 3000;
  std::atomic<int> answered{0};
  std::atomic<int> ok{0};
  auto client = std::async(std::launch::async, [&] {
    HttpClient c(server.port(), 20000);
    for (int i = 0; i < kRequests; ++i) {
      ok += request(c, i);
      ++answered;
    }
  });
  int seen = -1;
  while (seen != answered.load()) {
    seen = answered.load();
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  INFO(seen << " answered with the router stopped");
  CHECK(seen > 500);
  CHECK(seen < kRequests);
  REQUIRE(::kill(router, SIGCONT) == 0);
  client.get();
  CHECK(ok.load() == kRequests);
}
}  // namespace

TEST_CASE("a request is answered by the pipeline's processes, one thread each, its hops in Server-Timing",
          "[pipeline]") {
  ServerProcess server({plugin_path("bench_app")}, {{"EDRI_SERVER_TIMING", "1"}});
  const auto r = http_get(server.port(), "/noop");
  CHECK(r.status == 200);
  CHECK(r.header("content-type") == "application/json");
  CHECK(r.body == R"({"ok":true})");
  // Each hop stamped the envelope on its way.
  const auto timing = r.header("server-timing");
  for (const char* hop : {"broker;dur=", "router;dur=", "manager;dur=", "handler;dur=", "total;dur="})
    CHECK(timing.find(hop) != std::string::npos);

  const auto kids = server.children();
  std::set<std::string> roles;
  std::set<pid_t> pids;
  for (const auto& k : kids) {
    roles.insert(k.cmdline.substr(0, k.cmdline.find(" --child")));
    pids.insert(k.pid);
    INFO(k.cmdline);
    CHECK(thread_count(k.pid) == 1);
  }
  CHECK(roles == std::set<std::string>{"edri-server: listener", "edri-server: broker", "edri-server: router",
                                       "edri-server: manager bench", "edri-server: manager pong"});
  CHECK(pids.size() == 5);
  CHECK(thread_count(server.pid()) == 1);
}

TEST_CASE("answers go from the manager straight to the listener while the broker and router still keep their books",
          "[pipeline]") {
  ServerProcess server({test_plugin_path("test_app")}, {{"EDRI_API_RESPONSE_TIMEOUT", "0.5"}});
  CHECK(http_get(server.port(), "/metrics").body.find(R"(from="manager test",to="listener")") != std::string::npos);
  HttpClient c(server.port());
  // The broker hears of each answer from the listener, without a wake-up,
  // and reads that before it calls anything late: no 504 for a request
  // alone in its deadline's window, nothing else waking the broker.
  for (int i = 0; i < 50; ++i) REQUIRE(c.get("/hello/n" + std::to_string(i)).status == 200);
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  REQUIRE(c.get("/hello/alone").status == 200);
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  CHECK(server.log().find("got no answer in time") == std::string::npos);
  // The router heard from the manager: with the manager killed, none of the
  // 50 counts as taken and unanswered.
  CHECK(taken_by_killed_manager(server) == "0");
  CHECK(eventually([&] { return http_get(server.port(), "/hello/again").status == 200; }));
}

TEST_CASE("a client's request goes straight to the router: the broker is not woken for it, yet keeps its deadline",
          "[pipeline][alone]") {
  // Replicas: the router balances them, so requests go to the router (0026).
  ServerProcess server({test_plugin_path("test_app")},
                       {{"EDRI_API_RESPONSE_TIMEOUT", "0.6"}, {"EDRI_MANAGER_REPLICAS", "2"}});
  HttpClient c(server.port(), 10000);
  REQUIRE(c.get("/hello/warm").status == 200);
  const pid_t broker = server.child("broker");
  const long before = sleeps(broker);
  REQUIRE(before >= 0);
  constexpr int kRequests = 300;
  for (int i = 0; i < kRequests; ++i) REQUIRE(c.get("/hello/n" + std::to_string(i)).status == 200);
  // Through the broker each request woke it; now it wakes to read the
  // listener's notices: every 0.3 s, and per 64 KiB of them.
  const long woken = sleeps(broker) - before;
  INFO("broker woken " << woken << " times for " << kRequests << " requests");
  CHECK(woken < kRequests / 5);
  // It knew of each: none of them is called late, and a handler that
  // outlives the timeout is answered 504 by the broker at its deadline.
  const auto start = std::chrono::steady_clock::now();
  const auto r = c.get("/sleep/1200");
  const auto waited = std::chrono::steady_clock::now() - start;
  CHECK(r.status == 504);
  CHECK(waited >= std::chrono::milliseconds(550));
  CHECK(waited < std::chrono::milliseconds(1500));
  CHECK(server.log().find("got no answer in time: 504") != std::string::npos);
  // The handler's own answer comes later and is dropped: one 504 only.
  std::this_thread::sleep_for(std::chrono::milliseconds(900));
  const auto log = server.log();
  std::size_t late = 0;
  for (auto at = log.find("got no answer in time"); at != std::string::npos;
       at = log.find("got no answer in time", at + 1))
    ++late;
  CHECK(late == 1);
}

TEST_CASE(
    "a client's request goes straight to its manager: neither broker nor router is woken for it, yet the router "
    "answers it should the manager die with it",
    "[pipeline][alone]") {
  ServerProcess server({test_plugin_path("test_app")});
  HttpClient c(server.port(), 10000);
  REQUIRE(c.get("/hello/warm").status == 200);
  const pid_t broker = server.child("broker");
  const pid_t router = server.child("router");
  const long broker_before = sleeps(broker);
  const long router_before = sleeps(router);
  REQUIRE(broker_before >= 0);
  REQUIRE(router_before >= 0);
  constexpr int kRequests = 300;
  for (int i = 0; i < kRequests; ++i) REQUIRE(c.get("/hello/n" + std::to_string(i)).status == 200);
  // Through the router each request woke it; now it reads the listener's
  // notices when something else wakes it, or per 64 KiB of them.
  const long router_woken = sleeps(router) - router_before;
  const long broker_woken = sleeps(broker) - broker_before;
  INFO("router woken " << router_woken << ", broker " << broker_woken << " times for " << kRequests << " requests");
  CHECK(router_woken < kRequests / 5);
  CHECK(broker_woken < kRequests / 5);
  // The router knew of each, and of each answer: a manager killed with one
  // request in its hands has exactly that one answered 503, at once.
  const pid_t manager = server.child("manager test");
  auto lost = std::async(std::launch::async, [&] { return HttpClient(server.port(), 10000).get("/sleep/3000"); });
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  const auto killed_at = std::chrono::steady_clock::now();
  REQUIRE(::kill(manager, SIGKILL) == 0);
  const auto r = lost.get();
  CHECK(r.status == 503);
  CHECK(r.body.find("stopped; it is being restarted") != std::string::npos);
  CHECK(std::chrono::steady_clock::now() - killed_at < std::chrono::milliseconds(2000));
  CHECK(
      eventually([&] { return server.log().find("died: 1 requests it had taken answered 503") != std::string::npos; }));
  CHECK(eventually([&] { return c.get("/hello/again").status == 200; }));
}

TEST_CASE(
    "with the router stopped requests still go straight to their manager, one whose notice must wait goes "
    "behind it, and the router's books come out exact",
    "[pipeline][alone]") {
  // A small ring: the stopped router's fills with notices within ~1,300
  // requests.
  ServerProcess server({test_plugin_path("test_app")},
                       {{"EDRI_RING_BYTES", "262144"}, {"EDRI_WEBSOCKET_MAX_MESSAGE", "16384"}});
  HttpClient warm(server.port());
  REQUIRE(warm.get("/hello/warm").status == 200);
  run_with_router_stopped(server,
                          [](HttpClient& c, int i) { return c.get("/hello/n" + std::to_string(i)).status == 200; });
  // Every notice the router read late met its answer: a manager killed
  // now had nothing the router counts as taken.
  CHECK(taken_by_killed_manager(server) == "0");
}

TEST_CASE(
    "a handler's request goes straight to the manager that handles it: the router is not woken for it, yet answers "
    "it should that manager die with it, and leaves what it never took to its successor",
    "[pipeline][alone]") {
  TempDir dir;
  ServerProcess server({test_plugin_path("test_app")}, {{"TEST_APP_FILES", dir.path.string()}});
  HttpClient c(server.port(), 10000);
  REQUIRE(asked_status(c, "/ask") == 200);
  const pid_t router = server.child("router");
  const long before = sleeps(router);
  REQUIRE(before >= 0);
  // Client -> manager test -> manager other and back: every hop straight.
  constexpr int kRequests = 300;
  for (int i = 0; i < kRequests; ++i) REQUIRE(asked_status(c, "/ask") == 200);
  const long woken = sleeps(router) - before;
  INFO("router woken " << woken << " times for " << kRequests << " requests");
  CHECK(woken < kRequests / 5);
  // The router knew of each and of its answer, though it read many answers
  // before their notices: killed with one request in its hands, manager
  // other had exactly that one taken, answered 503 to manager test at once;
  // the one queued behind it went to its successor.
  auto taken = std::async(std::launch::async, [&] { return HttpClient(server.port(), 10000).get("/ask-sleep/3000"); });
  REQUIRE(eventually([&] { return std::filesystem::exists(dir.path / "sleeping-3000"); }));
  auto queued = std::async(std::launch::async, [&] { return HttpClient(server.port(), 10000).get("/ask-sleep/1"); });
  // It waits in the ring, unread, while manager other sleeps.
  const std::regex waiting(R"(edri_channel_depth_bytes\{from="manager test",to="manager other"\} [1-9])");
  REQUIRE(eventually([&] { return std::regex_search(http_get(server.port(), "/metrics").body, waiting); }));
  const auto killed_at = std::chrono::steady_clock::now();
  REQUIRE(::kill(server.child("manager other"), SIGKILL) == 0);
  const auto lost = taken.get();
  REQUIRE(lost.status == 200);
  const auto answer = nlohmann::json::parse(lost.body);
  CHECK(answer.at("status") == 503);
  CHECK(answer.at("body").get<std::string>().find("stopped; it is being restarted") != std::string::npos);
  CHECK(std::chrono::steady_clock::now() - killed_at < std::chrono::milliseconds(2000));
  const auto successor = queued.get();
  REQUIRE(successor.status == 200);
  CHECK(nlohmann::json::parse(successor.body).at("status") == 200);
  const bool counted = eventually([&] {
    return server.log().find(
               "died: 1 requests it had taken answered 503, 0 handed to its successor again, 1 it never "
               "took left for it") != std::string::npos;
  });
  // What the router said instead, should it differ (CI saw it differ once).
  const auto log = server.log();
  const auto said = log.find("died:");
  INFO("the router said: " << (said == std::string::npos ? "nothing" : log.substr(said, log.find('\n', said) - said)));
  CHECK(counted);
  CHECK(asked_status(c, "/ask") == 200);
}

TEST_CASE(
    "with the router stopped a handler's requests still go straight, one whose notice must wait goes behind it, and "
    "the router's books come out exact",
    "[pipeline][alone]") {
  ServerProcess server({test_plugin_path("test_app")},
                       {{"EDRI_RING_BYTES", "262144"}, {"EDRI_WEBSOCKET_MAX_MESSAGE", "16384"}});
  HttpClient warm(server.port());
  REQUIRE(asked_status(warm, "/ask") == 200);
  // The listener's notices and manager test's fill the stopped router's
  // rings alike: whichever is full first, its next request waits.
  run_with_router_stopped(server, [](HttpClient& c, int) { return asked_status(c, "/ask") == 200; });
  CHECK(taken_by_killed_manager(server, "manager other") == "0");
}

namespace {
// CPU time (user + system) of `pid` so far, in clock ticks.
long cpu_ticks(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::istringstream fields(stat.substr(stat.rfind(')') + 2));
  std::string skip;
  for (int i = 0; i < 11; ++i) fields >> skip;  // state .. cmajflt
  long utime = 0, stime = 0;
  fields >> utime >> stime;
  return utime + stime;
}
}  // namespace

TEST_CASE("the start-up log and /health say how the processes are placed", "[pipeline]") {
  ServerProcess server({plugin_path("bench_app")}, {{"EDRI_LISTENER_WORKERS", "auto"}});
  CHECK(eventually([&] { return server.log().find("placement: ") != std::string::npos; }));
  const auto health = nlohmann::json::parse(http_get(server.port(), "/health").body);
  REQUIRE(health.contains("placement"));
  CHECK(health["placement"]["summary"].get<std::string>().find("CPUs allowed") != std::string::npos);
  CHECK(health["placement"].contains("spread"));
  CHECK(health["placement"].contains("spin"));
  // EDRI_LISTENER_WORKERS=auto is settled to a count, said, and run.
  const auto listeners = health["placement"]["listeners"].get<std::size_t>();
  CHECK(listeners >= 1);
  CHECK(health["placement"]["summary"].get<std::string>().find("(EDRI_LISTENER_WORKERS=auto)") != std::string::npos);
  std::size_t running = 0;
  for (const auto& k : server.children()) running += k.cmdline.rfind("edri-server: listener", 0) == 0;
  CHECK(running == listeners);
  if (!health["placement"]["spread"].get<bool>()) CHECK(listeners == 1);  // few cores: one listener
}

TEST_CASE("an explicit EDRI_LISTENER_WORKERS is obeyed and said", "[pipeline]") {
  ServerProcess server({plugin_path("bench_app")}, {{"EDRI_LISTENER_WORKERS", "3"}});
  const auto health = nlohmann::json::parse(http_get(server.port(), "/health").body);
  CHECK(health["placement"]["listeners"] == 3);
  CHECK(health["placement"]["summary"].get<std::string>().find("3 listeners (EDRI_LISTENER_WORKERS)") !=
        std::string::npos);
  CHECK(eventually([&] { return server.log().find("3 listeners (EDRI_LISTENER_WORKERS)") != std::string::npos; }));
}

TEST_CASE("a server told to spin burns no CPU once its traffic stops", "[pipeline][alone]") {
  // Ten million polls is about a second of CPU per wake-up: a budget that
  // did not fall with the traffic would show here at every timer.
  ServerProcess server({plugin_path("bench_app")}, {{"EDRI_CPUS", "all"}, {"EDRI_SPIN", "10000000"}});
  const auto health = nlohmann::json::parse(http_get(server.port(), "/health").body);
  CHECK(health["placement"]["spin"] == 10000000);
  HttpClient c(server.port());
  for (int i = 0; i < 300; ++i) REQUIRE(c.get("/noop").status == 200);
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  std::vector<pid_t> pids;
  for (const auto& k : server.children()) pids.push_back(k.pid);
  auto total = [&] {
    long t = 0;
    for (pid_t p : pids) t += cpu_ticks(p);
    return t;
  };
  const long before = total();
  std::this_thread::sleep_for(std::chrono::milliseconds(2000));
  const long idle = total() - before;
  INFO("ticks of CPU in 2 s idle: " << idle << " (" << ::sysconf(_SC_CLK_TCK) << " a second)");
  CHECK(idle <= ::sysconf(_SC_CLK_TCK) / 10);
}

namespace {
std::string cpus_allowed(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("Cpus_allowed_list:", 0) == 0) return line.substr(line.find_first_not_of(" \t", 18));
  return {};
}
// Whether the broker logged a line that begins with `what`.
bool broker_logged(const std::string& log, std::string_view what) {
  for (auto at = log.find("[broker "); at != std::string::npos; at = log.find("[broker ", at + 1))
    if (log.compare(log.find(']', at) + 2, what.size(), what) == 0) return true;
  return false;
}
// Times a busy manager's loop took a CPU of its own, by the log.
int holds_logged(const std::string& log) {
  int n = 0;
  for (auto at = log.find("loop holds CPU"); at != std::string::npos; at = log.find("loop holds CPU", at + 1)) ++n;
  return n;
}
}  // namespace

TEST_CASE("the pipeline's processes are placed as EDRI_CPUS says", "[pipeline]") {
  SECTION("auto: on few CPUs the pipeline and quiet managers share one, and busy managers hold one each") {
    ServerProcess server({plugin_path("bench_app")}, {{"BENCH_MANAGERS", "2"}});
    const auto mine = cpus_allowed(::getpid());
    const auto health = nlohmann::json::parse(http_get(server.port(), "/health").body);
    if (health["placement"]["spread"].get<bool>()) {  // a machine with cores to spare
      for (const auto& k : server.children()) CHECK(cpus_allowed(k.pid) == mine);
      return;
    }
    const pid_t first = server.child("manager bench"), second = server.child("manager busy1");
    std::set<std::string> pipeline;
    for (const std::string role : {"listener", "broker", "router", "manager bench", "manager busy1", "manager pong"})
      pipeline.insert(cpus_allowed(server.child(role)));
    REQUIRE(pipeline.size() == 1);
    const std::string home = *pipeline.begin();
    CHECK(home.find_first_of(",-") == std::string::npos);
    if (mine == home) return;  // one CPU in all: nowhere to go
    // 20 ms of CPU per request, back to back, in two domains: each busy
    // manager's loop takes a CPU of its own, the one off the pipeline's
    // first; a third CPU, where there is one, stays free.
    std::atomic<bool> stop{false};
    std::atomic<int> failed{0};
    auto burn = [&](std::string path) {  // Catch's assertions stay on the test's thread
      HttpClient c(server.port(), 10000);
      while (!stop)
        if (c.get(path).status != 200) ++failed;
    };
    std::thread load_first(burn, "/busy/0/20");
    const bool first_holds = eventually([&] { return cpus_allowed(first) != home; });
    std::thread load_second(burn, "/busy/1/20");
    // The second may hold the pipeline's CPU, where it was while quiet:
    // its log says when it took it.
    const bool both_hold = eventually([&] {
      const auto a = cpus_allowed(first), b = cpus_allowed(second);
      return holds_logged(server.log()) >= 2 && a != b && a.find_first_of(",-") == std::string::npos &&
             b.find_first_of(",-") == std::string::npos;
    });
    const std::string held_first = cpus_allowed(first), held_second = cpus_allowed(second);
    stop = true;
    load_first.join();
    load_second.join();
    CHECK(first_holds);
    CHECK(both_hold);
    INFO("home " << home << ", first " << held_first << ", second " << held_second);
    CHECK(held_first != home);
    CHECK(failed == 0);
    // ...and both come home once quiet; the quiet one never moved.
    CHECK(eventually([&] { return cpus_allowed(first) == home && cpus_allowed(second) == home; }));
    CHECK(cpus_allowed(server.child("manager pong")) == home);
  }
  SECTION("one: all on one CPU, the same for every process") {
    ServerProcess server({plugin_path("bench_app")}, {{"EDRI_CPUS", "one"}});
    std::set<std::string> placements;
    for (const auto& k : server.children()) placements.insert(cpus_allowed(k.pid));
    REQUIRE(placements.size() == 1);
    CHECK(placements.begin()->find_first_of(",-") == std::string::npos);
  }
  SECTION("an explicit list") {
    ServerProcess server({plugin_path("bench_app")}, {{"EDRI_CPUS", "0"}});
    for (const auto& k : server.children()) CHECK(cpus_allowed(k.pid) == "0");
  }
  SECTION("all: left to the scheduler") {
    ServerProcess server({plugin_path("bench_app")}, {{"EDRI_CPUS", "all"}});
    const auto mine = cpus_allowed(::getpid());
    for (const auto& k : server.children()) CHECK(cpus_allowed(k.pid) == mine);
  }
}

TEST_CASE("under auto on few CPUs a busy broker holds a CPU of its own, and comes home when quiet", "[pipeline]") {
  // Room for the whole burst in the manager's outbox: a slow build (the
  // sanitizers') queues what it cannot pass on yet instead of refusing it.
  ServerProcess server({plugin_path("bench_app")}, {{"EDRI_OUTBOX_LIMIT", "268435456"}});
  const auto health = nlohmann::json::parse(http_get(server.port(), "/health").body);
  const pid_t broker = server.child("broker");
  const auto home = cpus_allowed(broker);
  if (health["placement"]["spread"].get<bool>() || cpus_allowed(::getpid()) == home) return;  // nowhere to go
  CHECK(home == cpus_allowed(server.child("listener")));
  // 300,000 publishes, 2,000 every 2 ms (the fan-out bench's pace): each is numbered
  // and kept by the broker, which then asks for more than its share of the
  // CPU it shares with the listener, router and manager.
  nlohmann::json streams = nlohmann::json::array();
  for (int i = 0; i < 2000; ++i) {
    std::string name = "s";  // (GCC 12 warns falsely of "s" + std::to_string)
    streams.push_back(name += std::to_string(i));
  }
  const nlohmann::json burst{{"streams", streams}, {"updates", 150}, {"interval_ms", 2}, {"fields", 4}};
  HttpClient c(server.port(), 120000);
  c.send_raw("POST /stream-burst HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " +
             std::to_string(burst.dump().size()) + "\r\n\r\n" + burst.dump());
  CHECK(eventually([&] { return broker_logged(server.log(), "busy: the loop holds"); }, std::chrono::seconds(60)));
  CHECK(c.read_response().status == 200);
  // Quiet again: back with the pipeline (it may have held the pipeline's
  // own CPU, where the manager took the other first: the log says).
  CHECK(eventually([&] { return broker_logged(server.log(), "quiet again: the loop"); }));
  CHECK(cpus_allowed(broker) == home);
}

TEST_CASE("handlers run in their domain's manager process", "[pipeline]") {
  ServerProcess server({test_plugin_path("test_app")});
  const auto test_pid = server.child("manager test");
  const auto other_pid = server.child("manager other");
  REQUIRE(test_pid > 0);
  REQUIRE(other_pid > 0);
  CHECK(test_pid != other_pid);
  auto a = nlohmann::json::parse(http_get(server.port(), "/pid").body);
  auto b = nlohmann::json::parse(http_get(server.port(), "/other/pid").body);
  CHECK(a["pid"] == test_pid);
  CHECK(b["pid"] == other_pid);
  CHECK(b["domain"] == "other");
}

TEST_CASE("many requests on many connections all come back", "[pipeline]") {
  ServerProcess server({test_plugin_path("test_app")});
  std::vector<std::unique_ptr<HttpClient>> clients;
  for (int i = 0; i < 16; ++i) clients.push_back(std::make_unique<HttpClient>(server.port()));
  for (int round = 0; round < 50; ++round) {
    for (int i = 0; i < 16; ++i)
      clients[i]->send_raw("GET /items/" + std::to_string(round * 100 + i) + " HTTP/1.1\r\nHost: x\r\n\r\n");
    for (int i = 0; i < 16; ++i) {
      const auto r = clients[i]->read_response();
      REQUIRE(r.status == 200);
      REQUIRE(nlohmann::json::parse(r.body)["id"] == round * 100 + i);
    }
  }
}

TEST_CASE("stopping the server leaves no process and no shared memory", "[pipeline]") {
  auto server = std::make_unique<ServerProcess>(std::vector<std::string>{plugin_path("bench_app")});
  REQUIRE(http_get(server->port(), "/noop").status == 200);
  const auto kids = server->children();
  REQUIRE(kids.size() == 5);
  const auto segments = shm_segments(server->segment_prefix());
  REQUIRE(segments.size() == 1);
  struct stat st {};
  REQUIRE(::stat(("/dev/shm/" + segments[0]).c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);

  CHECK(server->stop() == 0);
  for (const auto& k : kids) CHECK_FALSE(process_alive(k.pid));
  CHECK(shm_segments(server->segment_prefix()).empty());
}
