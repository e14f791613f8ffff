// WebSocket and gRPC commands take an HTTP request's path: from the
// listener straight to their manager (decision 0040), the broker and the
// router told without a wake-up. A connection that uses pushes keeps its
// commands behind its subscriptions, through the broker, so that a push
// its own command causes finds them; and a subscription confirmed to one
// client is known to the router before any push it may cause.
#include <signal.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>

#include "support/grpc_scenario.hpp"
#include "support/http_client.hpp"
#include "support/server_process.hpp"
#include "support/test_helpers.hpp"
#include "support/ws_client.hpp"

using namespace edri::test;
using nlohmann::json;

namespace {

struct Wakes {
  explicit Wakes(ServerProcess& server)
      : broker(server.child("broker")),
        router(server.child("router")),
        broker_at(sleeps(broker)),
        router_at(sleeps(router)) {
    REQUIRE(broker_at >= 0);
    REQUIRE(router_at >= 0);
  }
  long of_broker() const { return sleeps(broker) - broker_at; }
  long of_router() const { return sleeps(router) - router_at; }
  pid_t broker, router;
  long broker_at, router_at;
};

constexpr int kCommands = 300;

}  // namespace

TEST_CASE("WebSocket commands go straight to their manager: neither broker nor router is woken", "[websocket]") {
  ServerProcess server({test_plugin_path("test_app")});
  WsClient ws(server.port());
  REQUIRE(ws.command({{"command", "hello"}, {"name", "warm"}})["response"]["hello"] == "warm");
  const Wakes wakes(server);
  for (int i = 0; i < kCommands; ++i) {
    std::string name = "n";  // not "n" + ...: GCC 12's false -Wrestrict
    name += std::to_string(i);
    REQUIRE(ws.command({{"command", "hello"}, {"name", name}})["response"]["hello"] == name);
  }
  // Through the broker each command woke it and the router.
  INFO("broker woken " << wakes.of_broker() << ", router " << wakes.of_router() << " times");
  CHECK(wakes.of_broker() < kCommands / 5);
  CHECK(wakes.of_router() < kCommands / 5);
}

TEST_CASE("gRPC calls go straight to their manager: neither broker nor router is woken", "[grpc]") {
  ServerProcess server({test_plugin_path("test_app")});
  std::optional<Wakes> wakes;
  const auto out = run_scenario(server.port(), "one_by_one", [&](const std::string& line) {
    if (line == "warm\n") wakes.emplace(server);
  });
  REQUIRE(wakes);
  CHECK(out == json{{"first", 200}, {"statuses", {200}}, {"count", kCommands}});
  INFO("broker woken " << wakes->of_broker() << ", router " << wakes->of_router() << " times");
  CHECK(wakes->of_broker() < kCommands / 5);
  CHECK(wakes->of_router() < kCommands / 5);
}

TEST_CASE("a push caused by a client's own command, sent right after its subscription, reaches it", "[websocket]") {
  ServerProcess server({test_plugin_path("test_app")});
  WsClient ws(server.port());
  // Unsubscribing leaves no subscriber of the type: each round the broker
  // announces it to the router anew.
  for (int round = 0; round < 50; ++round) {
    INFO("round " << round);
    ws.send(json{{"command", "watch"}}.dump());
    ws.send(json{{"command", "publish"}, {"n", 1}}.dump());
    CHECK(ws.read_json() == json{{"command", "watch"}, {"response", json::object()}});
    // The push and the command's answer come by different ways, in either
    // order.
    std::set<json> next{ws.read_json(), ws.read_json()};
    CHECK(next == std::set<json>{{{"command", "publish"}, {"response", {{"published", 1}}}},
                                 {{"command", "test.happened"}, {"event", {{"i", 1}}}}});
    CHECK(ws.command({{"command", "unwatch"}}) == json{{"command", "unwatch"}, {"response", json::object()}});
  }
}

TEST_CASE("a subscription confirmed to one client gets the push another client's request causes", "[websocket]") {
  ServerProcess server({test_plugin_path("test_app")});
  WsClient ws(server.port());
  HttpClient http(server.port());
  const pid_t router = server.child("router");
  for (int round = 0; round < 5; ++round) {
    INFO("round " << round);
    // The router stopped: it reads the broker's announcement of the new
    // subscription and the manager's notification in one turn, the
    // managers' rings first.
    REQUIRE(::kill(router, SIGSTOP) == 0);
    REQUIRE(ws.command({{"command", "watch"}}) == json{{"command", "watch"}, {"response", json::object()}});
    const auto published = http.get("/other/publish/1").status;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    REQUIRE(::kill(router, SIGCONT) == 0);
    REQUIRE(published == 200);
    CHECK(ws.read_json() == json{{"command", "test.happened"}, {"event", {{"i", 1}}}});
    REQUIRE(ws.command({{"command", "unwatch"}}) == json{{"command", "unwatch"}, {"response", json::object()}});
  }
}
