// WebSocket at /ws: the handshake, the JSON command protocol, answers in
// order, bad messages, protocol violations and their close codes, ping,
// fragmentation, size limits, TLS, and pushes of notifications.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "support/http_client.hpp"
#include "support/server_process.hpp"
#include "support/tls_client.hpp"
#include "support/ws_client.hpp"
#include "support/ws_frames.hpp"

using namespace edri::test;
using nlohmann::json;

namespace {

// A raw WebSocket over HttpClient: the handshake, then frames by hand.
struct RawWs {
  HttpClient http;
  explicit RawWs(std::uint16_t port) : http(port) {
    http.send_raw(ws_upgrade_request("/ws"));
    const auto r = http.read_response(true);
    REQUIRE(r.status == 101);
  }
  void send(const std::string& frame) { http.send_raw(frame); }
  WsFrame read() {
    return ws_read_frame([&](std::size_t n) { return http.read_bytes(n); });
  }
};

void require_alive(const ServerProcess& server) {
  CHECK(http_get(server.port(), "/health").status == 200);
  auto c = WsClient(server.port());
  CHECK(c.command({{"command", "noop"}}) == json{{"command", "noop"}, {"response", {{"ok", true}}}});
}

}  // namespace

TEST_CASE("WebSocket commands are answered in order on one connection", "[websocket]") {
  ServerProcess server({plugin_path("bench_app")});
  WsClient ws(server.port());
  CHECK(ws.command({{"command", "noop"}}) == json{{"command", "noop"}, {"response", {{"ok", true}}}});
  CHECK(ws.command({{"command", "echo"}, {"value", {1, "two", {{"three", 3}}}}}) ==
        json{{"command", "echo"}, {"response", {{"value", {1, "two", {{"three", 3}}}}}}});
  // Many in flight at once: each answer comes back in the order asked.
  for (int i = 0; i < 200; ++i)
    ws.send(i % 3 ? json{{"command", "echo"}, {"value", i}}.dump() : json{{"command", "noop"}}.dump());
  for (int i = 0; i < 200; ++i) {
    const auto m = ws.read_json();
    if (i % 3) {
      REQUIRE(m["command"] == "echo");
      REQUIRE(m["response"]["value"] == i);
    } else {
      REQUIRE(m["command"] == "noop");
    }
  }
  CHECK(ws.close(1000) == 0);
}

TEST_CASE("bad WebSocket messages get an error answer and the connection stays open", "[websocket]") {
  ServerProcess server({plugin_path("bench_app")});
  WsClient ws(server.port());
  for (const std::string bad : {"not json", "[1,2]", "{}", R"({"command":5})", "\"noop\""}) {
    const auto m = json::parse((ws.send(bad), ws.read()));
    CHECK(m["command"].is_null());
    CHECK(m["error"]["status"] == 400);
    CHECK(m["error"]["detail"].get<std::string>().find("command") != std::string::npos);
  }
  auto m = ws.command({{"command", "bench.missing"}});
  CHECK(m["command"] == "bench.missing");
  CHECK(m["error"]["status"] == 404);
  CHECK(m["error"]["title"] == "Not Found");
  // Events that are not declared commands are not reachable.
  m = ws.command({{"command", "bench.noop"}});
  CHECK(m["error"]["status"] == 404);
  // Still open, still in order.
  CHECK(ws.command({{"command", "noop"}})["response"]["ok"] == true);
}

TEST_CASE("WebSocket protocol violations close with their codes: no process dies", "[websocket]") {
  ServerProcess server({plugin_path("bench_app")}, {{"EDRI_WEBSOCKET_MAX_MESSAGE", "1024"}});
  SECTION("a binary message: 1003") {
    WsClient ws(server.port());
    ws.send_binary("\x01\x02");
    CHECK(ws.read_close_code() == 1003);
  }
  SECTION("a message over EDRI_WEBSOCKET_MAX_MESSAGE: 1009") {
    WsClient ws(server.port());
    ws.send(json{{"command", "echo"}, {"value", std::string(2000, 'x')}}.dump());
    CHECK(ws.read_close_code() == 1009);
  }
  SECTION("invalid UTF-8 in a text message: 1007") {
    RawWs ws(server.port());
    ws.send(ws_client_frame(0x1, "\xff\xfe"));
    CHECK(ws.read().close_code() == 1007);
  }
  SECTION("an unmasked client frame: 1002") {
    RawWs ws(server.port());
    ws.send(ws_client_frame(0x1, R"({"command":"noop"})", true, false));
    CHECK(ws.read().close_code() == 1002);
  }
  SECTION("a reserved opcode: 1002") {
    RawWs ws(server.port());
    ws.send(ws_client_frame(0x3, "x"));
    CHECK(ws.read().close_code() == 1002);
  }
  SECTION("a fragmented control frame: 1002") {
    RawWs ws(server.port());
    ws.send(ws_client_frame(0x9, "x", false));
    CHECK(ws.read().close_code() == 1002);
  }
  SECTION("a continuation without a start: 1002") {
    RawWs ws(server.port());
    ws.send(ws_client_frame(0x0, "x"));
    CHECK(ws.read().close_code() == 1002);
  }
  require_alive(server);
}

