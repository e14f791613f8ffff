// Coroutine handlers (include/edri/async.hpp, decision 0030) through the
// real server: a waiting handler does not hold up its domain; what it
// awaits (a timer, another domain, a worker thread, a worker process)
// resumes it in its manager's loop with its request whole; a deadline
// that passes, or a client that goes away, cancels it; EDRI_MAX_WAITING
// bounds how many wait. A WebSocket command or a gRPC Event reaches the
// same handler as a route.
#include <signal.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "edri/v1/edri.pb.h"
#include "grpc/framing.hpp"
#include "support/h2_connection.hpp"
#include "support/http_client.hpp"
#include "support/server_process.hpp"
#include "support/test_helpers.hpp"
#include "support/ws_client.hpp"

using namespace edri::test;
using nlohmann::json;
using namespace std::chrono_literals;

TEST_CASE("coroutine handlers: one that waits does not hold up its domain, and finds its request whole",
          "[coroutine]") {
  ServerProcess server({test_plugin_path("coroutines")});
  std::atomic<bool> slow_done{false};
  HttpResponse slow;
  std::thread t([&] {
    slow = http_get(server.port(), "/co/sleep/1500");
    slow_done = true;
  });
  std::this_thread::sleep_for(200ms);
  // The same domain's manager answers while the first handler waits.
  CHECK(http_get(server.port(), "/co/hello").status == 200);
  // A Responder used before its handler returned Deferred answers too.
  CHECK(http_get(server.port(), "/co/defer-now").body == "answered before returning");
  CHECK_FALSE(slow_done);
  t.join();
  REQUIRE(slow.status == 200);
  const auto j = json::parse(slow.body);
  CHECK(j["slept"] == 1500);
  CHECK(j["event"] == "co.sleep");
  CHECK(j["id"].get<std::string>().size() == 33);
}

TEST_CASE("coroutine handlers await another domain, a worker thread and a worker process", "[coroutine]") {
  ServerProcess server({test_plugin_path("coroutines")});
  auto r = http_get(server.port(), "/co/ask/bob");
  REQUIRE(r.status == 200);
  auto j = json::parse(r.body);
  CHECK(j["first"]["greeting"] == "hi bob");
  CHECK(j["second"]["greeting"] == "hi bob!");
  r = http_get(server.port(), "/co/thread/100");
  REQUIRE(r.status == 200);
  CHECK(json::parse(r.body)["sum"] == 5050);
  CHECK(json::parse(r.body)["domain"] == "co");
  r = http_get(server.port(), "/co/task/ab");
  REQUIRE(r.status == 200);
  CHECK(json::parse(r.body)["output"] == "abab");
  // One that returns without waiting, and one that throws after a wait.
  CHECK(http_get(server.port(), "/co/now").body == "at once");
  r = http_get(server.port(), "/co/throw");
  CHECK(r.status == 500);
  CHECK(r.body.find("thrown after a wait") != std::string::npos);
}

TEST_CASE("a coroutine whose deadline passes is cancelled, and at most EDRI_MAX_WAITING wait", "[coroutine]") {
  ServerProcess server({test_plugin_path("coroutines")},
                       {{"EDRI_API_RESPONSE_TIMEOUT", "1"}, {"EDRI_MAX_WAITING", "2"}});
  int statuses[2] = {0, 0};
  std::thread a([&] { statuses[0] = http_get(server.port(), "/co/sleep/3000").status; });
  std::thread b([&] { statuses[1] = http_get(server.port(), "/co/sleep/3000").status; });
  std::this_thread::sleep_for(300ms);
  const auto refused = http_get(server.port(), "/co/sleep/10");
  CHECK(refused.status == 503);
  CHECK(refused.header("retry-after") == "1");
  a.join();
  b.join();
  CHECK(statuses[0] == 504);
  CHECK(statuses[1] == 504);
  // Each was resumed with Cancelled at its deadline, not after its timer
  // (3 s). The 504 and the coroutines' resumption come from two timers
  // due at the same deadline, so a client that asks at once may come
  // between them: asked again, it must see both within the deadline's
  // order of time, not the timers' 3 s.
  CHECK(
      eventually([&] { return json::parse(http_get(server.port(), "/co/cancelled").body)["cancelled"] == 2; }, 500ms));
  CHECK(eventually([&] { return http_get(server.port(), "/co/sleep/10").status == 200; }, 500ms));
}

