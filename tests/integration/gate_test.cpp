// The gate (docs/security.md): the plugins' middleware runs for every call
// a client makes, whatever the protocol, before it becomes an event; its
// refusal is answered in that protocol's terms; the handler learns who
// asks. The guarded app is the notes example, with tests/plugins/gate.cpp
// loaded beside it, as a team would add an authentication plugin.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "support/grpc_scenario.hpp"
#include "support/http_client.hpp"
#include "support/server_process.hpp"
#include "support/test_helpers.hpp"
#include "support/ws_client.hpp"

using namespace edri::test;
using nlohmann::json;

namespace {

struct GuardedNotes {
  explicit GuardedNotes(const std::string& mode, std::map<std::string, std::string> env = {})
      : server({plugin_path("notes"), test_plugin_path("gate")}, with(std::move(env), mode, db)) {}
  static std::map<std::string, std::string> with(std::map<std::string, std::string> env, const std::string& mode,
                                                 const std::string& db) {
    env.emplace("EDRI_TEST_GATE", mode);
    env.emplace("EDRI_NOTES_DB", db);
    return env;
  }
  TempDir dir;
  std::string db = (dir.path / "notes.db").string();
  ServerProcess server;
};

json notes_created(std::uint16_t port) {
  return json::parse(HttpClient(port).request("GET", "/notes", {}, "X-Api-Key: k1\r\n").body);
}

std::string h2_status(std::uint16_t port, const std::string& method, const std::string& path,
                      const std::string& extra = {}) {
  return output_of("curl -s -o /dev/null --max-time 10 --http2-prior-knowledge -w '%{http_version} %{http_code}' -X " +
                   method + " " + extra + " http://127.0.0.1:" + std::to_string(port) + path);
}

}  // namespace

TEST_CASE("gate: a middleware that refuses everything refuses every route, command, gRPC method and subscription",
          "[gate]") {
  GuardedNotes app("deny");
  const auto port = app.server.port();
  HttpClient c(port);
  // HTTP/1.1: routes, the page, a path no route has.
  for (const auto& [method, path] : std::vector<std::pair<std::string, std::string>>{{"GET", "/notes"},
                                                                                     {"POST", "/notes"},
                                                                                     {"GET", "/notes/1"},
                                                                                     {"DELETE", "/notes/1"},
                                                                                     {"GET", "/"},
                                                                                     {"GET", "/no/such"},
                                                                                     {"GET", "/gate/sse/s"}}) {
    const auto r = c.request(method, path, method == "POST" ? R"({"title":"t"})" : "",
                             method == "POST" ? "Content-Type: application/json\r\n" : "");
    INFO(method << " " << path);
    CHECK(r.status == 401);
    CHECK(r.header("www-authenticate") == "ApiKey");
  }
  // HTTP/2.
  CHECK(h2_status(port, "GET", "/notes") == "2 401");
  CHECK(h2_status(port, "POST", "/notes", "-H 'Content-Type: application/json' -d '{\"title\":\"t\"}'") == "2 401");
  // WebSocket: the handshake passes (this middleware lets it), each
  // command is refused on its own, in the protocol's terms.
  WsClient ws(port);
  for (const json& cmd :
       {json{{"command", "notes.create"}, {"title", "t"}}, json{{"command", "notes.list"}},
        json{{"command", "notes.subscribe"}}, json{{"command", "stream.subscribe"}, {"stream", "s"}}}) {
    const json r = ws.command(cmd);
    INFO(r.dump());
    CHECK(r["command"] == cmd["command"]);
    CHECK(r["error"]["status"] == 401);
    CHECK(r["error"]["detail"] == "every call is refused");
  }
  // gRPC: the generic Call and Connect, and the typed service.
  const json g = run_scenario(port, "gate_deny");
  INFO(g.dump(2));
  CHECK(g["call_create"]["code"] == "UNAUTHENTICATED");
  CHECK(g["call_create"]["details"] == "every call is refused");
  CHECK(g["call_list"]["code"] == "UNAUTHENTICATED");
  CHECK(g["connect"] == json{401, 401, 401, 401});
  CHECK(g["typed_create"]["code"] == "UNAUTHENTICATED");
  CHECK(g["typed_list"]["code"] == "UNAUTHENTICATED");
  CHECK(g["rest_list"] == 401);
  // Not one note was made by any of them.
  ServerProcess check({plugin_path("notes")}, {{"EDRI_NOTES_DB", app.db}});
  CHECK(json::parse(http_get(check.port(), "/notes").body)["items"].empty());
}

