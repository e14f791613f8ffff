// EDRI_LISTENER_DOMAINS: a domain run inside the listener process, on its
// loop (docs/decisions/0038). It serves every protocol, talks to the
// domains in processes of their own both ways, dies and comes back with
// the listener, and a setting it cannot honour stops start-up.
#include <signal.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <future>
#include <nlohmann/json.hpp>
#include <thread>

#include "support/h2_connection.hpp"
#include "support/http_client.hpp"
#include "support/server_process.hpp"
#include "support/test_helpers.hpp"
#include "support/ws_client.hpp"

using namespace edri::test;
using namespace std::chrono_literals;
using nlohmann::json;

namespace {
std::size_t children_named(const ServerProcess& server, const std::string& title) {
  std::size_t n = 0;
  for (const auto& c : server.children()) n += c.cmdline.rfind("edri-server: " + title + " ", 0) == 0;
  return n;
}

json health_entry(std::uint16_t port, const std::string& name) {
  const auto health = json::parse(http_get(port, "/health").body);
  for (const auto& p : health.at("processes"))
    if (p.at("name") == name) return p;
  return json();
}
}  // namespace

TEST_CASE("a domain in EDRI_LISTENER_DOMAINS runs in the listener and talks to the others both ways",
          "[listener_domains]") {
  ServerProcess server({test_plugin_path("test_app")}, {{"EDRI_LISTENER_DOMAINS", "other"}});
  // No process of its own; the listener says it runs it.
  CHECK(children_named(server, "manager other") == 0);
  CHECK(children_named(server, "manager test") == 1);
  const pid_t listener = server.child("listener + other");
  REQUIRE(listener > 0);

  HttpClient c(server.port());
  const auto own = json::parse(c.get("/other/pid").body);
  CHECK(own.at("pid") == listener);
  CHECK(own.at("domain") == "other");
  // A manager process asks the domain inside the listener, and is answered.
  const auto asked = json::parse(c.get("/ask").body);
  CHECK(asked.at("status") == 200);
  CHECK(asked.at("other") == listener);
  CHECK(asked.at("asked_from") == server.child("manager test"));
  // Its notifications reach the subscriber in the other process; a
  // WebSocket command reaches it as a route does.
  WsClient ws(server.port());
  const auto published = ws.command({{"command", "publish"}, {"n", 3}});
  CHECK(published.at("response").at("published") == 3);
  CHECK(eventually([&] { return json::parse(c.get("/notified").body).at("count") == 3; }));
  // HTTP/2 streams reach it too.
  H2Connection h2(server.port());
  const auto stream = h2.client.request("GET", "/other/pid");
  REQUIRE(h2.run_until([&] { return h2.finished(stream); }));
  CHECK(h2.client.answers[stream].status == 200);
  CHECK(json::parse(h2.client.answers[stream].body).at("pid") == listener);
  const auto other = health_entry(server.port(), "manager other");
  CHECK(other.at("alive") == true);
  CHECK(other.at("inside") == "listener");
  CHECK_FALSE(health_entry(server.port(), "manager test").contains("inside"));
  // Placement counts processes, not slots: broker, router, listener, test.
  const auto placement = json::parse(http_get(server.port(), "/health").body).at("placement");
  CHECK(placement.at("summary").get<std::string>().rfind("4 processes,", 0) == 0);
  CHECK(server.stop() == 0);
}

TEST_CASE("a handler inside the listener asks a manager process, uses worker threads, and sees its deadline",
          "[listener_domains]") {
  ServerProcess server({test_plugin_path("test_app")}, {{"EDRI_LISTENER_DOMAINS", "test"}});
  CHECK(children_named(server, "manager test") == 0);
  const pid_t listener = server.child("listener + test");
  REQUIRE(listener > 0);
  HttpClient c(server.port());
  CHECK(json::parse(c.get("/pid").body).at("pid") == listener);
  const auto asked = json::parse(c.get("/ask").body);
  CHECK(asked.at("status") == 200);
  CHECK(asked.at("asked_from") == listener);
  CHECK(asked.at("other") == server.child("manager other"));
  // in_thread: the job runs off the listener's loop.
  const auto tids = json::parse(c.get("/thread/tid").body);
  CHECK(tids.at("manager") == listener);
  CHECK(tids.at("worker") != listener);
  // A handler's exception is a 500, and the listener serves on.
  CHECK(c.get("/throw").status == 500);
  CHECK(c.get("/hello/again").status == 200);
}