TEST_CASE("a coroutine whose client goes away is cancelled, over HTTP/1.1, HTTP/2 and WebSocket", "[coroutine]") {
  // Two may wait: a handler left behind by a client gone would hold its
  // place, and the last check's two waits would get 503.
  ServerProcess server({test_plugin_path("coroutines")}, {{"EDRI_MAX_WAITING", "2"}});
  const auto cancellations = [&] { return json::parse(http_get(server.port(), "/co/cancelled").body); };
  const auto cancelled = [&](int n) { return eventually([&] { return cancellations()["cancelled"] == n; }, 2s); };
  // HTTP/1.1: the client closes its connection while the handler waits.
  const int fd = connect_loopback(server.port());
  const std::string head = "GET /co/sleep/5000 HTTP/1.1\r\nHost: t\r\n\r\n";
  REQUIRE(::send(fd, head.data(), head.size(), MSG_NOSIGNAL) == ssize_t(head.size()));
  std::this_thread::sleep_for(300ms);
  ::close(fd);
  CHECK(cancelled(1));
  CHECK(cancellations()["why"] == "the client went away");
  // HTTP/2: the client resets the request's stream; its connection goes on.
  H2Connection h2(server.port());
  const auto slow = h2.client.request("GET", "/co/sleep/5000");
  h2.run_until([] { return false; }, 300);
  h2.client.reset(slow);
  const auto hello = h2.client.request("GET", "/co/hello");
  REQUIRE(h2.run_until([&] { return h2.finished(hello); }));
  CHECK(h2.client.answers[hello].status == 200);
  CHECK(cancelled(2));
  // WebSocket: closed with a command unanswered.
  {
    WsClient ws(server.port());
    ws.send(json{{"command", "co.sleep"}, {"ms", 5000}}.dump());
    std::this_thread::sleep_for(300ms);
    ws.close();
  }
  CHECK(cancelled(3));
  // Nothing is left waiting: two wait again, and are answered.
  int statuses[2] = {0, 0};
  std::thread a([&] { statuses[0] = http_get(server.port(), "/co/sleep/300").status; });
  std::thread b([&] { statuses[1] = http_get(server.port(), "/co/sleep/300").status; });
  a.join();
  b.join();
  CHECK(statuses[0] == 200);
  CHECK(statuses[1] == 200);
  CHECK(cancellations()["cancelled"] == 3);
}

TEST_CASE("a domain's start hook runs before it serves, and its stop hook after its last answer", "[coroutine]") {
  TempDir dir;
  const std::string stop_file = (dir.path / "stopped").string();
  {
    ServerProcess server({test_plugin_path("coroutines")}, {{"COROUTINES_STOP_FILE", stop_file}});
    const auto first = json::parse(http_get(server.port(), "/life/state").body);
    CHECK(first["started"] == true);
    // The timer the hook started runs on in the manager's loop.
    CHECK(
        eventually([&] { return json::parse(http_get(server.port(), "/life/state").body)["ticks"] > first["ticks"]; }));
    CHECK(server.stop() == 0);
  }
  CHECK(read_file(stop_file).rfind("stopped after ", 0) == 0);
}

TEST_CASE("a start hook that throws stops start-up with its message, never a restart loop", "[coroutine]") {
  const auto r = run_server_to_exit({}, {{"EDRI_PLUGINS", test_plugin_path("coroutines")},
                                         {"EDRI_HOST", "127.0.0.1"},
                                         {"EDRI_PORT", "0"},
                                         {"COROUTINES_START_FAIL", "/nope/db.sqlite"}});
  CHECK(r.status == 3);
  CHECK(r.err.find("domain life: its start hook failed: no database at /nope/db.sqlite") != std::string::npos);
  CHECK(r.err.find("restarting") == std::string::npos);
}

