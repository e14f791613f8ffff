// The PROXY protocol (docs/security.md): with EDRI_PROXY_PROTOCOL=on, a
// connection from a trusted proxy begins with a v1 or v2 header whose
// source becomes the client's address, on every protocol and before TLS;
// one without a valid header is closed unanswered; from any other peer
// such a header is bad HTTP, never a way to name oneself. The handler is
// tests/plugins/gate.cpp's whoami, which echoes req.client_address.
#include <arpa/inet.h>
#include <netinet/in.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "support/h2_connection.hpp"
#include "support/http_client.hpp"
#include "support/nginx_stream.hpp"
#include "support/server_process.hpp"
#include "support/test_helpers.hpp"
#include "support/tls_client.hpp"
#include "support/ws_client.hpp"

using namespace edri::test;
using namespace std::chrono_literals;
using nlohmann::json;

namespace {

const std::string kWhoami = "GET /gate/whoami HTTP/1.1\r\nHost: x\r\n\r\n";
const std::string kV1 = "PROXY TCP4 203.0.113.7 127.0.0.1 51234 8080\r\n";

std::string be16(std::size_t n) { return {static_cast<char>(n >> 8), static_cast<char>(n & 0xff)}; }

// A v2 PROXY header naming `source` (IPv6), with a TLV to skip; `local`:
// the LOCAL command instead (a proxy's own health check).
std::string v2(const char* source, bool local = false) {
  unsigned char src[16], dst[16];
  ::inet_pton(AF_INET6, source, src);
  ::inet_pton(AF_INET6, "2001:db8::1", dst);
  const std::string addresses = std::string(reinterpret_cast<const char*>(src), 16) +
                                std::string(reinterpret_cast<const char*>(dst), 16) + be16(51234) + be16(443);
  const std::string body = addresses + "\x05" + be16(4) + "id-1";
  return std::string("\r\n\r\n\0\r\nQUIT\n", 12) + (local ? '\x20' : '\x21') + '\x21' + be16(body.size()) + body;
}

std::map<std::string, std::string> proxied(const std::string& trusted, std::map<std::string, std::string> more = {}) {
  more.emplace("EDRI_TEST_GATE", "pass");
  more.emplace("EDRI_TRUSTED_PROXIES", trusted);
  more.emplace("EDRI_PROXY_PROTOCOL", "on");
  return more;
}

// What whoami says of a connection that sends `preamble` before it.
json whoami(std::uint16_t port, const std::string& preamble, const std::string& headers = {}) {
  HttpClient c(port);
  c.send_raw(preamble + "GET /gate/whoami HTTP/1.1\r\nHost: x\r\n" + headers + "\r\n");
  return json::parse(c.read_response().body);
}

// A connection that sent `bytes` is closed with not one byte of answer.
bool closed_unanswered(std::uint16_t port, const std::string& bytes, int timeout_ms = 2000) {
  HttpClient c(port);
  if (!bytes.empty()) c.send_raw(bytes);
  return c.closed_by_peer(timeout_ms) && c.unread().empty();
}

}  // namespace

TEST_CASE("proxy protocol: v1 and v2 headers from a trusted proxy name the client on HTTP/1.1 and HTTP/2",
          "[proxy_protocol]") {
  ServerProcess server({test_plugin_path("gate")}, proxied("127.0.0.1"));
  const auto port = server.port();
  auto me = whoami(port, kV1);
  CHECK(me["client"] == "203.0.113.7");
  CHECK(me["protocol"] == "http/1.1");
  CHECK(whoami(port, v2("2001:db8:0:0::42"))["client"] == "2001:db8::42");
  CHECK(whoami(port, v2("::ffff:198.51.100.3"))["client"] == "198.51.100.3");
  // LOCAL and UNKNOWN name no client: the peer stands.
  CHECK(whoami(port, v2("2001:db8::42", true))["client"] == "127.0.0.1");
  CHECK(whoami(port, "PROXY UNKNOWN\r\n")["client"] == "127.0.0.1");
  // The forwarding headers are read from what the header named: believed
  // when it is a trusted proxy, not otherwise.
  CHECK(whoami(port, kV1, "X-Forwarded-For: 198.51.100.9\r\n")["client"] == "203.0.113.7");
  CHECK(whoami(port, "PROXY TCP4 127.0.0.1 127.0.0.1 1 2\r\n", "X-Forwarded-For: 198.51.100.9\r\n")["client"] ==
        "198.51.100.9");
  SECTION("a header split over several reads, and keep-alive after it") {
    HttpClient c(port);
    for (const auto& piece : {kV1.substr(0, 3), kV1.substr(3, 15), kV1.substr(18, kV1.size() - 19)}) {
      c.send_raw(piece);
      std::this_thread::sleep_for(30ms);
    }
    c.send_raw(kV1.substr(kV1.size() - 1) + kWhoami);
    CHECK(json::parse(c.read_response().body)["client"] == "203.0.113.7");
    c.send_raw(kWhoami);  // the next request has no header of its own
    CHECK(json::parse(c.read_response().body)["client"] == "203.0.113.7");
  }
  SECTION("HTTP/2 after a v2 header") {
    H2Connection h2(port);
    REQUIRE(h2.send_raw(v2("2001:db8::42")));
    const auto id = h2.client.request("GET", "/gate/whoami");
    REQUIRE(h2.run_until([&] { return h2.finished(id); }));
    me = json::parse(h2.client.answers[id].body);
    CHECK(me["client"] == "2001:db8::42");
    CHECK(me["protocol"] == "h2");
  }
}

