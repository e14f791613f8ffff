// Streamed answers (Response::stream): made piece by piece by a producer in
// the manager as the client takes them, sent chunked (or with
// Content-Length when declared), the client's pace reaching the producer.
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "support/http_client.hpp"
#include "support/server_process.hpp"
#include "support/test_helpers.hpp"
#include "support/ws_client.hpp"

using namespace edri::test;
using nlohmann::json;

namespace {

long pieces(std::uint16_t port) { return json::parse(http_get(port, "/stream-pieces").body)["pieces"].get<long>(); }

long blob_bytes_used(std::uint16_t port) {
  const auto body = http_get(port, "/metrics").body;
  const std::string key = "edri_blob_bytes{state=\"used\"} ";
  const auto at = body.find(key);
  return at == std::string::npos ? -1 : std::stol(body.substr(at + key.size()));
}

bool is_pattern(const std::string& body, std::size_t n) {
  if (body.size() != n) return false;
  for (std::size_t i = 0; i < n; ++i)
    if (body[i] != static_cast<char>(i % 251)) return false;
  return true;
}

// Waits until `f()` has not changed for `quiet`; its last value.
template <class F>
long settled(F f, std::chrono::milliseconds quiet = std::chrono::milliseconds(700)) {
  long last = f();
  auto since = std::chrono::steady_clock::now();
  const auto deadline = since + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const long now = f();
    if (now != last) {
      last = now;
      since = std::chrono::steady_clock::now();
    } else if (std::chrono::steady_clock::now() - since > quiet) {
      break;
    }
  }
  return last;
}

}  // namespace

TEST_CASE("a streamed answer arrives chunked and intact, in small pieces and in blob-sized ones", "[stream]") {
  ServerProcess server({test_plugin_path("test_app")});
  HttpClient c(server.port(), 20000);
  // 10 kB in pieces of 1000 bytes: each piece inline in the channel record.
  auto r = c.get("/stream/10000/1000");
  REQUIRE(r.status == 200);
  CHECK(r.header("transfer-encoding") == "chunked");
  CHECK(r.header("content-length").empty());
  CHECK(r.header("content-type") == "application/octet-stream");
  CHECK(r.header("x-streamed") == "yes");
  CHECK(r.chunks == 10);
  CHECK(is_pattern(r.body, 10000));
  // 20 MB in 64 KiB pieces (through the blob area): far past the window.
  r = c.get("/stream/20000000/65536");
  REQUIRE(r.status == 200);
  CHECK(r.chunks == (20000000 + 65535) / 65536);
  CHECK(is_pattern(r.body, 20000000));
  // Nothing at all is an empty chunked body.
  r = c.get("/stream/0/100");
  CHECK(r.status == 200);
  CHECK(r.chunks == 0);
  CHECK(r.body.empty());
  // The keep-alive connection goes on, and every blob was freed.
  CHECK(c.get("/hello/there").status == 200);
  CHECK(eventually([&] { return blob_bytes_used(server.port()) == 0; }));
}

TEST_CASE("a stream with a declared length is sent with Content-Length: a producer that falls short is cut",
          "[stream]") {
  ServerProcess server({test_plugin_path("test_app")});
  HttpClient c(server.port(), 20000);
  auto r = c.get("/stream-length/300000");
  REQUIRE(r.status == 200);
  CHECK(r.header("content-length") == "300000");
  CHECK(r.header("transfer-encoding").empty());
  CHECK(r.header("content-type") == "application/x-test");
  CHECK(is_pattern(r.body, 300000));
  CHECK(c.get("/hello/there").status == 200);
  // Declares 10 bytes more than it makes: the client sees the connection
  // close before the promised length, never a body of the wrong length.
  HttpClient s(server.port(), 20000);
  CHECK_THROWS_WITH(s.get("/stream-short/100000"), Catch::Contains("closed in a response body"));
  CHECK(eventually([&] { return server.log().find("not the 100010 it declared") != std::string::npos; }));
  CHECK(http_get(server.port(), "/hello/again").status == 200);
}

TEST_CASE("pipelined requests behind a stream are answered after it, in order", "[stream]") {
  ServerProcess server({test_plugin_path("test_app")});
  HttpClient c(server.port(), 20000);
  c.send_raw(
      "GET /stream/500000/65536 HTTP/1.1\r\nHost: x\r\n\r\n"
      "GET /stream/3000/1000 HTTP/1.1\r\nHost: x\r\n\r\n"
      "GET /hello/there HTTP/1.1\r\nHost: x\r\n\r\n");
  auto a = c.read_response();
  auto b = c.read_response();
  auto d = c.read_response();
  CHECK(is_pattern(a.body, 500000));
  CHECK(is_pattern(b.body, 3000));
  CHECK(d.status == 200);
  CHECK(d.body.find("there") != std::string::npos);
}