namespace {
std::set<std::string> process_names(const ServerProcess& server) {
  std::set<std::string> names;
  const auto health = json::parse(http_get(server.port(), "/health").body);
  for (const auto& p : health["processes"]) names.insert(p["name"].get<std::string>());
  return names;
}
}  // namespace

TEST_CASE("replicas are set per domain: a domain that declared one stays single", "[coroutine]") {
  SECTION("EDRI_MANAGER_REPLICAS is the default for domains that say nothing") {
    ServerProcess server({test_plugin_path("coroutines")}, {{"EDRI_MANAGER_REPLICAS", "2"}});
    const auto names = process_names(server);
    CHECK(names.count("manager co 2") == 1);
    CHECK(names.count("manager peer 2") == 1);
    CHECK(names.count("manager life") == 1);
    CHECK(names.count("manager life 2") == 0);
    // The router's log names a replica as ps does.
    const pid_t second = server.child("manager co 2");
    REQUIRE(second > 0);
    REQUIRE(::kill(second, SIGKILL) == 0);
    CHECK(eventually([&] { return server.log().find("manager co 2 died: ") != std::string::npos; }));
  }
  SECTION("EDRI_DOMAIN_REPLICAS names domains, over what they declared") {
    ServerProcess server({test_plugin_path("coroutines")}, {{"EDRI_DOMAIN_REPLICAS", "life=2, co=1"}});
    const auto names = process_names(server);
    CHECK(names.count("manager life 2") == 1);
    CHECK(names.count("manager co 2") == 0);
  }
  SECTION("a domain no plugin declares stops start-up") {
    const auto r = run_server_to_exit(
        {}, {{"EDRI_PLUGINS", test_plugin_path("coroutines")}, {"EDRI_DOMAIN_REPLICAS", "nosuch=2"}});
    CHECK(r.status != 0);
    CHECK(r.err.find("EDRI_DOMAIN_REPLICAS names nosuch") != std::string::npos);
  }
}

TEST_CASE("an awaited request whose manager dies resumes the coroutine with 503", "[coroutine]") {
  ServerProcess server({test_plugin_path("coroutines")});
  const auto r = http_get(server.port(), "/co/ask-crash");
  REQUIRE(r.status == 200);
  const auto j = json::parse(r.body);
  CHECK(j["status"] == 503);
  CHECK(j["after"] == "resumed");
  // The dead manager's successor serves on.
  CHECK(eventually([&] { return http_get(server.port(), "/peer/seen").status == 200; }));
}

TEST_CASE("notifications a coroutine publishes between its waits arrive in order", "[coroutine]") {
  ServerProcess server({test_plugin_path("coroutines")});
  REQUIRE(http_get(server.port(), "/co/publish/50").status == 200);
  json seen;
  CHECK(eventually([&] {
    seen = json::parse(http_get(server.port(), "/peer/seen").body)["seen"];
    return seen.size() == 50;
  }));
  for (std::size_t i = 0; i < seen.size(); ++i) CHECK(seen[i] == static_cast<int>(i));
  // A coroutine subscriber got each one too, after its own wait.
  json after;
  CHECK(eventually([&] {
    after = json::parse(http_get(server.port(), "/peer/seen").body)["seen_after_wait"];
    return after.size() == 50;
  }));
  std::set<int> distinct;
  for (const auto& i : after) distinct.insert(i.get<int>());
  CHECK(distinct.size() == 50);
}

namespace {
using Clock = std::chrono::steady_clock;

std::chrono::milliseconds since(Clock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0);
}

int cancelled_count(const ServerProcess& server) {
  return json::parse(http_get(server.port(), "/co/cancelled").body)["cancelled"].get<int>();
}

