// HTTP at the edge: status codes, parameters, errors and connection
// handling, through the real server.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "support/http_client.hpp"
#include "support/server_process.hpp"

using namespace edri::test;
using nlohmann::json;

TEST_CASE("routes, typed parameters and unknown paths", "[http]") {
  ServerProcess server({test_plugin_path("test_app")});
  HttpClient c(server.port());

  auto r = c.get("/hello/world");
  CHECK(r.status == 200);
  CHECK(json::parse(r.body) == json{{"hello", "world"}, {"domain", "test"}});

  r = c.get("/items/42?x=1&y=2");
  CHECK(r.status == 200);
  CHECK(json::parse(r.body) == json{{"id", 42}, {"query", "x=1&y=2"}});

  r = c.get("/hello/two%20words");
  CHECK(json::parse(r.body)["hello"] == "two words");
  CHECK(c.get("/hello/bad%zzescape").status == 400);

  r = c.get("/items/-7");
  CHECK(json::parse(r.body)["id"] == -7);

  SECTION("a parameter of the wrong type matches no route") {
    r = c.get("/items/abc");
    CHECK(r.status == 404);
    CHECK(r.header("content-type") == "application/problem+json");
    CHECK(json::parse(r.body)["status"] == 404);
  }
  SECTION("uuid parameters") {
    CHECK(c.get("/uuid/123e4567-e89b-12d3-a456-426614174000").status == 200);
    CHECK(c.get("/uuid/123e4567").status == 404);
  }
  SECTION("unknown path") {
    r = c.get("/does/not/exist");
    CHECK(r.status == 404);
    CHECK(json::parse(r.body)["title"] == "Not Found");
  }
  SECTION("a method the path does not take is 405 with Allow") {
    r = c.request("POST", "/items/1", "{}");
    CHECK(r.status == 405);
    CHECK(r.header("allow") == "GET, HEAD, OPTIONS");
  }
  SECTION("HEAD is GET without a body") {
    r = c.request("HEAD", "/hello/x");
    CHECK(r.status == 200);
    CHECK(std::stoi(r.header("content-length")) > 0);
    CHECK(r.body.empty());
    CHECK(c.get("/hello/y").status == 200);  // the connection is still in step
  }
  SECTION("status and headers chosen by the handler") {
    r = c.get("/status/201");
    CHECK(r.status == 201);
    CHECK(r.header("x-test") == "yes");
    CHECK(r.body == "status");
  }
  SECTION("JSON body round trip") {
    r = c.request("POST", "/echo", R"({"a":[1,2,3],"b":"x"})");
    CHECK(r.status == 200);
    CHECK(json::parse(r.body) == json{{"a", {1, 2, 3}}, {"b", "x"}});
  }
}

TEST_CASE("malformed HTTP is 400 and the connection is closed", "[http]") {
  ServerProcess server({test_plugin_path("test_app")});
  for (const std::string bad : {"GARBAGE\r\n\r\n", "GET /hello/x HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n",
                                "GET /hello/x HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!",
                                "POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"}) {
    INFO(bad);
    HttpClient c(server.port());
    c.send_raw(bad);
    const auto r = c.read_response();
    CHECK(r.status == 400);
    CHECK(r.header("connection") == "close");
    CHECK(c.closed_by_peer());
  }
  // The server is unharmed.
  CHECK(http_get(server.port(), "/hello/again").status == 200);
}

TEST_CASE("keep-alive, pipelining in order, HTTP/1.0", "[http]") {
  ServerProcess server({test_plugin_path("test_app")});
  SECTION("keep-alive carries many requests") {
    HttpClient c(server.port());
    for (int i = 0; i < 200; ++i) REQUIRE(c.get("/items/" + std::to_string(i)).status == 200);
  }
  SECTION("pipelined requests are answered in order, across managers") {
    HttpClient c(server.port());
    c.send_raw(
        "GET /sleep/150 HTTP/1.1\r\nHost: x\r\n\r\n"
        "GET /other/pid HTTP/1.1\r\nHost: x\r\n\r\n"
        "GET /items/3 HTTP/1.1\r\nHost: x\r\n\r\n");
    CHECK(json::parse(c.read_response().body).contains("slept"));
    CHECK(json::parse(c.read_response().body)["domain"] == "other");
    CHECK(json::parse(c.read_response().body)["id"] == 3);
  }
  SECTION("HTTP/1.0 gets an HTTP/1.0 answer and a close") {
    HttpClient c(server.port());
    c.send_raw("GET /hello/old HTTP/1.0\r\n\r\n");
    const auto r = c.read_response();
    CHECK(r.version == "HTTP/1.0");
    CHECK(r.status == 200);
    CHECK(c.closed_by_peer());
  }
  SECTION("Connection: close is honoured") {
    HttpClient c(server.port());
    c.send_raw("GET /hello/x HTTP/1.1\r\nConnection: close\r\n\r\n");
    CHECK(c.read_response().header("connection") == "close");
    CHECK(c.closed_by_peer());
  }
}