TEST_CASE("a domain inside the listener runs its tasks in worker processes of the listener's", "[listener_domains]") {
  ServerProcess server({test_plugin_path("task_app")}, {{"EDRI_LISTENER_DOMAINS", "jobs"}});
  const pid_t listener = server.child("listener + jobs");
  REQUIRE(listener > 0);
  auto worker_pid = [&]() -> pid_t {
    const auto r = json::parse(http_get(server.port(), "/task/pid").body);
    if (!r.contains("output")) return -1;  // a 503 while a worker is replaced
    CHECK(r.at("manager") == listener);
    return std::stoi(r.at("output").get<std::string>());
  };
  const pid_t worker = worker_pid();
  const auto workers = children_of(listener);
  bool under_listener = false;
  for (const auto& k : workers) under_listener = under_listener || k.pid == worker;
  CHECK(under_listener);
  // One that dies is replaced, and the listener serves on.
  REQUIRE(::kill(worker, SIGKILL) == 0);
  CHECK(eventually([&] {
    const auto now = children_of(listener);
    return now.size() == workers.size() &&
           std::none_of(now.begin(), now.end(), [&](const ProcessInfo& k) { return k.pid == worker; });
  }));
  CHECK(worker_pid() > 0);
  CHECK(server.child("listener + jobs") == listener);
}

TEST_CASE("the listener's death is its domains' too: both restart, and they serve again", "[listener_domains]") {
  ServerProcess server({test_plugin_path("test_app")}, {{"EDRI_LISTENER_DOMAINS", "test"}});
  const pid_t first = server.child("listener + test");
  REQUIRE(first > 0);
  // A request in flight when it dies is not answered: its connection closes.
  HttpClient waiting(server.port());
  waiting.send_raw("GET /ask-sleep/1000 HTTP/1.1\r\nHost: x\r\n\r\n");
  std::this_thread::sleep_for(200ms);
  REQUIRE(::kill(first, SIGKILL) == 0);
  CHECK(waiting.closed_by_peer(3000));
  pid_t second = -1;
  REQUIRE(eventually([&] {
    second = server.child("listener + test");
    return second > 0 && second != first;
  }));
  REQUIRE(eventually([&] {
    try {
      return http_get(server.port(), "/pid").status == 200;
    } catch (const std::exception&) {
      return false;
    }
  }));
  CHECK(json::parse(http_get(server.port(), "/pid").body).at("pid") == second);
  CHECK(json::parse(http_get(server.port(), "/ask").body).at("status") == 200);
  // /health counts the death for both.
  CHECK(health_entry(server.port(), "listener").at("restarts") == 1);
  CHECK(health_entry(server.port(), "manager test").at("restarts") == 1);
  CHECK(server.log().find("listener + test (pid " + std::to_string(first) + ") was killed by signal 9") !=
        std::string::npos);
}

TEST_CASE("SIGTERM waits for a handler inside the listener that waits on a manager process",
          "[listener_domains][alone]") {
  ServerProcess server({test_plugin_path("test_app")},
                       {{"EDRI_LISTENER_DOMAINS", "test"}, {"EDRI_SHUTDOWN_TIMEOUT", "10"}});
  const auto prefix = server.segment_prefix();
  HttpClient busy(server.port(), 10000);
  busy.send_raw("GET /ask-sleep/800 HTTP/1.1\r\nHost: x\r\n\r\n");
  std::this_thread::sleep_for(200ms);
  auto exit_status = std::async(std::launch::async, [&] { return server.stop(20000); });
  const auto r = busy.read_response();
  CHECK(r.status == 200);
  CHECK(json::parse(r.body).at("status") == 200);
  CHECK(exit_status.get() == 0);
  CHECK(shm_segments(prefix).empty());
  for (pid_t p : server.stopped_processes()) CHECK_FALSE(process_alive(p));
}

TEST_CASE("an EDRI_LISTENER_DOMAINS that cannot be honoured stops start-up with a message", "[listener_domains]") {
  const auto plugin = test_plugin_path("test_app");
  SECTION("a domain no plugin has") {
    const auto r = run_server_to_exit({}, {{"EDRI_PLUGINS", plugin}, {"EDRI_LISTENER_DOMAINS", "nosuch"}});
    CHECK(r.status == 2);
    CHECK(r.err.find("EDRI_LISTENER_DOMAINS names 'nosuch', which no plugin has") != std::string::npos);
  }
  SECTION("several listeners") {
    const auto r = run_server_to_exit(
        {}, {{"EDRI_PLUGINS", plugin}, {"EDRI_LISTENER_DOMAINS", "test"}, {"EDRI_LISTENER_WORKERS", "2"}});
    CHECK(r.status == 2);
    CHECK(r.err.find("needs one listener, and EDRI_LISTENER_WORKERS is 2") != std::string::npos);
  }
  SECTION("a domain with replicas") {
    const auto r = run_server_to_exit(
        {}, {{"EDRI_PLUGINS", plugin}, {"EDRI_LISTENER_DOMAINS", "other"}, {"EDRI_DOMAIN_REPLICAS", "other=2"}});
    CHECK(r.status == 2);
    CHECK(r.err.find("'other', which has 2 replicas") != std::string::npos);
  }
  SECTION("a domain this instance does not run") {
    const auto r = run_server_to_exit({}, {{"EDRI_PLUGINS", plugin},
                                           {"EDRI_LISTENER_DOMAINS", "other"},
                                           {"EDRI_DOMAINS", "test"},
                                           {"EDRI_NATS_URL", "nats://127.0.0.1:1"}});
    CHECK(r.status == 2);
    CHECK(r.err.find("'other', which EDRI_DOMAINS leaves out") != std::string::npos);
  }
}