// Starts a unary call of edri.v1.Edri/Call on `h2`: one Event of `type`
// with `body` (JSON), and a grpc-timeout when `timeout` is not empty.
std::int32_t grpc_call(H2Connection& h2, const std::string& type, const json& body, std::uint64_t id,
                       const std::string& timeout = {}) {
  edri::v1::Event ev;
  ev.set_type(type);
  ev.set_body(body.dump());
  ev.set_id(id);
  std::string message;
  edri::grpc::frame(message, ev.SerializeAsString());
  std::vector<std::pair<std::string, std::string>> fields{{"content-type", "application/grpc"}, {"te", "trailers"}};
  if (!timeout.empty()) fields.emplace_back("grpc-timeout", timeout);
  return h2.client.request("POST", "/edri.v1.Edri/Call", std::move(message), std::move(fields));
}

// The one Event a finished Call answered.
edri::v1::Event answer_event(H2Connection& h2, std::int32_t stream) {
  edri::grpc::MessageReader reader(1 << 20);
  reader.append(h2.client.answers[stream].body);
  std::string_view m;
  edri::v1::Event ev;
  REQUIRE(reader.next(m) == edri::grpc::MessageReader::Next::Message);
  REQUIRE(ev.ParseFromArray(m.data(), static_cast<int>(m.size())));
  CHECK(reader.next(m) != edri::grpc::MessageReader::Next::Message);
  return ev;
}
}  // namespace

TEST_CASE("a coroutine handler answers WebSocket commands, its domain serving others while it waits", "[coroutine]") {
  ServerProcess server({test_plugin_path("coroutines")});
  WsClient ws(server.port());
  WsClient other(server.port());
  const auto t0 = Clock::now();
  ws.send(json{{"command", "co.sleep"}, {"ms", 2000}}.dump());
  ws.send(json{{"command", "co.sleep"}, {"ms", 1500}}.dump());
  // Another client's command to the same domain (one manager) is answered
  // while both wait.
  CHECK(other.command({{"command", "co.hello"}}) == json{{"command", "co.hello"}, {"response", "hello"}});
  CHECK(since(t0) < 1000ms);
  // A connection's answers come in the order its commands did (the second
  // handler finished first), each with its request whole after the wait.
  // (Not ws.quiet_for: a read cut short ends the client.)
  const json first = ws.read_json();
  CHECK(since(t0) >= 2000ms);
  CHECK(first["command"] == "co.sleep");
  CHECK(first["response"]["slept"] == 2000);
  CHECK(first["response"]["event"] == "co.sleep");
  CHECK(first["response"]["id"].get<std::string>().size() == 33);
  const json second = ws.read_json();
  CHECK(second["response"]["slept"] == 1500);
  // Both waited at once in the one manager: one after the other would be 3.5 s.
  CHECK(since(t0) < 3000ms);
  // A handler that awaits another domain answers with what it awaited.
  const json asked = ws.command({{"command", "co.ask"}, {"name", "ws"}});
  CHECK(asked["response"]["first"]["greeting"] == "hi ws");
  CHECK(asked["response"]["second"]["greeting"] == "hi ws!");
}

