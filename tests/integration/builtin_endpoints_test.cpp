// /health, /ready and /metrics, answered by the listener from shared memory.
#include <signal.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "support/grpc_scenario.hpp"
#include "support/http_client.hpp"
#include "support/promtool.hpp"
#include "support/server_process.hpp"
#include "support/test_helpers.hpp"
#include "support/ws_client.hpp"

using namespace edri::test;
using nlohmann::json;
using namespace std::chrono_literals;

namespace {
double metric(const std::string& text, const std::string& prefix) { return metric_value(text, prefix); }
// Whether /health comes to answer 503 naming process `name` with
// `state(entry)` true, within 2 s.
bool health_names(std::uint16_t port, const std::string& name, const std::function<bool(const json&)>& state) {
  for (int i = 0; i < 100; ++i) {
    std::this_thread::sleep_for(20ms);
    const auto h = http_get(port, "/health");
    const auto body = json::parse(h.body);
    for (const auto& p : body["processes"])
      if (h.status == 503 && p["name"] == name && state(p)) return true;
  }
  return false;
}
}  // namespace

TEST_CASE("health and readiness", "[builtin]") {
  ServerProcess server({test_plugin_path("test_app")});
  auto r = http_get(server.port(), "/health");
  CHECK(r.status == 200);
  CHECK(r.header("cache-control") == "no-store");
  auto j = json::parse(r.body);
  CHECK(j["status"] == "ok");
  std::set<std::string> names;
  for (const auto& p : j["processes"]) {
    names.insert(p["name"].get<std::string>());
    CHECK(p["alive"] == true);
  }
  CHECK(names == std::set<std::string>{"supervisor", "broker", "router", "listener", "manager test", "manager other"});

  r = http_get(server.port(), "/ready");
  CHECK(r.status == 200);
  j = json::parse(r.body);
  CHECK(j["managers"] == 2);
  CHECK(j["managers_subscribed"] == 2);

  SECTION("a restart shows in /health and /metrics") {
    const pid_t before = server.child("manager other");
    REQUIRE(::kill(before, SIGKILL) == 0);
    bool seen = false;
    for (int i = 0; i < 250 && !seen; ++i) {
      std::this_thread::sleep_for(20ms);
      const auto h = json::parse(http_get(server.port(), "/health").body);
      for (const auto& p : h["processes"])
        if (p["name"] == "manager other" && p["restarts"] == 1 && p["alive"] == true && h["status"] == "ok")
          seen = true;
    }
    CHECK(seen);
    const auto m = http_get(server.port(), "/metrics").body;
    CHECK(metric(m, "edri_process_restarts_total{process=\"manager other\"}") == 1);
    CHECK(metric(m, "edri_process_restarts_total{process=\"manager test\"}") == 0);
    CHECK(http_get(server.port(), "/ready").status == 200);
  }
  SECTION("a stopped process (SIGSTOP) is not healthy, and is again once it goes on") {
    const pid_t router = server.child("router");
    REQUIRE(::kill(router, SIGSTOP) == 0);
    CHECK(health_names(server.port(), "router", [](const json& p) { return p.value("stopped", false); }));
    CHECK(http_get(server.port(), "/ready").status == 503);
    REQUIRE(::kill(router, SIGCONT) == 0);
    CHECK(eventually([&] { return http_get(server.port(), "/health").status == 200; }));
  }
}

TEST_CASE("metrics count requests by route and status", "[builtin]") {
  ServerProcess server({test_plugin_path("test_app")});
  HttpClient c(server.port());
  for (int i = 0; i < 7; ++i) REQUIRE(c.get("/hello/x").status == 200);
  for (int i = 0; i < 3; ++i) REQUIRE(c.get("/items/abc").status == 404);
  REQUIRE(c.request("POST", "/things", R"({"title":""})").status == 422);
  const auto r = c.get("/metrics");
  CHECK(r.status == 200);
  CHECK(r.header("content-type").rfind("text/plain; version=0.0.4", 0) == 0);
  const auto& m = r.body;
  CHECK(metric(m, "edri_requests_total{route=\"GET /hello/{name}\",status=\"200\"}") == 7);
  CHECK(metric(m, "edri_requests_total{route=\"(none)\",status=\"404\"}") == 3);
  CHECK(metric(m, "edri_requests_total{route=\"POST /things\",status=\"422\"}") == 1);
  // Latency by route: each route's own histogram, counted as its answers.
  CHECK(metric(m, "edri_request_duration_seconds_count{route=\"GET /hello/{name}\"}") == 7);
  CHECK(metric(m, "edri_request_duration_seconds_count{route=\"POST /things\"}") == 1);
  CHECK(metric(m, "edri_request_duration_seconds_bucket{route=\"GET /hello/{name}\",le=\"+Inf\"}") == 7);
  CHECK(metric(m, "edri_request_duration_seconds_bucket{route=\"GET /hello/{name}\",le=\"0.0001\"}") <=
        metric(m, "edri_request_duration_seconds_bucket{route=\"GET /hello/{name}\",le=\"10\"}"));
  CHECK(metric(m, "edri_request_duration_seconds_sum{route=\"GET /hello/{name}\"}") > 0);
  CHECK(metric(m, "edri_request_duration_seconds_count{route=\"(none)\"}") >= 3);
  CHECK(m.find("edri_request_duration_seconds_count{route=\"GET /items/{id:int}\"}") == std::string::npos);
  CHECK(metric(m, "edri_channel_depth_bytes{from=\"listener\",to=\"broker\"}") >= 0);
  CHECK(metric(m, "edri_process_up{process=\"router\"}") == 1);
}

