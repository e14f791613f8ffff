// Between managers: notifications fan out to every subscribed manager, and
// a handler's request to another manager comes back to it, in its loop.
#include <catch2/catch.hpp>
#include <chrono>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "support/http_client.hpp"
#include "support/server_process.hpp"
#include "support/test_helpers.hpp"

using namespace edri::test;
using nlohmann::json;
using namespace std::chrono_literals;

TEST_CASE("a published notification reaches the subscribed manager", "[managers]") {
  ServerProcess server({test_plugin_path("test_app")});
  HttpClient c(server.port());
  CHECK(json::parse(c.get("/other/publish/5").body)["published"] == 5);
  CHECK(json::parse(c.get("/other/publish/20").body)["published"] == 20);
  json seen;
  for (int i = 0; i < 200; ++i) {
    seen = json::parse(c.get("/notified").body);
    if (seen["count"] == 25) break;
    std::this_thread::sleep_for(10ms);
  }
  CHECK(seen["count"] == 25);
  CHECK(seen["sum"] == 15 + 210);  // every notification once, none lost or doubled
}

TEST_CASE("a handler asks another manager and answers when the response comes back", "[managers]") {
  ServerProcess server({test_plugin_path("test_app")});
  HttpClient c(server.port());
  for (int i = 0; i < 20; ++i) {
    const auto r = c.get("/ask");
    REQUIRE(r.status == 200);
    const auto j = json::parse(r.body);
    CHECK(j["status"] == 200);
    CHECK(j["other"] == server.child("manager other"));
    CHECK(j["asked_from"] == server.child("manager test"));
  }
  CHECK(c.get("/ask-nobody").status == 500);
}

TEST_CASE("EDRI_MANAGER_REPLICAS: requests spread over a domain's replicas: a notification reaches one", "[managers]") {
  ServerProcess server({test_plugin_path("test_app")},
                       {{"EDRI_MANAGER_REPLICAS", "2"}, {"EDRI_ROUTING", "round_robin"}});
  const pid_t first = server.child("manager test --");
  const pid_t second = server.child("manager test 2");
  REQUIRE(first > 0);
  REQUIRE(second > 0);
  CHECK(first != second);
  CHECK(server.child("manager other 2") > 0);
  HttpClient c(server.port());
  std::set<long> pids;
  for (int i = 0; i < 4; ++i) pids.insert(json::parse(c.get("/pid").body)["pid"].get<long>());
  CHECK(pids == std::set<long>{first, second});  // round robin

  // 10 notifications, each to one replica of domain test: 10 in all.
  CHECK(json::parse(c.get("/other/publish/10").body)["published"] == 10);
  long count = 0;
  CHECK(eventually([&] {
    // Two calls reach both replicas (round robin).
    count = json::parse(c.get("/notified").body)["count"].get<long>() +
            json::parse(c.get("/notified").body)["count"].get<long>();
    return count == 10;
  }));
  CHECK(count == 10);
  CHECK(http_get(server.port(), "/health").body.find("manager test 2") != std::string::npos);
}

TEST_CASE("EDRI_ROUTING=least_loaded (the default): a busy replica gets no more requests while another is free",
          "[managers]") {
  ServerProcess server({test_plugin_path("test_app")}, {{"EDRI_MANAGER_REPLICAS", "2"}});
  HttpClient slow(server.port(), 10000);
  slow.send_raw("GET /sleep/1000 HTTP/1.1\r\nHost: x\r\n\r\n");
  HttpClient c(server.port());
  std::set<long> pids;
  // Round robin would send half of these to the replica that sleeps.
  for (int i = 0; i < 6; ++i) pids.insert(json::parse(c.get("/pid").body)["pid"].get<long>());
  CHECK(pids.size() == 1);
  CHECK(slow.read_response().status == 200);
}
