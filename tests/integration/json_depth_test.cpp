// JSON nesting depth (EDRI_MAX_JSON_DEPTH): a client's document nesting
// deeper is refused with an error answer, in the listener or in the
// manager, and no process dies. Before the limit one WebSocket message
// `[[[...]]]` 70,000 deep took the listener down (nlohmann's dump()
// recurses once per level), and a handler echoing req.json() its manager.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <string>

#include "support/http_client.hpp"
#include "support/server_process.hpp"
#include "support/test_helpers.hpp"
#include "support/ws_client.hpp"

using namespace edri::test;
using nlohmann::json;

namespace {

// `depth` arrays around `middle`, as text: a document this deep must never
// be an nlohmann::json in this process either.
std::string nested(std::size_t depth, const std::string& middle = "1") {
  return std::string(depth, '[') + middle + std::string(depth, ']');
}

// Deep enough that echoing it (dump() in the manager) overflowed a
// manager's 8 MiB stack before the limit; 400 KB, within EDRI_MAX_BODY_SIZE.
constexpr std::size_t kCrashesAManager = 200000;

// An echo command whose message nests `depth` levels (the object is one).
std::string echo_of_depth(std::size_t depth) { return R"({"command":"echo","value":)" + nested(depth - 1) + "}"; }

std::string created_count(std::uint16_t port) { return http_get(port, "/things/created").body; }

}  // namespace

TEST_CASE("a WebSocket message nesting deeper than EDRI_MAX_JSON_DEPTH is answered 422 and the listener lives",
          "[json_depth][websocket]") {
  ServerProcess server({plugin_path("bench_app")});
  const pid_t listener = server.child("listener");
  WsClient ws(server.port());

  ws.send(echo_of_depth(70000));
  const json refused = ws.read_json();
  CHECK(refused["command"].is_null());  // not parsed: its command is unknown
  CHECK(refused["error"]["status"] == 422);
  CHECK(refused["error"]["errors"] ==
        json::array({{{"field", "message"}, {"message", "nests deeper than 128 levels (EDRI_MAX_JSON_DEPTH)"}}}));

  // The same connection goes on, in order; a message at the limit is echoed.
  CHECK(ws.command({{"command", "echo"}, {"value", {1, {2}}}}) ==
        json{{"command", "echo"}, {"response", {{"value", {1, {2}}}}}});
  ws.send(echo_of_depth(128));
  const json at_limit = ws.read_json();
  CHECK(at_limit["command"] == "echo");
  CHECK(at_limit["response"]["value"].dump() == nested(127));
  ws.send(echo_of_depth(129));
  CHECK(ws.read_json()["error"]["status"] == 422);

  // Several in a row: no crash loop, the same listener throughout.
  for (int i = 0; i < 3; ++i) ws.send(echo_of_depth(70000));
  for (int i = 0; i < 3; ++i) CHECK(ws.read_json()["error"]["status"] == 422);
  CHECK(ws.command({{"command", "noop"}})["response"]["ok"] == true);
  CHECK(server.child("listener") == listener);
  CHECK(process_alive(listener));
}

TEST_CASE("a subscribe filter nesting too deep is refused like any message", "[json_depth][websocket]") {
  ServerProcess server({test_plugin_path("test_app")}, {{"EDRI_MAX_JSON_DEPTH", "10"}});
  WsClient ws(server.port());
  ws.send(R"({"command":"watch","filter":{"i":)" + nested(9) + "}}");
  CHECK(ws.read_json()["error"]["status"] == 422);
}

TEST_CASE("a REST body nesting deeper than EDRI_MAX_JSON_DEPTH is 422 and no process dies", "[json_depth]") {
  ServerProcess server({test_plugin_path("test_app")}, {{"EDRI_MAX_JSON_DEPTH", "10"}});
  const pid_t manager = server.child("manager test");
  const pid_t listener = server.child("listener");
  HttpClient c(server.port());

  SECTION("declared fields: the listener refuses it, the handler never runs") {
    const std::string before = created_count(server.port());
    // The object is one level, "tags" the other ten: 11.
    auto r = c.request("POST", "/things", R"({"title":"deep","tags":)" + nested(10) + "}");
    CHECK(r.status == 422);
    CHECK(r.header("content-type") == "application/problem+json");
    CHECK(json::parse(r.body)["errors"] ==
          json::array({{{"field", "body"}, {"message", "nests deeper than 10 levels (EDRI_MAX_JSON_DEPTH)"}}}));
    r = c.request("POST", "/things", R"({"title":"deep","tags":)" + nested(kCrashesAManager) + "}");
    CHECK(r.status == 422);
    CHECK(created_count(server.port()) == before);
    // At the limit: accepted, and echoed by the handler.
    r = c.request("POST", "/things", R"({"title":"ok","tags":)" + nested(9) + "}");
    CHECK(r.status == 201);
    CHECK(json::parse(r.body)["tags"].dump() == nested(9));
  }

  SECTION("no declared fields: the handler's req.json() refuses it, the manager answers 422") {
    auto r = c.request("POST", "/raw-json", nested(11));
    CHECK(r.status == 422);
    CHECK(json::parse(r.body)["detail"] == "the body nests deeper than 10 levels (EDRI_MAX_JSON_DEPTH)");
    r = c.request("POST", "/raw-json", nested(kCrashesAManager));
    CHECK(r.status == 422);
    r = c.request("POST", "/raw-json", nested(10));
    CHECK(r.status == 200);
    CHECK(r.body == nested(10));
    // Invalid JSON is the client's mistake too: 400, not the 500 of a throw.
    r = c.request("POST", "/raw-json", "[1,");
    CHECK(r.status == 400);
    CHECK(json::parse(r.body)["detail"].get<std::string>().rfind("the body is not valid JSON", 0) == 0);
    // A number no double holds (the JSON fuzzer found it): 400 as well.
    r = c.request("POST", "/raw-json", "[15.755022e27643]");
    CHECK(r.status == 400);
  }

  CHECK(server.child("manager test") == manager);
  CHECK(server.child("listener") == listener);
  CHECK(process_alive(manager));
}

TEST_CASE("a notification wrapping a client's document at the limit still reaches subscribers",
          "[json_depth][managers]") {
  ServerProcess server({test_plugin_path("test_app")}, {{"EDRI_MAX_JSON_DEPTH", "10"}});
  WsClient ws(server.port());
  // A filter makes the broker parse and match the payload.
  CHECK(ws.command({{"command", "watch"}, {"filter", {{"i", 1}}}})["response"] == json::object());
  HttpClient c(server.port());
  // Depth 10 from the client; the payload {"i":1,"doc":...} is 11.
  const auto r = c.request("POST", "/other/publish-json", nested(10));
  REQUIRE(r.status == 200);
  const json push = ws.read_json();
  CHECK(push["command"] == "test.happened");
  CHECK(push["event"]["doc"].dump() == nested(10));
  // The "test" manager's subscriber read it with req.json().
  json seen;
  CHECK(eventually([&] {
    seen = json::parse(c.get("/notified").body);
    return seen["count"] == 1;
  }));
  CHECK(seen == json{{"count", 1}, {"sum", 1}});
}