TEST_CASE("gate: writes need the key on every protocol, and the handler sees the principal, protocol and client",
          "[gate]") {
  GuardedNotes app("key");
  const auto port = app.server.port();
  HttpClient c(port);
  const std::string json_type = "Content-Type: application/json\r\n";
  CHECK(c.request("POST", "/notes", R"({"title":"a","body":"x"})", json_type).status == 401);
  CHECK(c.request("POST", "/notes", R"({"title":"a","body":"x"})", json_type + "X-Api-Key: k1\r\n").status == 201);
  CHECK(c.get("/notes").status == 200);  // reads are open
  WsClient ws(port);
  CHECK(ws.command({{"command", "notes.create"}, {"title", "b"}})["error"]["status"] == 401);
  CHECK(ws.command({{"command", "stream.subscribe"}, {"stream", "s"}})["error"]["status"] == 401);
  WsClient keyed(port, "/ws", {{"X-Api-Key", "k1"}});
  CHECK(keyed.command({{"command", "notes.create"}, {"title", "c"}, {"body", "x"}})["response"]["title"] == "c");
  const json g = run_scenario(port, "gate_key");
  INFO(g.dump(2));
  CHECK(g["create_without"]["code"] == "UNAUTHENTICATED");
  CHECK(g["create_with"]["code"] == "OK");
  CHECK(g["create_with"]["status"] == 201);
  CHECK(g["typed_without"]["code"] == "UNAUTHENTICATED");
  CHECK(g["stream_without"] == json{401, 200});
  // Exactly the three writes with the key made notes.
  CHECK(notes_created(port)["items"].size() == 3);

  // Who asks, as the handler sees it, on each protocol.
  auto me = json::parse(c.request("POST", "/gate/whoami", "{}", json_type + "X-Api-Key: k1\r\n").body);
  CHECK(me["protocol"] == "http/1.1");
  CHECK(me["client"] == "127.0.0.1");
  CHECK(me["principal"] == "key-user");
  CHECK(me["claims"] == json{{"role", "writer"}});
  me = json::parse(c.request("GET", "/gate/whoami", {}, "X-Custom: seen\r\n").body);
  CHECK(me["principal"] == "");
  CHECK(me["claims"] == json::object());
  CHECK(me["headers"]["x-custom"] == "seen");  // all_headers: undeclared headers too
  const json over_ws = keyed.command({{"command", "whoami.post"}})["response"];
  CHECK(over_ws["protocol"] == "websocket");
  CHECK(over_ws["principal"] == "key-user");
  CHECK(over_ws["client"] == "127.0.0.1");
  CHECK(keyed.command({{"command", "whoami"}})["response"]["headers"]["x-api-key"] == "k1");
  CHECK(g["whoami"]["body"]["protocol"] == "grpc");
  CHECK(g["whoami"]["body"]["client"] == "127.0.0.1");
  CHECK(g["whoami_key"]["body"]["principal"] == "key-user");
  CHECK(g["whoami_key"]["body"]["claims"]["role"] == "writer");
  CHECK(output_of("curl -s --max-time 10 --http2-prior-knowledge http://127.0.0.1:" + std::to_string(port) +
                  "/gate/whoami")
            .find(R"("protocol":"h2")") != std::string::npos);
}

