// Between managers: notifications fan out to every subscribed manager, and
// a handler's request to another manager comes back to it, in its loop.
#include <catch2/catch.hpp>
#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "support/http_client.hpp"
#include "support/server_process.hpp"

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
