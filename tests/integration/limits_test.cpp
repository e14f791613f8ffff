// The limits a client cannot push past, each set small here so the test can
// reach it: header count (431), slow request heads (408), idle connections,
// and the number of connections (503).
#include <catch2/catch.hpp>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "support/http_client.hpp"
#include "support/server_process.hpp"
#include "support/test_helpers.hpp"

using namespace edri::test;
using namespace std::chrono_literals;

TEST_CASE("EDRI_MAX_HEADER_COUNT: one header field too many is a 431", "[limits]") {
  ServerProcess server({test_plugin_path("test_app")}, {{"EDRI_MAX_HEADER_COUNT", "5"}});
  auto with_headers = [&](int n) {
    std::string req = "GET /hello/x HTTP/1.1\r\nHost: x\r\n";
    for (int i = 1; i < n; ++i) req += "X-H" + std::to_string(i) + ": v\r\n";
    HttpClient c(server.port());
    c.send_raw(req + "\r\n");
    return c.read_response();
  };
  CHECK(with_headers(5).status == 200);
  const auto r = with_headers(6);
  CHECK(r.status == 431);
  CHECK(r.header("connection") == "close");
}

TEST_CASE("EDRI_HEADER_TIMEOUT: a request head that trickles in is a 408, a silent connection is closed",
          "[limits][alone]") {
  ServerProcess server({test_plugin_path("test_app")}, {{"EDRI_HEADER_TIMEOUT", "1"}});
  SECTION("slowloris") {
    HttpClient c(server.port(), 5000);
    c.send_raw("GET /hello/slow HTTP/1.1\r\nHost: x\r\n");
    const auto start = std::chrono::steady_clock::now();
    // A header line now and then keeps the connection busy, never complete.
    std::thread trickle([&] {
      for (int i = 0; i < 12; ++i) {
        std::this_thread::sleep_for(250ms);
        try {
          c.send_raw("X-Slow-" + std::to_string(i) + ": 1\r\n");
        } catch (const std::exception&) {
          return;  // closed by the server
        }
      }
    });
    const auto r = c.read_response();
    trickle.join();
    CHECK(r.status == 408);
    CHECK(r.header("connection") == "close");
    CHECK(std::chrono::steady_clock::now() - start < 2500ms);
  }
  SECTION("a connection that never sends a byte") {
    HttpClient c(server.port(), 5000);
    CHECK(c.closed_by_peer(3000));
  }
  SECTION("a client that sends its request in good time is served") {
    HttpClient c(server.port(), 5000);
    std::this_thread::sleep_for(500ms);
    CHECK(c.get("/hello/ontime").status == 200);
  }
}

TEST_CASE("EDRI_KEEPALIVE_TIMEOUT: an idle keep-alive connection is closed, a busy one is not", "[limits]") {
  ServerProcess server({test_plugin_path("test_app")}, {{"EDRI_KEEPALIVE_TIMEOUT", "1"}});
  HttpClient idle(server.port(), 5000);
  HttpClient busy(server.port(), 5000);
  REQUIRE(idle.get("/hello/idle").status == 200);
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 10; ++i) {
    CHECK(busy.get("/hello/busy").status == 200);
    std::this_thread::sleep_for(300ms);
  }
  CHECK(idle.closed_by_peer(100));
  CHECK(std::chrono::steady_clock::now() - start > 2s);
  // A request in flight is not idleness: /sleep outlasts the timeout.
  HttpClient slow(server.port(), 10000);
  CHECK(slow.get("/sleep/2500").status == 200);
  CHECK(slow.get("/hello/still").status == 200);
}

TEST_CASE("EDRI_MAX_CONNECTIONS: past it a connection gets a 503 and is closed, and freed room is reused", "[limits]") {
  ServerProcess server({test_plugin_path("test_app")}, {{"EDRI_MAX_CONNECTIONS", "3"}});
  std::vector<std::unique_ptr<HttpClient>> open;
  for (int i = 0; i < 3; ++i) {
    open.push_back(std::make_unique<HttpClient>(server.port()));
    REQUIRE(open.back()->get("/hello/in").status == 200);
  }
  {
    HttpClient extra(server.port());
    extra.send_raw("GET /hello/over HTTP/1.1\r\nHost: x\r\n\r\n");
    const auto r = extra.read_response();
    CHECK(r.status == 503);
    CHECK(r.header("retry-after") == "1");
    CHECK(r.header("content-type") == "application/problem+json");
    CHECK(extra.closed_by_peer(1000));
  }
  // The three already open carry on.
  for (auto& c : open) CHECK(c->get("/hello/again").status == 200);
  open.pop_back();
  CHECK(eventually([&] { return http_get(server.port(), "/hello/room").status == 200; }));
  CHECK(server.log().find("refusing connections") != std::string::npos);
}

TEST_CASE("EDRI_MAX_URL_SIZE is a 414, EDRI_MAX_HEADER_SIZE a 431, and each closes the connection", "[limits]") {
  ServerProcess server({test_plugin_path("test_app")}, {{"EDRI_MAX_URL_SIZE", "64"}, {"EDRI_MAX_HEADER_SIZE", "512"}});
  // The status `request` gets on a fresh connection, which must then close.
  auto status_of = [&](const std::string& request) {
    HttpClient c(server.port());
    c.send_raw(request);
    const int status = c.read_response().status;
    CHECK(c.closed_by_peer(1000));
    return status;
  };
  std::string long_url = "GET /hello/";
  long_url.append(80, 'u').append(" HTTP/1.1\r\nHost: x\r\n\r\n");
  CHECK(status_of(long_url) == 414);
  std::string big_header = "GET /hello/x HTTP/1.1\r\nHost: x\r\nX-Big: ";
  big_header.append(600, 'h').append("\r\n\r\n");
  CHECK(status_of(big_header) == 431);
  CHECK(http_get(server.port(), "/hello/" + std::string(40, 'u')).status == 200);
}

TEST_CASE("EDRI_MAX_PIPELINE: a connection past it is read later, and every request is answered in order", "[limits]") {
  ServerProcess server({test_plugin_path("test_app")}, {{"EDRI_MAX_PIPELINE", "2"}});
  HttpClient c(server.port(), 10000);
  std::string burst;
  for (int i = 0; i < 8; ++i)
    burst.append("GET /hello/p").append(std::to_string(i)).append(" HTTP/1.1\r\nHost: x\r\n\r\n");
  c.send_raw(burst);
  for (int i = 0; i < 8; ++i) {
    const auto r = c.read_response();
    CHECK(r.status == 200);
    CHECK(r.body.find("\"p" + std::to_string(i) + '"') != std::string::npos);
  }
}