TEST_CASE("a coroutine handler answers a gRPC Call, and a Call beside it is answered while it waits", "[coroutine]") {
  ServerProcess server({test_plugin_path("coroutines")});
  H2Connection h2(server.port());
  const auto t0 = Clock::now();
  const auto slow = grpc_call(h2, "co.sleep", {{"ms", 1500}}, 7);
  const auto quick = grpc_call(h2, "co.hello", json::object(), 8);
  REQUIRE(h2.run_until([&] { return h2.finished(quick); }));
  CHECK(since(t0) < 1000ms);
  CHECK_FALSE(h2.finished(slow));
  CHECK(h2.client.answers[quick].field("grpc-status") == "0");
  CHECK(answer_event(h2, quick).body() == R"("hello")");

  REQUIRE(h2.run_until([&] { return h2.finished(slow); }));
  CHECK(since(t0) >= 1500ms);
  CHECK(h2.client.answers[slow].field("grpc-status") == "0");
  const auto ev = answer_event(h2, slow);
  CHECK(ev.type() == "co.sleep");
  CHECK(ev.id() == 7);
  CHECK(ev.status() == 200);
  const auto body = json::parse(ev.body());
  CHECK(body["slept"] == 1500);
  CHECK(body["event"] == "co.sleep");

  // What it awaited from another domain comes back in the Event.
  const auto ask = grpc_call(h2, "co.ask", {{"name", "grpc"}}, 9);
  REQUIRE(h2.run_until([&] { return h2.finished(ask); }));
  CHECK(h2.client.answers[ask].field("grpc-status") == "0");
  const auto asked = answer_event(h2, ask);
  CHECK(asked.status() == 200);
  CHECK(json::parse(asked.body())["second"]["greeting"] == "hi grpc!");
}

TEST_CASE("a gRPC Call whose grpc-timeout passes ends DEADLINE_EXCEEDED and cancels its coroutine", "[coroutine]") {
  // EDRI_API_RESPONSE_TIMEOUT stays 30 s: only the client's deadline can
  // cancel the handler within the test.
  ServerProcess server({test_plugin_path("coroutines")});
  REQUIRE(cancelled_count(server) == 0);
  H2Connection h2(server.port());
  const auto t0 = Clock::now();
  const auto call = grpc_call(h2, "co.sleep", {{"ms", 3000}}, 1, "300m");
  REQUIRE(h2.run_until([&] { return h2.finished(call); }));
  CHECK(since(t0) < 1500ms);
  // The server's own answer, in the trailers: grpc-status 4.
  CHECK(h2.client.answers[call].status == 200);
  CHECK(h2.client.answers[call].field("grpc-status") == "4");
  CHECK(h2.client.answers[call].error_code == 0);
  // The handler was resumed with Cancelled at that deadline, long before
  // its 3 s timer.
  CHECK(eventually([&] { return cancelled_count(server) == 1; }, 1000ms));
  CHECK(since(t0) < 2500ms);
  // Once its timer would have fired, nothing more happened to it, and the
  // manager (the same process: the count is its memory) serves on.
  std::this_thread::sleep_until(t0 + 3300ms);
  CHECK(cancelled_count(server) == 1);
  CHECK(http_get(server.port(), "/co/sleep/10").status == 200);
}

TEST_CASE("/metrics shows the requests a domain's handlers hold while they wait", "[coroutine]") {
  ServerProcess server({test_plugin_path("coroutines")});
  // The value of `series` in /metrics, or -1 when it is not there.
  auto gauge = [&](const std::string& series) {
    const std::string text = http_get(server.port(), "/metrics").body;
    const auto at = text.find("\n" + series + " ");
    return at == std::string::npos ? -1.0 : std::stod(text.substr(at + series.size() + 2));
  };
  CHECK(gauge(R"(edri_domain_waiting_requests{domain="co"})") == 0);
  CHECK(gauge(R"(edri_domain_waiting_calls{domain="co"})") == 0);
  CHECK(gauge(R"(edri_domain_queue_bytes{domain="co"})") >= 0);
  CHECK(gauge(R"(edri_domain_waiting_requests{domain="peer"})") == 0);
  std::vector<std::unique_ptr<HttpClient>> sleepers;
  for (int i = 0; i < 3; ++i) {
    sleepers.push_back(std::make_unique<HttpClient>(server.port(), 10000));
    sleepers.back()->send_raw("GET /co/sleep/2000 HTTP/1.1\r\nHost: x\r\n\r\n");
  }
  CHECK(eventually([&] { return gauge(R"(edri_domain_waiting_requests{domain="co"})") == 3; }));
  for (auto& c : sleepers) CHECK(c->read_response().status == 200);
  CHECK(eventually([&] { return gauge(R"(edri_domain_waiting_requests{domain="co"})") == 0; }));
}
