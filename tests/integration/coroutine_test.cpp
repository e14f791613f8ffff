// Coroutine handlers (include/edri/async.hpp, decision 0030) through the
// real server: a waiting handler does not hold up its domain; what it
// awaits (a timer, another domain, a worker thread, a worker process)
// resumes it in its manager's loop with its request whole; a deadline
// that passes cancels it; EDRI_MAX_WAITING bounds how many wait.
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "support/http_client.hpp"
#include "support/server_process.hpp"
#include "support/test_helpers.hpp"

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
