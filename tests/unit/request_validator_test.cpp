#include <catch2/catch.hpp>

#include "listener/request_validator.hpp"

using edri::Field;
using edri::listener::is_json_content_type;
using edri::listener::percent_decode;
using edri::listener::RequestValidator;
using edri::listener::ValidatedFields;

namespace {
// A body declared JSON must say so (415 otherwise): the requests here do.
edri::http::HttpRequest request(std::string body, std::vector<std::pair<std::string, std::string>> headers = {
                                                      {"Content-Type", "application/json"}}) {
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

TEST_CASE("unknown fields pass unless refused, and a message may hold query fields and path parameters",
          "[validator]") {
  const std::vector<edri::FieldDecl> declared{Field("title").string(), Field("limit").in_query().integer().optional()};
  RequestValidator open(declared);
  RequestValidator closed(declared, edri::kDefaultMaxJsonDepth, {true, {"id"}});
  ValidatedFields out;
  open.check("", request(R"({"title":"t","extra":1})"), out);
  CHECK(out.status == 0);
  closed.check("", request(R"({"title":"t","extra":1,"limit":2,"id":3})"), out);
  // In the body's key order (nlohmann's: by name).
  CHECK(fields(out) == std::vector<std::string>{"extra: is not a declared field", "id: is not a declared field",
                                                "limit: is not a declared field"});
  closed.check_message(nlohmann::json{{"title", "t"}, {"limit", 2}, {"id", 3}}, request(""), out);
  CHECK(out.status == 0);
  closed.check_message(nlohmann::json{{"title", "t"}, {"tilte", "t"}}, request(""), out);
  CHECK(fields(out) == std::vector<std::string>{"tilte: is not a declared field"});
  // An event with no fields at all that refuses unknown ones.
  RequestValidator bare({}, edri::kDefaultMaxJsonDepth, {true, {"id"}});
  CHECK_FALSE(bare.empty());
  bare.check_message(nlohmann::json{{"id", 1}}, request(""), out);
  CHECK(out.status == 0);
  bare.check_message(nlohmann::json{{"id", 1}, {"x", 2}}, request(""), out);
  CHECK(fields(out) == std::vector<std::string>{"x: is not a declared field"});
}

TEST_CASE("a body declared JSON must come with a JSON Content-Type, else 415", "[validator]") {
  for (const char* type : {"application/json", "application/json; charset=utf-8", "Application/JSON;charset=UTF-8",
                           " application/json ", "application/merge-patch+json", "application/vnd.api+JSON"})
    CHECK(is_json_content_type(type));
  for (const char* type : {"", "text/plain", "text/plain; charset=utf-8", "application/x-www-form-urlencoded",
                           "multipart/form-data; boundary=x", "application/jsonx", "application/json-seq", "json",
                           "/json", "application/+json", "application/ json", "application/a b+json"})
    CHECK_FALSE(is_json_content_type(type));

  RequestValidator named({Field("title").string()});
  RequestValidator whole({edri::JsonBody()});
  ValidatedFields out;
  for (const RequestValidator* v : {&named, &whole}) {
    // The browser's "simple request" types, and none at all.
    v->check("", request(R"({"title":"a"})", {{"Content-Type", "text/plain"}}), out);
    CHECK(out.status == 415);
    v->check("", request(R"({"title":"a"})", {{"content-type", "application/x-www-form-urlencoded"}}), out);
    CHECK(out.status == 415);
    v->check("", request(R"({"title":"a"})", {}), out);
    CHECK(out.status == 415);
    v->check("", request(R"({"title":"a"})", {{"Content-Type", "application/json; charset=utf-8"}}), out);
    CHECK(out.status == 0);
    v->check("", request(R"({"title":"a"})", {{"Content-Type", "application/merge-patch+json"}}), out);
    CHECK(out.status == 0);
    // No body: nothing to type; an empty body is still not JSON.
    v->check("", request("", {}), out);
    CHECK(out.status == 400);
  }
  // A body that went to a file is typed the same way.
  auto spilled = request("", {{"Content-Type", "text/plain"}});
  spilled.body_size = 5000;
  whole.check("", spilled, out);
  CHECK(out.status == 415);
  auto problem = nlohmann::json::parse(RequestValidator::problem_body(out));
  CHECK(problem["status"] == 415);
  CHECK(problem["title"] == "Unsupported Media Type");
  CHECK(problem["detail"] == "a JSON body needs Content-Type application/json");

  // A route that declares no body field does not look at the type.
  RequestValidator query_only({Field("q").in_query().optional()});
  query_only.check("q=1", request("plain words", {{"Content-Type", "text/plain"}}), out);
  CHECK(out.status == 0);
}

TEST_CASE("a JSON body nesting deeper than the limit is 422 before it is parsed", "[validator][json_depth]") {
  const auto deep = [](std::size_t n) { return std::string(n, '[') + std::string(n, ']'); };
  const auto json_request = [](std::string body) {
    return request(std::move(body), {{"Content-Type", "application/json"}});
  };
  RequestValidator v({edri::JsonBody()}, 4);
  ValidatedFields out;
  v.check("", json_request(deep(4)), out);
  CHECK(out.status == 0);
  v.check("", json_request(deep(5)), out);
  CHECK(out.status == 422);
  CHECK(fields(out) == std::vector<std::string>{"body: nests deeper than 4 levels (EDRI_MAX_JSON_DEPTH)"});
  // Measured first: deep and invalid is 422, like deep and valid.
  v.check("", json_request(std::string(70000, '[')), out);
  CHECK(out.status == 422);
  // Named fields too; the message names the body, not a field.
  RequestValidator named({Field("title").string()}, 2);
  named.check("", json_request(R"({"title":"t","x":[[1]]})"), out);
  CHECK(fields(out) == std::vector<std::string>{"body: nests deeper than 2 levels (EDRI_MAX_JSON_DEPTH)"});
  // The default limit is EDRI_MAX_JSON_DEPTH's.
  RequestValidator dflt({edri::JsonBody()});
  dflt.check("", json_request(deep(edri::kDefaultMaxJsonDepth)), out);
  CHECK(out.status == 0);
  dflt.check("", json_request(deep(edri::kDefaultMaxJsonDepth + 1)), out);
  CHECK(out.status == 422);
  // A route without body fields does not read the body here: the manager's
  // Request::json() limits it.
  RequestValidator query_only({Field("q").in_query().optional()}, 1);
  query_only.check("", json_request(deep(50)), out);
  CHECK(out.status == 0);
}

TEST_CASE("a WebSocket message is measured as text, with the 422 naming it", "[validator][json_depth]") {
  ValidatedFields out;
  CHECK(RequestValidator::depth_ok(R"({"command":"echo","value":[[1]]})", 3, "message", out));
  CHECK(out.status == 0);
  CHECK_FALSE(RequestValidator::depth_ok(R"({"command":"echo","value":[[[1]]]})", 3, "message", out));
  CHECK(out.status == 422);
  CHECK(fields(out) == std::vector<std::string>{"message: nests deeper than 3 levels (EDRI_MAX_JSON_DEPTH)"});
  const auto body = nlohmann::json::parse(RequestValidator::problem_body(out));
  CHECK(body["status"] == 422);
  CHECK(body["errors"][0]["field"] == "message");
}
