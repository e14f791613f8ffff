// The supervisor keeps the pipeline alive: a child that dies is replaced
// and the server serves again; a dead supervisor takes its children with it
// and its shared memory is reclaimed by the next start.
#include <signal.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "support/http_client.hpp"
#include "support/server_process.hpp"
#include "support/test_helpers.hpp"

using namespace edri::test;
using namespace std::chrono_literals;

TEST_CASE("a killed child is restarted and the server serves again", "[supervisor]") {
  ServerProcess server({test_plugin_path("test_app")}, {{"EDRI_API_RESPONSE_TIMEOUT", "2"}});
  for (const std::string role : {"manager test", "router", "broker", "listener"}) {
    INFO(role);
    const pid_t before = server.child(role);
    REQUIRE(before > 0);
    REQUIRE(::kill(before, SIGKILL) == 0);
    CHECK(eventually([&] { return server.child(role) > 0 && server.child(role) != before; }));
    CHECK(eventually([&] { return http_get(server.port(), "/hello/back").status == 200; }));
  }
  const auto r = nlohmann::json::parse(http_get(server.port(), "/pid").body);
  CHECK(r["pid"] == server.child("manager test"));
  CHECK(server.log().find("was killed by signal 9") != std::string::npos);
}

TEST_CASE("when the supervisor dies its children exit and the next start reclaims its memory", "[supervisor]") {
  std::vector<ProcessInfo> kids;
  std::string prefix;
  {
    ServerProcess first({plugin_path("bench_app")});
    kids = first.children();
    prefix = first.segment_prefix();
    REQUIRE(kids.size() == 5);  // listener, broker, router, managers bench and pong
    REQUIRE(shm_segments(prefix).size() == 1);
    ::kill(first.pid(), SIGKILL);
    // The children notice on their own (parent-death signal).
    for (const auto& k : kids) CHECK(eventually([&] { return !process_alive(k.pid); }));
    first.stop();  // reaps the supervisor
  }
  CHECK(shm_segments(prefix).size() == 1);  // nobody removed it yet
  ServerProcess second({plugin_path("bench_app")});
  CHECK(shm_segments(prefix).empty());
  CHECK(http_get(second.port(), "/noop").status == 200);
}

TEST_CASE("a request whose deadline died with the broker is still answered", "[supervisor]") {
  ServerProcess server({test_plugin_path("test_app")}, {{"EDRI_API_RESPONSE_TIMEOUT", "0.5"}});
  HttpClient c(server.port(), 10000);
  c.send_raw("GET /sleep/6000 HTTP/1.1\r\nHost: x\r\n\r\n");
  // The request is in the manager now; its deadline lives in the broker.
  std::this_thread::sleep_for(200ms);
  const pid_t broker = server.child("broker");
  REQUIRE(::kill(broker, SIGKILL) == 0);
  const auto start = std::chrono::steady_clock::now();
  const auto r = c.read_response();
  const auto waited = std::chrono::steady_clock::now() - start;
  CHECK(r.status == 504);
  CHECK(waited < 5s);  // well before the handler's 6 s
  CHECK(eventually([&] { return http_get(server.port(), "/other/pid").status == 200; }));
}
