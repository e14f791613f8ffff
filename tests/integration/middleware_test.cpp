// The listener's middleware chain: built-in request id and CORS, then the
// plugins' middleware in order, able to answer early and to add headers.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "support/http_client.hpp"
#include "support/server_process.hpp"
#include "support/test_helpers.hpp"

using namespace edri::test;
using nlohmann::json;

TEST_CASE("plugin middleware runs in order, adds headers and can answer early", "[middleware]") {
  ServerProcess server({test_plugin_path("test_app")});
  HttpClient c(server.port());

  auto r = c.get("/hello/x");
  CHECK(r.status == 200);
  const auto first = r.raw_head.find("X-Order: first"), auth = r.raw_head.find("X-Order: auth");
  REQUIRE(first != std::string::npos);
  REQUIRE(auth != std::string::npos);
  CHECK(first < auth);
  CHECK(r.header("x-status-seen") == "200");

  r = c.get("/private/data");
  CHECK(r.status == 401);
  CHECK(r.header("www-authenticate") == "Bearer");
  CHECK(r.header("x-status-seen") == "401");
  CHECK(json::parse(r.body)["status"] == 401);
  r = c.request("GET", "/private/data", {}, "Authorization: Bearer good\r\n");
  CHECK(r.status == 200);
  // Only the authorised request reached the manager.
  CHECK(json::parse(c.get("/things/created").body)["created"] == 1);

  // Local answers pass through the response side too.
  CHECK(c.get("/no/such/path").header("x-status-seen") == "404");
}

TEST_CASE("every response carries a request id, which the handler sees", "[middleware]") {
  ServerProcess server({test_plugin_path("test_app")});
  HttpClient c(server.port());
  auto r = c.get("/request-id");
  const auto id = r.header("x-request-id");
  CHECK(has_shape(id, "hhhhhhhh-hhhh-hhhhhhhhhhhh"));
  CHECK(json::parse(r.body)["id"] == id);
  CHECK(c.get("/request-id").header("x-request-id") != id);

  r = c.request("GET", "/request-id", {}, "X-Request-Id: from-proxy-42\r\n");
  CHECK(r.header("x-request-id") == "from-proxy-42");
  CHECK(json::parse(r.body)["id"] == "from-proxy-42");
  // An id with characters that do not belong in one is replaced.
  r = c.request("GET", "/request-id", {}, "X-Request-Id: <script>\r\n");
  CHECK(r.header("x-request-id") != "<script>");
  CHECK(!c.get("/no/such").header("x-request-id").empty());

  ServerProcess quiet({test_plugin_path("test_app")}, {{"EDRI_REQUEST_ID", "0"}});
  CHECK(http_get(quiet.port(), "/hello/x").header("x-request-id").empty());
}

TEST_CASE("CORS from the EDRI_CORS_* settings", "[middleware]") {
  SECTION("a listed origin") {
    ServerProcess server(
        {test_plugin_path("test_app")},
        {{"EDRI_CORS_ORIGINS", "http://app.example, http://other.example"}, {"EDRI_CORS_MAX_AGE", "120"}});
    HttpClient c(server.port());
    auto r = c.request("GET", "/hello/x", {}, "Origin: http://app.example\r\n");
    CHECK(r.status == 200);
    CHECK(r.header("access-control-allow-origin") == "http://app.example");
    CHECK(r.header("vary") == "Origin");
    CHECK(r.header("access-control-allow-credentials").empty());

    r = c.request("GET", "/hello/x", {}, "Origin: http://evil.example\r\n");
    CHECK(r.status == 200);
    CHECK(r.header("access-control-allow-origin").empty());

    r = c.request("OPTIONS", "/things", {},
                  "Origin: http://other.example\r\nAccess-Control-Request-Method: POST\r\n"
                  "Access-Control-Request-Headers: content-type\r\n");
    CHECK(r.status == 204);
    CHECK(r.header("access-control-allow-origin") == "http://other.example");
    CHECK(r.header("access-control-allow-methods").find("POST") != std::string::npos);
    CHECK(r.header("access-control-allow-headers") == "Content-Type, Authorization, X-Request-Id");
    CHECK(r.header("access-control-max-age") == "120");

    r = c.request("OPTIONS", "/things", {}, "Origin: http://evil.example\r\nAccess-Control-Request-Method: POST\r\n");
    CHECK(r.status == 403);
    CHECK(r.header("access-control-allow-origin").empty());
  }
  SECTION("any origin, and credentials") {
    ServerProcess any({test_plugin_path("test_app")}, {{"EDRI_CORS_ORIGINS", "*"}});
    CHECK(HttpClient(any.port())
              .request("GET", "/hello/x", {}, "Origin: http://x.example\r\n")
              .header("access-control-allow-origin") == "*");
    ServerProcess cred({test_plugin_path("test_app")}, {{"EDRI_CORS_ORIGINS", "*"}, {"EDRI_CORS_CREDENTIALS", "true"}});
    auto r = HttpClient(cred.port()).request("GET", "/hello/x", {}, "Origin: http://x.example\r\n");
    CHECK(r.header("access-control-allow-origin") == "http://x.example");  // never "*" with credentials
    CHECK(r.header("access-control-allow-credentials") == "true");
  }
  SECTION("a bad origin list stops start-up") {
    const auto r =
        run_server_to_exit({}, {{"EDRI_PLUGINS", test_plugin_path("test_app")}, {"EDRI_CORS_ORIGINS", "app.example"}});
    CHECK(r.status == 2);
    CHECK(r.err.find("EDRI_CORS_ORIGINS") != std::string::npos);
  }
}
