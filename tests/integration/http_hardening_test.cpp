// What a hostile-client review found, through the real server: Host values
// that are no host, HTTP/1.x minor versions above 1, unbounded chunk-size
// lines, and JSON routes fed another media type (the cross-site "simple
// request" door).
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "support/http_client.hpp"
#include "support/server_process.hpp"

using namespace edri::test;
using nlohmann::json;

namespace {

// Sends `bytes` on a fresh connection and reads the one answer.
HttpResponse send_one(std::uint16_t port, const std::string& bytes) {
  HttpClient c(port, 3000);
  c.send_raw(bytes);
  return c.read_response();
}

// The answer to `bytes` is `status`, says it closes, and does.
void refused_and_closed(std::uint16_t port, const std::string& bytes, int status) {
  HttpClient c(port, 3000);
  c.send_raw(bytes);
  const auto r = c.read_response();
  CHECK(r.status == status);
  CHECK(r.header("connection") == "close");
  CHECK(c.closed_by_peer(1000));
}

std::string chunked_echo(const std::string& chunks) {
  return "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n" +
         chunks;
}

int created(std::uint16_t port) { return json::parse(http_get(port, "/things/created").body)["created"].get<int>(); }

}  // namespace

TEST_CASE("a Host that is not uri-host [\":\" port] is 400 and closes, an empty one is served", "[http][hardening]") {
  ServerProcess server({test_plugin_path("test_app")});
  for (const char* bad : {"a b", "a@b", "user:pw@x", "x:8o", "[::1"}) {
    INFO(bad);
    refused_and_closed(server.port(), std::string("GET /hello/x HTTP/1.1\r\nHost: ") + bad + "\r\n\r\n", 400);
  }
  for (const char* ok : {"", "example.com:8080", "[::1]:8080", "127.0.0.1"}) {
    INFO(ok);
    CHECK(send_one(server.port(), std::string("GET /hello/x HTTP/1.1\r\nHost: ") + ok + "\r\n\r\n").status == 200);
  }
}

TEST_CASE("HTTP/1.2 is served as HTTP/1.1, and other major versions are 505", "[http][hardening]") {
  ServerProcess server({test_plugin_path("test_app")});
  HttpClient c(server.port(), 3000);
  c.send_raw("GET /hello/x HTTP/1.2\r\nHost: x\r\n\r\n");
  auto r = c.read_response();
  CHECK(r.status == 200);
  CHECK(r.version == "HTTP/1.1");
  CHECK(json::parse(r.body)["hello"] == "x");
  // Kept alive as 1.1 is.
  c.send_raw("GET /hello/y HTTP/1.9\r\nHost: x\r\n\r\n");
  r = c.read_response();
  CHECK(r.status == 200);
  CHECK(r.version == "HTTP/1.1");
  CHECK(r.header("connection") != "close");

  refused_and_closed(server.port(), "GET /hello/x HTTP/3.0\r\nHost: x\r\n\r\n", 505);
  refused_and_closed(server.port(), "GET /hello/x HTTP/1.2\r\n\r\n", 400);  // no Host, as in 1.1
}

TEST_CASE("a chunk-size line over 4096 bytes or a size over 16 digits is 400 and closes", "[http][hardening]") {
  ServerProcess server({test_plugin_path("test_app")});
  const std::size_t line = 4096;
  SECTION("the longest line and the most digits are served") {
    auto r = send_one(server.port(),
                      chunked_echo("2;e=" + std::string(line - 6, 'x') + "\r\n{}\r\n000000000000000\r\n\r\n"));
    CHECK(r.status == 200);
    CHECK(r.body == "{}");
    r = send_one(server.port(), chunked_echo("0000000000000002\r\n{}\r\n0\r\n\r\n"));
    CHECK(r.status == 200);
  }
  SECTION("one byte more is refused") {
    refused_and_closed(server.port(), chunked_echo("2;e=" + std::string(line - 5, 'x') + "\r\n{}\r\n0\r\n\r\n"), 400);
  }
  SECTION("a line that does not end is refused once it is too long") {
    refused_and_closed(server.port(), chunked_echo("2;e=" + std::string(line + 1000, 'x')), 400);
  }
  SECTION("leading zeros count") {
    refused_and_closed(server.port(), chunked_echo("00000000000000002\r\n{}\r\n0\r\n\r\n"), 400);
    refused_and_closed(server.port(), chunked_echo(std::string(1000, '0') + "2\r\n{}\r\n0\r\n\r\n"), 400);
    refused_and_closed(server.port(), chunked_echo("2\r\n{}\r\n" + std::string(17, '0') + "\r\n\r\n"), 400);
  }
  CHECK(http_get(server.port(), "/hello/after").status == 200);
}

TEST_CASE("a route that declares a JSON body answers 415 to a body of another type, or of none", "[http][hardening]") {
  ServerProcess server({test_plugin_path("test_app")});
  HttpClient c(server.port(), 3000);
  const std::string thing = R"({"title":"hello"})";
  auto post = [&](const std::string& path, const std::string& type_header) {
    c.send_raw("POST " + path + " HTTP/1.1\r\nHost: x\r\n" + type_header +
               "Content-Length: " + std::to_string(thing.size()) + "\r\n\r\n" + thing);
    return c.read_response();
  };
  // What a cross-site form or fetch sends without a preflight, and nothing.
  for (const std::string type : {"Content-Type: text/plain\r\n", "Content-Type: application/x-www-form-urlencoded\r\n",
                                 "Content-Type: multipart/form-data; boundary=b\r\n", ""}) {
    INFO(type);
    for (const char* path : {"/things", "/json-echo"}) {
      const auto r = post(path, type);
      CHECK(r.status == 415);
      CHECK(r.header("content-type") == "application/problem+json");
      auto problem = json::parse(r.body);  // not const: a missing key reads as null
      CHECK(problem["status"] == 415);
      CHECK(problem["detail"] == "a JSON body needs Content-Type application/json");
    }
  }
  CHECK(created(server.port()) == 0);  // none reached the handler
  for (const std::string type :
       {"Content-Type: application/json; charset=utf-8\r\n", "Content-Type: APPLICATION/JSON\r\n",
        "Content-Type: application/merge-patch+json\r\n"}) {
    INFO(type);
    CHECK(post("/things", type).status == 201);
  }
  CHECK(created(server.port()) == 3);
  // A route without body fields takes what it is given; the connection is in step.
  const auto r = post("/echo", "Content-Type: text/plain\r\n");
  CHECK(r.status == 200);
  CHECK(r.body == thing);
}

TEST_CASE("the bench app's POST /echo, as the bench sends it, is served", "[http][hardening]") {
  ServerProcess server({plugin_path("bench_app")});
  HttpClient c(server.port(), 3000);
  const auto r = c.request("POST", "/echo", R"({"a":[1,2,3]})");  // Content-Type: application/json
  CHECK(r.status == 200);
  CHECK(r.body == R"({"a":[1,2,3]})");
  c.send_raw("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\n{}");
  CHECK(c.read_response().status == 415);
}
