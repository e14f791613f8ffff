// edri/json_depth.hpp: the nesting of JSON text, measured without parsing,
// and Request::json(), which refuses what is too deep.
#include <catch2/catch.hpp>

#include <edri/json_depth.hpp>
#include <edri/plugin.hpp>

#include <string>

using edri::json_depth;
using edri::json_nests_deeper_than;

namespace {
// `open` repeated `depth` times, then `middle`, then the closers.
std::string nested(std::size_t depth, const std::string& middle = "1", bool objects = false) {
  std::string s;
  for (std::size_t i = 0; i < depth; ++i) s += objects ? R"({"k":)" : "[";
  s += middle;
  for (std::size_t i = 0; i < depth; ++i) s += objects ? "}" : "]";
  return s;
}
}  // namespace

TEST_CASE("depth counts nested arrays and objects, not scalars", "[json_depth]") {
  CHECK(json_depth("") == 0);
  CHECK(json_depth("1") == 0);
  CHECK(json_depth(R"("a")") == 0);
  CHECK(json_depth("null") == 0);
  CHECK(json_depth("[]") == 1);
  CHECK(json_depth(R"({"a":1})") == 1);
  CHECK(json_depth(R"([{"a":[]}])") == 3);
  // The deepest branch counts, not the sum of siblings.
  CHECK(json_depth(R"([[1],[2],{"a":{"b":[3]}}])") == 4);
  CHECK(json_depth(nested(70000)) == 70000);
  CHECK(json_depth(nested(500, "null", true)) == 500);
}

TEST_CASE("brackets inside strings are content, escapes included", "[json_depth]") {
  CHECK(json_depth(R"("[[[[{{{{")") == 0);
  CHECK(json_depth(R"(["]]]]"])") == 1);
  CHECK(json_depth(R"({"[[[": "{{{"})") == 1);
  // An escaped quote does not end the string; an escaped backslash does not
  // escape the quote after it.
  CHECK(json_depth(R"(["a\"[[[["])") == 1);
  CHECK(json_depth(R"(["a\\",[["b"]]])") == 3);
  CHECK(json_depth(R"(["\\\"[[", []])") == 2);
  CHECK(json_depth(R"(["\u005b\u007b[", [[]]])") == 3);
}

TEST_CASE("deeper than a limit: beyond it only, and found early", "[json_depth]") {
  CHECK_FALSE(json_nests_deeper_than("1", 0));
  CHECK(json_nests_deeper_than("[]", 0));
  CHECK_FALSE(json_nests_deeper_than(nested(128), 128));
  CHECK(json_nests_deeper_than(nested(129), 128));
  CHECK(json_nests_deeper_than(nested(129, "1", true), 128));
  // It stops at the first bracket past the limit: the rest may be anything.
  CHECK(json_depth(nested(3) + std::string(1000, '['), 5) == 6);
  CHECK(json_nests_deeper_than("[[[[[[" + std::string("\"unterminated"), 5));
}

TEST_CASE("invalid text gets some answer and no crash", "[json_depth]") {
  // Unbalanced closers do not go below zero; an unterminated string or a
  // trailing backslash ends the scan.
  CHECK(json_depth("]]]]]]][") == 1);
  CHECK(json_depth("}{") == 1);
  CHECK(json_depth(R"(["abc)") == 1);
  CHECK(json_depth("[\"\\") == 1);
  CHECK(json_depth(std::string("[\0[", 3)) == 2);
}

TEST_CASE("Request::json() refuses a body deeper than its limit: 422", "[json_depth]") {
  edri::Request req;
  req.max_json_depth = 10;
  const std::string at_limit = nested(10), beyond = nested(11), far_beyond = nested(70000);
  req.body = at_limit;
  CHECK(req.json().dump() == at_limit);
  for (const std::string* body : {&beyond, &far_beyond}) {
    req.body = *body;
    try {
      (void)req.json();
      FAIL("no exception");
    } catch (const edri::RequestError& e) {
      CHECK(e.status() == 422);
      CHECK(std::string(e.what()) == "the body nests deeper than 10 levels (EDRI_MAX_JSON_DEPTH)");
    }
  }
}

TEST_CASE("Request::json() answers invalid JSON with 400", "[json_depth]") {
  edri::Request req;
  CHECK(req.max_json_depth == edri::kDefaultMaxJsonDepth);
  for (const char* body : {"", "{", R"({"a":})", "[1,]", "nul", "[]x"}) {
    req.body = body;
    try {
      (void)req.json();
      FAIL("no exception for " << body);
    } catch (const edri::RequestError& e) {
      CHECK(e.status() == 400);
      CHECK(std::string(e.what()).rfind("the body is not valid JSON (at byte ", 0) == 0);
    }
  }
}

// What the ceiling promises: the deepest document EDRI_MAX_JSON_DEPTH may
// allow can be serialized, copied and compared (each recurses once per
// level) on a process's main stack. Sanitizer builds use several times
// the stack per level, so there only a tenth of it is tried.
TEST_CASE("a document at the ceiling survives dump, copy and ==", "[json_depth]") {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  constexpr std::size_t depth = edri::kJsonDepthCeiling / 10;
#else
  constexpr std::size_t depth = edri::kJsonDepthCeiling;
#endif
  for (const bool objects : {false, true}) {
    const std::string text = nested(depth, R"(["x",2.5])", objects);
    REQUIRE_FALSE(json_nests_deeper_than(text, depth + 1));
    const auto doc = nlohmann::json::parse(text);
    const nlohmann::json copy = doc;  // NOLINT(performance-unnecessary-copy-initialization): the copy is the test
    CHECK(copy == doc);
    CHECK(doc.dump() == text);
  }
}