TEST_CASE("a producer that has nothing yet is asked again: HEAD and 204 stop it at once", "[stream]") {
  ServerProcess server({test_plugin_path("test_app")});
  HttpClient c(server.port(), 20000);
  auto r = c.get("/stream-idle/20000");
  CHECK(r.chunks == 20);
  CHECK(is_pattern(r.body, 20000));

  const long before = pieces(server.port());
  r = c.request("HEAD", "/stream/100000000/65536");
  CHECK(r.status == 200);
  CHECK(r.header("transfer-encoding") == "chunked");
  CHECK(r.body.empty());
  r = c.get("/stream-status");
  CHECK(r.status == 204);
  CHECK(r.body.empty());
  CHECK(c.get("/hello/there").status == 200);
  // HEAD made at most a window's worth (256 KiB: 4 pieces), then stopped.
  CHECK(settled([&] { return pieces(server.port()); }) - before <= 6);
}

TEST_CASE("an HTTP/1.0 client gets the stream delimited by the connection's close", "[stream]") {
  ServerProcess server({test_plugin_path("test_app")});
  HttpClient c(server.port(), 20000);
  c.send_raw("GET /stream/100000/7000 HTTP/1.0\r\n\r\n");
  auto r = c.read_response();
  CHECK(r.status == 200);
  CHECK(r.version == "HTTP/1.0");
  CHECK(r.header("transfer-encoding").empty());
  CHECK(r.header("connection") == "close");
  CHECK(is_pattern(r.body, 100000));
}

TEST_CASE("a client that stops reading stops the producer: going away ends it", "[stream]") {
  ServerProcess server({test_plugin_path("test_app")});
  const long before = pieces(server.port());
  // 1 GB asked for, nothing read.
  const int fd = connect_small_window(server.port());
  const std::string req = "GET /stream/1000000000/65536 HTTP/1.1\r\nHost: x\r\n\r\n";
  REQUIRE(::send(fd, req.data(), req.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(req.size()));
  const long stalled = settled([&] { return pieces(server.port()); }) - before;
  // What the socket buffers hold plus the window, not the gigabyte (15,000
  // pieces): the producer waits for its client.
  CHECK(stalled > 0);
  CHECK(stalled < 200);
  // Others are served meanwhile.
  CHECK(http_get(server.port(), "/hello/there").status == 200);
  // Reading a little lets it make a little more.
  char buf[65536];
  std::size_t got = 0;
  while (got < 4000000) {
    pollfd p{fd, POLLIN, 0};
    REQUIRE(::poll(&p, 1, 5000) == 1);
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    REQUIRE(n > 0);
    got += static_cast<std::size_t>(n);
  }
  const long resumed = settled([&] { return pieces(server.port()); }) - before;
  CHECK(resumed > stalled);
  CHECK(resumed < stalled + 200);
  // The client goes: the producer is dropped and its blobs freed.
  ::close(fd);
  CHECK(eventually([&] { return blob_bytes_used(server.port()) == 0; }));
  const long after_close = settled([&] { return pieces(server.port()); });
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  CHECK(pieces(server.port()) == after_close);
}

TEST_CASE("a producer that throws cuts its response short: the manager goes on", "[stream]") {
  ServerProcess server({test_plugin_path("test_app")});
  HttpClient c(server.port(), 20000);
  CHECK_THROWS_WITH(c.get("/stream-throw/50000"), Catch::Contains("connection closed"));
  CHECK(eventually([&] { return server.log().find("the producer broke") != std::string::npos; }));
  CHECK(http_get(server.port(), "/hello/there").status == 200);
  auto r = http_get(server.port(), "/stream/1000/100");
  CHECK(is_pattern(r.body, 1000));
}

TEST_CASE("a stream whose producer stalls is closed after the response timeout", "[stream]") {
  ServerProcess server({test_plugin_path("test_app")}, {{"EDRI_API_RESPONSE_TIMEOUT", "1"}});
  HttpClient c(server.port(), 2000);
  c.send_raw("GET /stream-stall HTTP/1.1\r\nHost: x\r\n\r\n");
  // The head and the first piece arrive, then nothing: closed after the
  // timeout and its grace, never left hanging.
  CHECK(c.read_bytes(10).substr(0, 8) == "HTTP/1.1");
  const auto start = std::chrono::steady_clock::now();
  CHECK(c.closed_by_peer(10000));
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(8));
  CHECK(server.log().find("streamed answer stalled") != std::string::npos);
}

TEST_CASE("a WebSocket command's streamed answer arrives as one message", "[stream]") {
  ServerProcess server({test_plugin_path("test_app")});
  WsClient ws(server.port());
  auto m = ws.command({{"command", "stream"}, {"n", 3000}, {"piece", 1000}});
  REQUIRE(m["command"] == "stream");
  // The body is bytes, not JSON: it comes back as one string.
  REQUIRE(m["response"].is_string());
  CHECK(m["response"].get<std::string>().size() >= 3000);
  CHECK(http_get(server.port(), "/hello/there").status == 200);
}