TEST_CASE("WebSocket ping, fragmented messages and the closing handshake", "[websocket]") {
  ServerProcess server({plugin_path("bench_app")});
  WsClient ws(server.port());
  ws.ping("are you there");
  // Control frames are read along with messages.
  CHECK(ws.command({{"command", "noop"}})["response"]["ok"] == true);
  REQUIRE(ws.pongs().size() == 1);
  CHECK(ws.pongs()[0] == "are you there");
  ws.send_fragmented({R"({"command":"ec)", R"(ho","value":)", R"("in three frames"})"});
  CHECK(ws.read_json()["response"]["value"] == "in three frames");
  SECTION("a ping between the fragments of a message") {
    RawWs raw(server.port());
    raw.send(ws_client_frame(0x1, R"({"command":)", false));
    raw.send(ws_client_frame(0x9, "mid"));
    raw.send(ws_client_frame(0x0, R"("noop"})"));
    const auto pong = raw.read();
    CHECK(pong.opcode == 0xA);
    CHECK(pong.payload == "mid");
    const auto answer = raw.read();
    CHECK(answer.opcode == 0x1);
    CHECK(json::parse(answer.payload)["response"]["ok"] == true);
  }
  SECTION("the client closes: the server answers its close frame and ends the connection") {
    RawWs raw(server.port());
    raw.send(ws_client_frame(0x8, std::string("\x03\xe8", 2) + "bye"));
    CHECK(raw.read().close_code() == 1000);
    CHECK(raw.http.closed_by_peer());
  }
  CHECK(ws.close(1000) == 0);
}

TEST_CASE("the WebSocket handshake: refusals are HTTP answers", "[websocket]") {
  ServerProcess server({plugin_path("bench_app")}, {{"EDRI_CORS_ORIGINS", "https://app.example"}});
  SECTION("101 with the request id") {
    HttpClient c(server.port());
    c.send_raw(ws_upgrade_request("/ws"));
    const auto r = c.read_response(true);
    CHECK(r.status == 101);
    CHECK(r.header("sec-websocket-accept") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");  // RFC 6455 section 1.3
    CHECK_FALSE(r.header("x-request-id").empty());
  }
  SECTION("a plain GET of the endpoint: 426") {
    const auto r = http_get(server.port(), "/ws");
    CHECK(r.status == 426);
    CHECK(r.header("upgrade") == "websocket");
  }
  SECTION("an unknown version: 426 naming 13") {
    HttpClient c(server.port());
    std::string req = ws_upgrade_request("/ws");
    req.replace(req.find("Version: 13"), 11, "Version: 12");
    c.send_raw(req);
    const auto r = c.read_response();
    CHECK(r.status == 426);
    CHECK(r.header("sec-websocket-version") == "13");
  }
  SECTION("no key: 400") {
    HttpClient c(server.port());
    std::string req = ws_upgrade_request("/ws");
    req.erase(req.find("Sec-WebSocket-Key"), req.find("Sec-WebSocket-Version") - req.find("Sec-WebSocket-Key"));
    c.send_raw(req);
    CHECK(c.read_response().status == 400);
  }
  SECTION("a page of another origin: 403; an allowed one: 101") {
    HttpClient c(server.port());
    c.send_raw(ws_upgrade_request("/ws", "Origin: https://evil.example\r\n"));
    CHECK(c.read_response().status == 403);
    WsClient ok(server.port(), "/ws", {{"Origin", "https://app.example"}});
    CHECK(ok.command({{"command", "noop"}})["response"]["ok"] == true);
  }
  SECTION("an upgrade behind an unanswered request: that one is answered, then 400") {
    HttpClient c(server.port());
    c.send_raw("GET /noop HTTP/1.1\r\nHost: x\r\n\r\n" + ws_upgrade_request("/ws"));
    CHECK(c.read_response().status == 200);
    CHECK(c.read_response().status == 400);
    CHECK(c.closed_by_peer());
  }
  SECTION("an upgrade elsewhere is ignored: plain HTTP goes on") {
    HttpClient c(server.port());
    std::string req = ws_upgrade_request("/noop");
    c.send_raw(req + "GET /noop HTTP/1.1\r\nHost: x\r\n\r\n");
    CHECK(c.read_response().status == 200);
    CHECK(c.read_response().status == 200);
  }
  require_alive(server);
}

TEST_CASE("WebSocket over TLS", "[websocket][tls]") {
  SelfSignedCertificate cert;
  ServerProcess server({plugin_path("bench_app")},
                       {{"EDRI_SSL_CERTIFICATE", cert.certificate}, {"EDRI_SSL_KEY", cert.key}});
  TlsClient c(server.port());
  c.send_raw(ws_upgrade_request("/ws"));
  const auto head = c.read_until("\r\n\r\n");
  REQUIRE(head.rfind("HTTP/1.1 101", 0) == 0);
  auto read = [&](std::size_t n) { return c.read_bytes(n); };
  c.send_raw(ws_client_frame(0x1, R"({"command":"echo","value":"secret"})"));
  auto f = ws_read_frame(read);
  CHECK(json::parse(f.payload) == json{{"command", "echo"}, {"response", {{"value", "secret"}}}});
  // A large answer spans several TLS records.
  const std::string big(100000, 'b');
  c.send_raw(ws_client_frame(0x1, json{{"command", "echo"}, {"value", big}}.dump()));
  f = ws_read_frame(read);
  CHECK(json::parse(f.payload)["response"]["value"] == big);
  c.send_raw(ws_client_frame(0x8, std::string("\x03\xe8", 2)));
  CHECK(ws_read_frame(read).close_code() == 1000);
}