TEST_CASE("a process stuck in one loop turn past EDRI_HEALTH_STALL is not healthy, and is again once it returns",
          "[builtin]") {
  ServerProcess server({test_plugin_path("test_app")}, {{"EDRI_HEALTH_STALL", "1"}});
  // The handler holds manager test's loop for 2.5 s: no turn begins.
  int slow_status = 0;
  std::thread slow([&] { slow_status = http_get(server.port(), "/sleep/2500").status; });
  CHECK(health_names(server.port(), "manager test", [](const json& p) { return p.value("stalled_ms", 0) >= 1000; }));
  CHECK(http_get(server.port(), "/ready").status == 503);
  slow.join();
  CHECK(slow_status == 200);
  CHECK(eventually([&] { return http_get(server.port(), "/health").status == 200; }));
  // Idle processes wait in epoll for longer than that: never stalled.
  std::this_thread::sleep_for(1500ms);
  CHECK(http_get(server.port(), "/health").status == 200);
}

TEST_CASE("each process's loop counts its turns, records, sleeps and wake-ups in /metrics", "[builtin]") {
  ServerProcess server({test_plugin_path("test_app")}, {{"EDRI_SPIN", "0"}});
  HttpClient c(server.port());
  REQUIRE(c.get("/hello/x").status == 200);
  const std::string manager = "{process=\"manager test\"}";
  const auto before = c.get("/metrics").body;
  for (int i = 0; i < 50; ++i) REQUIRE(c.get("/hello/x").status == 200);
  const auto after = c.get("/metrics").body;
  const auto delta = [&](const std::string& name) { return metric(after, name) - metric(before, name); };
  // Each request is one record for the manager, taken in a turn of its own:
  // the client waits for each answer, and the manager sleeps between them.
  const double records = delta("edri_loop_records_total" + manager);
  const double turns = delta("edri_loop_turns_total" + manager);
  CHECK(records >= 50);
  CHECK(turns >= 50);
  const double sleeps = delta("edri_loop_sleeps_total" + manager);
  const double woken = delta("edri_loop_rung_wakeups_total" + manager);
  CHECK(sleeps >= 50);
  CHECK(woken >= 50);
  CHECK(woken <= sleeps);
  CHECK(delta("edri_loop_doorbell_rings_total" + manager) >= 50);
  // A wake-up is micro- to milliseconds, never seconds, and not spinning.
  const double delay = delta("edri_loop_wakeup_delay_seconds_total" + manager);
  CHECK(delay > 0);
  CHECK(delay / woken < 0.05);
  CHECK(delta("edri_loop_spin_turns_total" + manager) == 0);
  CHECK(delta("edri_loop_sleep_seconds_total" + manager) > 0);
  CHECK(delta("edri_loop_turns_total{process=\"listener\"}") >= 50);
  // The CPU a process used: a handler that makes 16 MB of text takes the
  // manager tens of milliseconds (the kernel counts in 10 ms ticks).
  const auto cpu = "edri_process_cpu_seconds_total" + manager;
  REQUIRE(c.get("/text/16000000").status == 200);
  CHECK(metric(c.get("/metrics").body, cpu) - metric(after, cpu) >= 0.01);
  CHECK(metric(after, "edri_process_cpu_seconds_total{process=\"listener\"}") >= 0);
}

TEST_CASE("metrics count WebSocket commands by status and gRPC calls by code", "[builtin]") {
  ServerProcess server({test_plugin_path("test_app")});
  const auto port = server.port();
  {
    WsClient ws(port);
    for (int i = 0; i < 3; ++i) CHECK(ws.command({{"command", "hello"}, {"name", "x"}})["response"]["hello"] == "x");
    CHECK(ws.command({{"command", "no.such"}})["error"]["status"] == 404);
    CHECK(ws.command({{"command", "status"}, {"code", 503}})["error"]["status"] == 503);
  }
  const json g = run_scenario(port, "access_log");  // OK, OK (a handler's 404 inside), UNIMPLEMENTED
  INFO(g.dump());
  const auto m = http_get(port, "/metrics").body;
  INFO(m);
  CHECK(metric(m, "edri_websocket_commands_total{status=\"200\"}") == 3);
  CHECK(metric(m, "edri_websocket_commands_total{status=\"404\"}") == 1);
  CHECK(metric(m, "edri_websocket_commands_total{status=\"503\"}") == 1);
  CHECK(metric(m, "edri_grpc_calls_total{code=\"OK\"}") == 2);
  CHECK(metric(m, "edri_grpc_calls_total{code=\"UNIMPLEMENTED\"}") == 1);
  // Neither is an HTTP request of a route.
  CHECK(metric(m, "edri_requests_total{route=\"GET /hello/{name}\"") == -1);
  // Each has its latency, by command and by method; "(none)": a command
  // or method the server has not; one nobody called has no series.
  const std::string ws = "edri_websocket_command_duration_seconds";
  CHECK(metric(m, ws + "_count{command=\"hello\"}") == 3);
  CHECK(metric(m, ws + "_bucket{command=\"hello\",le=\"+Inf\"}") == 3);
  CHECK(metric(m, ws + "_sum{command=\"hello\"}") > 0);
  CHECK(metric(m, ws + "_count{command=\"status\"}") == 1);
  CHECK(metric(m, ws + "_count{command=\"(none)\"}") == 1);
  CHECK(metric(m, ws + "_count{command=\"sleep\"}") == -1);
  CHECK(metric(m, "edri_grpc_call_duration_seconds_count{method=\"/edri.v1.Edri/Call\"}") == 2);
  CHECK(metric(m, "edri_grpc_call_duration_seconds_count{method=\"(none)\"}") == 1);
  const auto lint = promtool_check_metrics(m);
  INFO(lint.output);
  CHECK(lint.status == 0);
}
