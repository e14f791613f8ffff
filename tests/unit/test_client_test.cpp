// edri::testing::TestClient itself, over the test plugins: coroutine and
// callback handlers, requests between domains (a loaded handler's answer,
// or the test's), worker threads and tasks, subscribers, middleware, a
// handler that never answers, and a plugin the server would refuse.
#include <edri/testing.hpp>

#include <cstdlib>
#include <string>

#include <catch2/catch.hpp>

#include "support/test_helpers.hpp"

namespace {

using edri::test::EnvVar;
using edri::testing::body_json;
using edri::testing::header_of;
using edri::testing::TestClient;
using edri::testing::TestOptions;
using nlohmann::json;

std::string test_plugin(const char* name) { return std::string(EDRI_TEST_PLUGIN_DIR) + "/" + name + ".so"; }

}  // namespace

TEST_CASE("coroutine handlers wait on timers, threads, tasks and other domains", "[testing]") {
  TestClient client({test_plugin("coroutines")});
  const json slept = body_json(client.get("/co/sleep/5"));
  CHECK(slept.at("slept") == 5);
  CHECK(slept.at("event") == "co.sleep");
  CHECK(body_json(client.get("/co/thread/10")) == json{{"sum", 55}, {"domain", "co"}});
  REQUIRE(client.published().size() == 1);
  CHECK(client.published()[0].payload == json{{"sum", 55}});
  CHECK(body_json(client.get("/co/task/ab")).at("output") == "abab");
  CHECK(client.get("/co/hello").body_bytes() == "hello");
  // Answered through a Responder before the handler returned Deferred.
  CHECK(client.get("/co/defer-now").body_bytes() == "answered before returning");
  // The peer domain's handler answers, in this process.
  const json asked = body_json(client.get("/co/ask/bob"));
  CHECK(asked.at("first") == json{{"greeting", "hi bob"}});
  CHECK(asked.at("second") == json{{"greeting", "hi bob!"}});
  REQUIRE(client.asked().size() == 2);
  CHECK(client.asked()[0].domain == "co");
  CHECK(client.asked()[0].event == "peer.greet");
  CHECK(client.asked()[1].body == json{{"name", "bob!"}});
}

TEST_CASE("the test answers requests to another domain when it says so", "[testing]") {
  TestClient client({test_plugin("coroutines")});
  client.answer("peer.greet", [](const json& body) {
    return edri::Response::json({{"greeting", "stub for " + body.at("name").get<std::string>()}});
  });
  const json asked = body_json(client.get("/co/ask/ann"));
  CHECK(asked.at("first") == json{{"greeting", "stub for ann"}});
  CHECK(asked.at("second") == json{{"greeting", "stub for ann!"}});
}

TEST_CASE("a handler's failure is answered as the manager answers it", "[testing]") {
  TestClient client({test_plugin("coroutines")});
  const auto thrown = client.get("/co/throw");
  CHECK(thrown.status.code == 500);
  CHECK(body_json(thrown).at("detail") == "handler threw: thrown after a wait");
  TestOptions production;
  production.production = true;
  TestClient hidden({test_plugin("coroutines")}, production);
  CHECK(body_json(hidden.get("/co/throw")).at("detail") == "the handler failed");
}

TEST_CASE("notifications reach the loaded subscribers, coroutine ones too", "[testing]") {
  TestClient client({test_plugin("coroutines")});
  CHECK(body_json(client.get("/co/publish/3")) == json{{"published", 3}});
  client.settle();
  const json seen = body_json(client.get("/peer/seen"));
  CHECK(seen.at("seen") == json{0, 1, 2});
  CHECK(seen.at("seen_after_wait") == json{0, 1, 2});
  // Start hooks ran when the client loaded the plugin.
  CHECK(body_json(client.get("/life/state")).at("started") == true);
}

TEST_CASE("a handler that never answers is a 504 after answer_timeout", "[testing]") {
  TestOptions quick;
  quick.answer_timeout = std::chrono::milliseconds(50);
  TestClient client({test_plugin("coroutines")}, quick);
  const auto r = client.get("/co/sleep/60000");
  CHECK(r.status.code == 504);
  CHECK(body_json(r).at("detail").get<std::string>().find("answer_timeout") != std::string::npos);
  // The client goes on serving.
  CHECK(client.get("/co/hello").status.code == 200);
}

TEST_CASE("middleware runs before the handler and names the caller", "[testing]") {
  EnvVar mode("EDRI_TEST_GATE", "key");
  TestClient client({test_plugin("gate")});
  const auto refused = client.post("/gate/whoami", json::object());
  CHECK(refused.status.code == 401);
  CHECK(header_of(refused, "WWW-Authenticate") == "ApiKey");
  const json me = body_json(client.post("/gate/whoami", json::object(), {{"X-Api-Key", "k1"}}));
  CHECK(me.at("principal") == "key-user");
  CHECK(me.at("claims") == json{{"role", "writer"}});
  CHECK(me.at("protocol") == "http/1.1");
}

TEST_CASE("a plugin the server would refuse is refused with the server's message", "[testing]") {
  EnvVar fault("EDRI_TEST_ROUTE_FAULT", "default");
  CHECK_THROWS_WITH(TestClient({test_plugin("bad_route")}), Catch::Contains("limit"));
  CHECK_THROWS_WITH(TestClient({test_plugin("no_such_plugin")}), Catch::Contains("no_such_plugin"));
}
