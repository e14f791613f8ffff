// Coroutine handlers (include/edri/async.hpp, decision 0030) through the
// real server: a waiting handler does not hold up its domain; what it
// awaits (a timer, another domain, a worker thread, a worker process)
// resumes it in its manager's loop with its request whole; a deadline
// that passes cancels it; EDRI_MAX_WAITING bounds how many wait.
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

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
  // Each was resumed with Cancelled at its deadline, not after its timer.
  CHECK(json::parse(http_get(server.port(), "/co/cancelled").body)["cancelled"] == 2);
  CHECK(http_get(server.port(), "/co/sleep/10").status == 200);
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