TEST_CASE("proxy protocol: a trusted proxy's connection without a valid header is closed unanswered",
          "[proxy_protocol]") {
  ServerProcess server({test_plugin_path("gate")}, proxied("127.0.0.1", {{"EDRI_HEADER_TIMEOUT", "1"}}));
  const auto port = server.port();
  CHECK(closed_unanswered(port, kWhoami));
  CHECK(closed_unanswered(port, "PROXY TCP4 203.0.113.7 127.0.0.1 65536 80\r\n" + kWhoami));
  std::string version1 = v2("2001:db8::42");
  version1[12] = '\x11';  // version 1 in v2's form
  CHECK(closed_unanswered(port, version1 + kWhoami));
  // Half a header, then nothing: EDRI_HEADER_TIMEOUT (1 s, swept each second).
  CHECK(closed_unanswered(port, kV1.substr(0, 20), 4000));
  // No request reached a handler; each refusal was counted.
  HttpClient c(port);
  c.send_raw("PROXY UNKNOWN\r\nGET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
  const std::string metrics = c.read_response().body;
  CHECK(metrics.find("edri_proxy_headers_refused_total 4\n") != std::string::npos);
  CHECK(metrics.find("/gate/whoami") == std::string::npos);
}

TEST_CASE("proxy protocol: the header comes before the TLS handshake", "[proxy_protocol][tls]") {
  SelfSignedCertificate cert;
  ServerProcess server({test_plugin_path("gate")},
                       proxied("127.0.0.1", {{"EDRI_SSL_CERTIFICATE", cert.certificate}, {"EDRI_SSL_KEY", cert.key}}));
  TlsClient c(server.port(), kV1);
  CHECK(json::parse(c.request("GET", "/gate/whoami").body)["client"] == "203.0.113.7");
  TlsClient v2_first(server.port(), v2("2001:db8::42"));
  CHECK(json::parse(v2_first.request("GET", "/gate/whoami").body)["client"] == "2001:db8::42");
  // A handshake where the header belongs is no header.
  CHECK_THROWS(TlsClient(server.port()));
}

TEST_CASE("proxy protocol: from a peer that is not a trusted proxy a header is bad HTTP", "[proxy_protocol]") {
  ServerProcess server({test_plugin_path("gate")}, proxied("10.0.0.0/8"));
  HttpClient c(server.port());
  c.send_raw(kV1 + kWhoami);
  CHECK(c.read_response().status == 400);
  CHECK(whoami(server.port(), {})["client"] == "127.0.0.1");
}

TEST_CASE("proxy protocol: on without trusted proxies stops start-up", "[proxy_protocol][startup]") {
  const auto r = run_server_to_exit({}, {{"EDRI_PLUGINS", test_plugin_path("gate")}, {"EDRI_PROXY_PROTOCOL", "on"}});
  CHECK(r.status == 2);
  CHECK(r.err.find("EDRI_PROXY_PROTOCOL=on needs EDRI_TRUSTED_PROXIES") != std::string::npos);
  CHECK(run_server_to_exit({"--print-config"}, {{"EDRI_PROXY_PROTOCOL", "yes"}}).status == 2);
}

TEST_CASE("proxy protocol: behind nginx's stream proxy with proxy_protocol on", "[proxy_protocol][nginx]") {
  if (const auto missing = NginxStream::missing(); !missing.empty()) {
    WARN("skipped: not installed: " << missing << " (scripts/setup.sh installs it)");
    return;
  }
  // nginx connects from 127.0.0.3, the one trusted proxy; the test's own
  // connections come from 127.0.0.1, which nginx names in its header.
  ServerProcess server({test_plugin_path("gate")}, proxied("127.0.0.3"));
  NginxStream nginx(server.port(), "127.0.0.3");
  auto me = whoami(nginx.port(), {});
  CHECK(me["client"] == "127.0.0.1");
  CHECK(me["protocol"] == "http/1.1");
  WsClient ws(nginx.port());
  me = ws.command({{"command", "whoami"}})["response"];
  CHECK(me["client"] == "127.0.0.1");
  CHECK(me["protocol"] == "websocket");
  // Straight to the server, 127.0.0.1 is a client like any other.
  CHECK(whoami(server.port(), {})["client"] == "127.0.0.1");
}
