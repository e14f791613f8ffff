// Declared fields are checked in the listener: a bad request is answered
// 422 (or 400 for JSON that does not parse) naming every bad field, and
// never reaches the manager.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <set>

#include "support/http_client.hpp"
#include "support/server_process.hpp"
#include "support/ws_client.hpp"

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

TEST_CASE("nested objects, arrays of objects, enums, patterns and null are checked at the edge by path", "[binding]") {
  ServerProcess server({test_plugin_path("test_app")});
  HttpClient c(server.port());
  const json good = {{"state", "open"},
                     {"sku", "ABC-1234"},
                     {"note", nullptr},
                     {"buyer", {{"name", "Ada"}, {"email", "ada@example.org"}}},
                     {"lines", {{{"qty", 1}}, {{"qty", 99}, {"code", "x"}}}}};
  auto r = c.request("POST", "/orders?priority=3", good.dump(), "Content-Type: application/json\r\n");
  REQUIRE(r.status == 201);
  CHECK(json::parse(r.body)["order"] == good);
  CHECK(json::parse(r.body)["priority"] == 3);
  CHECK(json::parse(c.request("POST", "/orders", good.dump(), "Content-Type: application/json\r\n").body)["priority"] ==
        2);

  // Every rule broken once, each named by its path, in declaration order.
  const json bad = {{"state", "lost"},
                    {"sku", "abc-12345"},
                    {"buyer", {{"name", ""}, {"email", "nobody"}}},
                    {"lines", {{{"qty", 1}}, {{"qty", 0}}, {{"code", 5}}, "x"}}};
  r = c.request("POST", "/orders?priority=7", bad.dump(), "Content-Type: application/json\r\n");
  REQUIRE(r.status == 422);
  std::vector<std::string> said;
  const json answer = json::parse(r.body);
  for (const auto& e : answer.at("errors"))
    said.push_back(e.at("field").get<std::string>() + ": " + e.at("message").get<std::string>());
  CHECK(said == std::vector<std::string>{
                    "state: must be one of \"open\", \"paid\"", "sku: must match the pattern ^[A-Z]{3}-[0-9]{4}$",
                    "note: is required", "buyer.name: must be between 1 and 40 characters long",
                    "buyer.email: must match the pattern @", "lines[1].qty: must be between 1 and 99",
                    "lines[2].qty: is required", "lines[2].code: must be a string", "lines[3]: must be an object",
                    "priority: must be one of 1, 2, 3"});
  // No item at all, past the limit, and twenty thousand bad items answered in
  // a short list.
  json empty = good;
  empty["lines"] = json::array();
  r = c.request("POST", "/orders", empty.dump(), "Content-Type: application/json\r\n");
  CHECK(bad_fields(r) == std::set<std::string>{"lines"});
  json many = good;
  many["lines"] = json::array();
  for (int i = 0; i < 20000; ++i) many["lines"].push_back({{"qty", -1}});
  r = c.request("POST", "/orders", many.dump(), "Content-Type: application/json\r\n");
  REQUIRE(r.status == 422);
  const auto listed = json::parse(r.body).at("errors");
  CHECK(listed.size() == 65);
  CHECK(listed[0]["field"] == "lines");
  CHECK(listed[1]["field"] == "lines[0].qty");
  CHECK(listed[64]["message"] == "more fields are invalid; the first 64 are listed");

  // The same rules for a WebSocket command.
  WsClient ws(server.port());
  json command = bad;
  command["command"] = "orders.create";
  command["priority"] = 7;
  const json m = ws.command(command);
  REQUIRE(m["error"]["status"] == 422);
  std::vector<std::string> fields;
  for (const auto& e : m["error"]["errors"]) fields.push_back(e.at("field").get<std::string>());
  CHECK(fields == std::vector<std::string>{"state", "sku", "note", "buyer.name", "buyer.email", "lines[1].qty",
                                           "lines[2].qty", "lines[2].code", "lines[3]", "priority"});
  command = good;
  command["command"] = "orders.create";
  CHECK(ws.command(command)["response"]["order"]["sku"] == "ABC-1234");
}

TEST_CASE("an event that refuses unknown fields names each one, on HTTP and WebSocket", "[binding]") {
  ServerProcess server({test_plugin_path("test_app")});
  HttpClient c(server.port());
  const json good = {
      {"state", "open"}, {"sku", "ABC-1234"}, {"note", "n"}, {"buyer", {{"name", "Ada"}}}, {"lines", {{{"qty", 1}}}}};
  json extra = good;
  extra["sate"] = "open";
  extra["priority"] = 1;  // a query field: in a body it is unknown
  auto r = c.request("POST", "/orders", extra.dump(), "Content-Type: application/json\r\n");
  REQUIRE(r.status == 422);
  CHECK(bad_fields(r) == std::set<std::string>{"sate", "priority"});
  // Nested objects are not closed by it: their members pass as before.
  json deeper = good;
  deeper["buyer"]["nickname"] = "A";
  CHECK(c.request("POST", "/orders", deeper.dump(), "Content-Type: application/json\r\n").status == 201);
  // A command may carry its query fields; anything else is named.
  WsClient ws(server.port());
  json command = good;
  command["command"] = "orders.create";
  command["priority"] = 3;
  CHECK(ws.command(command)["response"]["priority"] == 3);
  command["bogus"] = true;
  const json m = ws.command(command);
  REQUIRE(m["error"]["status"] == 422);
  REQUIRE(m["error"]["errors"].size() == 1);
  CHECK(m["error"]["errors"][0] == json{{"field", "bogus"}, {"message", "is not a declared field"}});
  // Events that did not ask for it still let unknown fields pass.
  CHECK(c.request("POST", "/things", R"({"title":"t","extra":1})", "Content-Type: application/json\r\n").status == 201);
}
