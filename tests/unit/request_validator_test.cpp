#include <catch2/catch.hpp>

#include "listener/request_validator.hpp"

using edri::Field;
using edri::listener::percent_decode;
using edri::listener::RequestValidator;
using edri::listener::ValidatedFields;

namespace {
edri::http::HttpRequest request(std::string body, std::vector<std::pair<std::string, std::string>> headers = {}) {
  edri::http::HttpRequest r;
  r.body = std::move(body);
  r.headers = std::move(headers);
  return r;
}
std::vector<std::string> fields(const ValidatedFields& v) {
  std::vector<std::string> out;
  for (const auto& e : v.errors) out.push_back(e.field + ": " + e.message);
  return out;
}
}  // namespace

TEST_CASE("percent-decoding", "[validator]") {
  std::string out;
  CHECK(percent_decode("a%20b+c%2B", out, true));
  CHECK(out == "a b c+");
  CHECK(percent_decode("a+b", out, false));
  CHECK(out == "a+b");
  CHECK_FALSE(percent_decode("%", out, true));
  CHECK_FALSE(percent_decode("%4", out, true));
  CHECK_FALSE(percent_decode("%zz", out, true));
}

TEST_CASE("body fields: types, ranges, required", "[validator]") {
  RequestValidator v({Field("title").string().length(1, 5), Field("n").integer().range(0, 9).optional(),
                      Field("x").number().optional(), Field("ok").boolean().optional(), Field("id").uuid().optional()});
  ValidatedFields out;
  v.check("", request(R"({"title":"abc","n":3,"x":1.5,"ok":true,"id":"123e4567-e89b-12d3-a456-426614174000"})"), out);
  CHECK(out.status == 0);
  CHECK(out.errors.empty());

  v.check("", request(R"({"title":"abcdef","n":10,"x":"1","ok":1,"id":"nope"})"), out);
  CHECK(out.status == 422);
  CHECK(fields(out) == std::vector<std::string>{"title: must be between 1 and 5 characters long",
                                                "n: must be between 0 and 9", "x: must be a number",
                                                "ok: must be a boolean", "id: must be a UUID"});
  v.check("", request(R"({"n":null})"), out);
  CHECK(fields(out) == std::vector<std::string>{"title: is required"});
  v.check("", request(R"({"title":"a","n":2.5})"), out);
  CHECK(fields(out) == std::vector<std::string>{"n: must be an integer"});
  v.check("", request("{"), out);
  CHECK(out.status == 400);
  v.check("", request("[]"), out);
  CHECK(out.status == 422);
}

TEST_CASE("query, header and cookie fields", "[validator]") {
  RequestValidator v({Field("limit").in_query().integer().range(1, 100).default_to(20),
                      Field("offset").in_query().integer().range(0, 1e9).default_to(0),
                      Field("q").in_query().string().optional(), Field("X-Token").in_header().string().length(2, 8),
                      Field("sid").in_cookie().optional()});
  ValidatedFields out;
  v.check("q=caf%C3%A9&limit=7", request("", {{"x-token", "abc"}, {"Cookie", "a=1; sid=\"zz\""}}), out);
  REQUIRE(out.status == 0);
  CHECK(out.query == std::vector<std::pair<std::string, std::string>>{{"limit", "7"}, {"offset", "0"}, {"q", "café"}});
  CHECK(out.headers == std::vector<std::pair<std::string, std::string>>{{"x-token", "abc"}});
  CHECK(out.cookies == std::vector<std::pair<std::string, std::string>>{{"sid", "zz"}});

  v.check("limit=0&offset=-1", request(""), out);
  CHECK(fields(out) == std::vector<std::string>{"limit: must be between 1 and 100",
                                                "offset: must be between 0 and 1000000000", "X-Token: is required"});
}

TEST_CASE("a whole-body JSON declaration takes any JSON value", "[validator]") {
  RequestValidator any({edri::JsonBody()});
  ValidatedFields out;
  for (const char* ok : {"[1,2]", "\"s\"", "3", "{\"a\":1}", "null"}) {
    any.check("", request(ok), out);
    CHECK(out.status == 0);
  }
  any.check("", request("{"), out);
  CHECK(out.status == 400);
  RequestValidator arrays({edri::JsonBody().array()});
  arrays.check("", request("{}"), out);
  CHECK(fields(out) == std::vector<std::string>{"body: must be an array"});
}

TEST_CASE("a WebSocket message is checked like a request", "[validator]") {
  RequestValidator v({Field("title").string().length(1, 5),
                      Field("limit").in_query().integer().range(1, 10).default_to(3),
                      Field("x-key").in_header().string(), Field("sid").in_cookie().optional()});
  const auto upgrade = request("", {{"X-Key", "k1"}, {"Cookie", "a=1; sid=abc"}});
  ValidatedFields out;
  v.check_message(nlohmann::json{{"command", "c"}, {"title", "hi"}}, upgrade, out);
  CHECK(out.status == 0);
  REQUIRE(out.query.size() == 1);
  CHECK(out.query[0] == std::pair<std::string, std::string>{"limit", "3"});  // the default
  CHECK(out.headers[0].second == "k1");
  CHECK(out.cookies[0].second == "abc");
  // A query field may come as a JSON number or a string; it is checked as text.
  v.check_message(nlohmann::json{{"title", "hi"}, {"limit", 7}}, upgrade, out);
  CHECK(out.query[0].second == "7");
  v.check_message(nlohmann::json{{"title", "too long"}, {"limit", {1}}}, request(""), out);
  CHECK(out.status == 422);
  CHECK(fields(out) == std::vector<std::string>{"title: must be between 1 and 5 characters long",
                                                "limit: must be a single value", "x-key: is required"});
  RequestValidator whole({edri::JsonBody().object()});
  whole.check_message(nlohmann::json{{"command", "c"}, {"value", 1}}, request(""), out);
  CHECK(out.status == 0);
}