TEST_CASE("handler failures and limits", "[http]") {
  SECTION("a handler that throws is 500 with the detail outside production") {
    ServerProcess server({test_plugin_path("test_app")});
    const auto r = http_get(server.port(), "/throw");
    CHECK(r.status == 500);
    CHECK(r.body.find("secret internal detail") != std::string::npos);
    CHECK(http_get(server.port(), "/hello/still-alive").status == 200);
  }
  SECTION("and without it in production") {
    ServerProcess server({test_plugin_path("test_app")}, {{"ENVIRONMENT", "production"}});
    const auto r = http_get(server.port(), "/throw");
    CHECK(r.status == 500);
    CHECK(r.body.find("secret") == std::string::npos);
  }
  SECTION("a body over EDRI_MAX_BODY_SIZE is 413") {
    ServerProcess server({test_plugin_path("test_app")}, {{"EDRI_MAX_BODY_SIZE", "1000"}});
    HttpClient c(server.port());
    CHECK(c.request("POST", "/echo", "[" + std::string(900, '1') + "]").status == 200);
    CHECK(c.request("POST", "/echo", "\"" + std::string(1200, 'x') + "\"").status == 413);
  }
  SECTION("a handler slower than EDRI_API_RESPONSE_TIMEOUT is 504, and the connection goes on") {
    ServerProcess server({test_plugin_path("test_app")}, {{"EDRI_API_RESPONSE_TIMEOUT", "0.3"}});
    HttpClient c(server.port());
    const auto r = c.get("/sleep/1000");
    CHECK(r.status == 504);
    CHECK(c.get("/other/pid").status == 200);  // another manager, not stuck behind the sleeper
  }
}

TEST_CASE("OPTIONS and Expect: 100-continue", "[http]") {
  ServerProcess server({test_plugin_path("test_app")}, {{"EDRI_MAX_BODY_SIZE", "1000"}});
  HttpClient c(server.port());
  SECTION("OPTIONS on a path lists its methods") {
    auto r = c.request("OPTIONS", "/items/1");
    CHECK(r.status == 204);
    CHECK(r.header("allow") == "GET, HEAD, OPTIONS");
    CHECK(c.request("OPTIONS", "/nope").status == 404);
    c.send_raw("OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n");
    r = c.read_response();
    CHECK(r.status == 204);
    CHECK(r.header("allow").find("POST") != std::string::npos);
  }
  SECTION("the client gets 100 Continue, then sends its body") {
    c.send_raw(
        "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 7\r\n"
        "Expect: 100-continue\r\n\r\n");
    auto interim = c.read_response();
    CHECK(interim.status == 100);
    c.send_raw("[1,2,3]");
    const auto r = c.read_response();
    CHECK(r.status == 200);
    CHECK(r.body == "[1,2,3]");
  }
  SECTION("a body over the limit is refused before it is sent") {
    c.send_raw("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\nExpect: 100-continue\r\n\r\n");
    CHECK(c.read_response().status == 413);
    CHECK(c.closed_by_peer());
  }
  SECTION("an unknown expectation is 417") {
    c.send_raw("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nExpect: teapot\r\n\r\n{}");
    CHECK(c.read_response().status == 417);
  }
}

TEST_CASE("bytes and redirects and empty answers and cookies", "[http]") {
  ServerProcess server({test_plugin_path("test_app")});
  HttpClient c(server.port());
  auto r = c.get("/bytes/1000");
  CHECK(r.status == 200);
  CHECK(r.header("content-type") == "application/octet-stream");
  REQUIRE(r.body.size() == 1000);
  CHECK(static_cast<unsigned char>(r.body[300]) == 300 % 251);
  CHECK(r.body[0] == '\0');

  r = c.get("/go");
  CHECK(r.status == 303);
  CHECK(r.header("location") == "/hello/there");

  r = c.get("/nothing");
  CHECK(r.status == 204);
  CHECK(r.header("content-length").empty());
  CHECK(r.body.empty());
  CHECK(c.get("/hello/after-204").status == 200);  // framing stayed right

  // The client keeps the last of repeated headers: the second cookie.
  r = c.get("/login");
  CHECK(r.status == 200);
  CHECK(r.header("set-cookie") == "theme=dark; Path=/; Max-Age=3600; Secure; SameSite=Strict");

  SECTION("a header value with CR/LF put straight into Response::headers is dropped, never injected") {
    r = c.get("/evil-header");
    CHECK(r.status == 200);
    CHECK(r.header("x-evil").empty());
    CHECK(r.header("set-cookie").empty());
  }
}

TEST_CASE("HTML from Mustache templates in EDRI_TEMPLATE_PATH", "[http]") {
  const std::string templates = test_plugin_dir() + "/templates";
  ServerProcess server({test_plugin_path("test_app")}, {{"EDRI_TEMPLATE_PATH", templates}});
  HttpClient c(server.port());
  auto r = c.get("/page/Ann");
  CHECK(r.status == 200);
  CHECK(r.header("content-type") == "text/html; charset=utf-8");
  CHECK(r.body.find("<title>Greeting</title>") != std::string::npos);
  CHECK(r.body.find("<h1>Hello, Ann!</h1>") != std::string::npos);
  CHECK(r.body.find("<li>one</li><li>two</li><li>3</li>") != std::string::npos);
  CHECK(r.body.find("<p>guest</p>") != std::string::npos);
  // Values are HTML-escaped.
  r = c.get("/page/%3Cscript%3E");
  CHECK(r.body.find("<script>") == std::string::npos);
  CHECK(r.body.find("Hello, &lt;script&gt;!") != std::string::npos);
  SECTION("a missing or broken template is a 500 naming it; the manager lives on") {
    r = c.get("/template/nope.mustache");
    CHECK(r.status == 500);
    CHECK(r.body.find("nope.mustache") != std::string::npos);
    r = c.get("/template/broken.mustache");
    CHECK(r.status == 500);
    CHECK(r.body.find("broken.mustache") != std::string::npos);
    CHECK(c.get("/page/again").status == 200);
  }
}