TEST_CASE("gate: middleware attached to one event or one path runs there alone, on every protocol", "[gate]") {
  GuardedNotes app("pass");
  const auto port = app.server.port();
  HttpClient c(port);
  CHECK(c.get("/gate/admin").status == 403);
  CHECK(c.request("GET", "/gate/admin", {}, "X-Admin: yes\r\n").status == 200);
  CHECK(c.get("/gate/public").status == 200);
  CHECK(c.get("/gate/private/x").status == 403);
  CHECK(c.get("/notes").status == 200);
  WsClient ws(port);
  CHECK(ws.command({{"command", "admin"}})["error"]["status"] == 403);
  CHECK(ws.command({{"command", "whoami"}})["response"]["protocol"] == "websocket");
  WsClient admin(port, "/ws", {{"X-Admin", "yes"}});
  CHECK(admin.command({{"command", "admin"}})["response"]["protocol"] == "websocket");
  const json g = run_scenario(port, "gate_admin");
  CHECK(g["admin"]["code"] == "PERMISSION_DENIED");
  CHECK(g["admin_yes"]["code"] == "OK");
  CHECK(g["whoami"]["code"] == "OK");
}

TEST_CASE("gate: the client's address from a trusted proxy's X-Forwarded-For or Forwarded, and only from one",
          "[gate]") {
  auto client_of = [](std::uint16_t port, const std::string& headers) {
    return json::parse(HttpClient(port).request("GET", "/gate/whoami", {}, headers).body)["client"];
  };
  {
    GuardedNotes untrusted("pass");
    const auto port = untrusted.server.port();
    CHECK(client_of(port, "X-Forwarded-For: 203.0.113.9\r\n") == "127.0.0.1");
    CHECK(client_of(port, "Forwarded: for=203.0.113.9\r\n") == "127.0.0.1");
  }
  GuardedNotes trusted("pass", {{"EDRI_TRUSTED_PROXIES", "127.0.0.0/8, 10.0.0.0/8"}});
  const auto port = trusted.server.port();
  CHECK(client_of(port, "X-Forwarded-For: 203.0.113.9\r\n") == "203.0.113.9");
  // From the right: trusted hops are skipped, the first other is the client;
  // what the client itself claimed further left is not believed.
  CHECK(client_of(port, "X-Forwarded-For: 198.51.100.1, 203.0.113.9, 10.1.2.3\r\n") == "203.0.113.9");
  CHECK(client_of(port, "X-Forwarded-For: 198.51.100.1\r\nX-Forwarded-For: 10.0.0.1\r\n") == "198.51.100.1");
  CHECK(client_of(port, R"(Forwarded: for="[2001:db8::1]:4711";proto=https)"
                        "\r\n") == "2001:db8::1");
  CHECK(client_of(port, "Forwarded: for=203.0.113.7:80, for=10.0.0.2\r\n") == "203.0.113.7");
  // Not an address: the peer stands.
  CHECK(client_of(port, "X-Forwarded-For: not-an-ip\r\n") == "127.0.0.1");
  CHECK(client_of(port, "") == "127.0.0.1");
  WsClient ws(port, "/ws", {{"X-Forwarded-For", "203.0.113.5"}});
  CHECK(ws.command({{"command", "whoami"}})["response"]["client"] == "203.0.113.5");
}

TEST_CASE("gate: a bad trusted proxy or a middleware for an unknown event stops start-up", "[gate][startup]") {
  const auto bad =
      run_server_to_exit({}, {{"EDRI_PLUGINS", plugin_path("notes")}, {"EDRI_TRUSTED_PROXIES", "10.0.0.0/33"}});
  CHECK(bad.status == 2);
  CHECK(bad.err.find("EDRI_TRUSTED_PROXIES: '10.0.0.0/33' is not an IP address or CIDR block") != std::string::npos);
}

TEST_CASE("gate: a rate limit by client address answers 429 with Retry-After, on every protocol alike", "[gate]") {
  GuardedNotes app("limit");
  const auto port = app.server.port();
  HttpClient c(port);
  for (int i = 0; i < 3; ++i) CHECK(c.get("/gate/whoami").status == 200);
  const auto limited = c.get("/gate/whoami");
  CHECK(limited.status == 429);
  const int retry = std::stoi(limited.header("retry-after"));
  CHECK(retry >= 1);
  CHECK(retry <= 10);
  CHECK(c.get("/gate/public").status == 200);  // another event: not limited
  // The same client over a WebSocket and gRPC: the same bucket.
  WsClient ws(port);
  CHECK(ws.command({{"command", "whoami"}})["error"]["status"] == 429);
  CHECK(run_scenario(port, "gate_admin")["whoami"]["code"] == "RESOURCE_EXHAUSTED");
}
