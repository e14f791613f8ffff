// Declared fields are checked in the listener: a bad request is answered
// 422 (or 400 for JSON that does not parse) naming every bad field, and
// never reaches the manager.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <set>

#include "support/http_client.hpp"
#include "support/server_process.hpp"

using namespace edri::test;
using nlohmann::json;

namespace {
std::set<std::string> bad_fields(const HttpResponse& r) {
  std::set<std::string> out;
  const auto body = json::parse(r.body);
  for (const auto& e : body.at("errors")) out.insert(e.at("field").get<std::string>());
  return out;
}
}  // namespace

TEST_CASE("JSON body fields are bound and checked at the edge", "[binding]") {
  ServerProcess server({test_plugin_path("test_app")});
  HttpClient c(server.port());

  auto r = c.request("POST", "/things", R"({"title":"hello","count":3,"tags":["a"]})");
  CHECK(r.status == 201);
  CHECK(r.header("location") == "/things/1");
  CHECK(json::parse(r.body)["count"] == 3);

  SECTION("every bad field is named, with status 422") {
    r = c.request("POST", "/things", R"({"title":"far too long a title","count":11,"tags":[1,2,3,4]})");
    CHECK(r.status == 422);
    CHECK(r.header("content-type") == "application/problem+json");
    CHECK(bad_fields(r) == std::set<std::string>{"title", "count", "tags"});
    r = c.request("POST", "/things", R"({"count":"three"})");
    CHECK(r.status == 422);
    CHECK(bad_fields(r) == std::set<std::string>{"title", "count"});
    const auto j = json::parse(r.body);
    CHECK(j["status"] == 422);
    CHECK(j["title"] == "Unprocessable Content");
  }
  SECTION("a multi-byte title is measured in characters") {
    CHECK(c.request("POST", "/things", "{\"title\":\"\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\"}").status ==
          201);
  }
  SECTION("JSON that does not parse is 400; JSON that is not an object is 422") {
    r = c.request("POST", "/things", R"({"title":)");
    CHECK(r.status == 400);
    CHECK(json::parse(r.body)["status"] == 400);
    CHECK(c.request("POST", "/things", "").status == 400);
    r = c.request("POST", "/things", R"(["title"])");
    CHECK(r.status == 422);
    CHECK(bad_fields(r) == std::set<std::string>{"body"});
  }
  SECTION("bad requests never reached the manager") {
    for (int i = 0; i < 5; ++i) c.request("POST", "/things", R"({"title":""})");
    c.request("POST", "/things", "not json");
    CHECK(json::parse(c.get("/things/created").body)["created"] == 1);
  }
}

TEST_CASE("query, header and cookie fields, with defaults", "[binding]") {
  ServerProcess server({test_plugin_path("test_app")});
  HttpClient c(server.port());

  auto r = c.get("/search?q=a%20b+c");
  REQUIRE(r.status == 200);
  CHECK(json::parse(r.body) == json{{"q", "a b c"}, {"limit", 20}, {"key", "-"}, {"session", "-"}});

  r = c.request("GET", "/search?limit=5&q=x", {}, "X-API-KEY: k1\r\nCookie: theme=dark; session=s42\r\n");
  REQUIRE(r.status == 200);
  CHECK(json::parse(r.body) == json{{"q", "x"}, {"limit", 5}, {"key", "k1"}, {"session", "s42"}});

  r = c.get("/search?limit=500");
  CHECK(r.status == 422);
  CHECK(bad_fields(r) == std::set<std::string>{"q", "limit"});
  CHECK(c.get("/search?q=x&limit=abc").status == 422);
  CHECK(c.get("/search?q=%zz").status == 422);
}

TEST_CASE("plugin API: integers are 64-bit or refused, a response header follows the one rule", "[binding]") {
  ServerProcess server({test_plugin_path("test_app")});
  HttpClient c(server.port());

  SECTION("int_param reads a 64-bit integer and refuses anything else with 400") {
    CHECK(json::parse(c.get("/int-of/-42").body)["value"] == -42);
    for (const char* bad : {"abc", "99999999999999999999", "12x", "-", "+1"}) {
      INFO(bad);
      const auto r = c.get(std::string("/int-of/") + bad);
      CHECK(r.status == 400);
      CHECK(json::parse(r.body)["detail"] == "path parameter v is not a 64-bit integer");
    }
  }
  SECTION("an {id:int} route matches exactly the 64-bit integers") {
    CHECK(json::parse(c.get("/typed-int/9223372036854775807").body)["value"] == INT64_MAX);
    CHECK(json::parse(c.get("/typed-int/-9223372036854775808").body)["value"] == INT64_MIN);
    CHECK(c.get("/typed-int/9223372036854775808").status == 404);
  }
  SECTION("Response::header refuses CR, LF and NUL: the handler's request is a 500, nothing injected") {
    for (const char* query : {"crlf", "nul"}) {
      INFO(query);
      const auto r = c.get(std::string("/bad-header?") + query);
      CHECK(r.status == 500);
      CHECK(r.header("injected").empty());
      CHECK(r.header("x-bad").empty());
    }
    CHECK(c.get("/int-of/1").status == 200);  // the manager lives on
  }
}
