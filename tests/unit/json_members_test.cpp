// Response::json({{"name", value}, ...}) writes its object as text
// (json_members.hpp); these check that text against what nlohmann made of
// the same braced list before, and that C++ picks the text overload only
// for a list of members.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include <edri/response.hpp>

namespace {

std::string dom(const nlohmann::json& value) { return value.dump(); }

// What Response::json's callers got before: the DOM, then its text.
#define CHECK_SAME_AS_DOM(...) CHECK(std::string(edri::Response::json(__VA_ARGS__).body_bytes()) == dom(__VA_ARGS__))

std::string thrown(auto&& make) {
  try {
    make();
  } catch (const nlohmann::json::exception& e) {
    return e.what();
  }
  return "nothing thrown";
}

enum class Colour { red, green };
struct Point {
  int x = 0;
  int y = 0;
};
void to_json(nlohmann::json& j, const Point& p) { j = {{"x", p.x}, {"y", p.y}}; }

}  // namespace

// Response::json's two overloads, told apart by what they return (only
// declared: decltype does not call them).
namespace overloads {
struct Dom {};
struct Members {};
Dom pick(const nlohmann::json&, edri::Status = edri::Status::Ok);
Members pick(std::initializer_list<edri::JsonMember>, edri::Status = edri::Status::Ok);
}  // namespace overloads
using overloads::Dom;
using overloads::Members;
using overloads::pick;

TEST_CASE("a braced list of members is written as nlohmann wrote its DOM", "[json]") {
  const std::string s = "text";
  const std::string_view v = "view";
  const nlohmann::json nested = {{"b", 1}, {"a", {1, 2}}};
  CHECK_SAME_AS_DOM({{"id", 7}, {"ok", true}});
  CHECK_SAME_AS_DOM({{"ok", false}, {"id", -7}, {"null", nullptr}});
  CHECK_SAME_AS_DOM({{"s", s}, {"v", v}, {"c", "chars"}, {"t", std::string("temporary")}});
  CHECK_SAME_AS_DOM({{"min", std::numeric_limits<std::int64_t>::min()},
                     {"max", std::numeric_limits<std::uint64_t>::max()},
                     {"zero", 0u},
                     {"short", static_cast<short>(-3)}});
  CHECK_SAME_AS_DOM(
      {{"char", 'a'}, {"uchar", static_cast<unsigned char>(200)}, {"schar", static_cast<signed char>(-3)}});
  CHECK_SAME_AS_DOM({{"d", 1.0}, {"f", 0.1}, {"big", 1e300}, {"nan", std::nan("")}});
  CHECK_SAME_AS_DOM({{"colour", Colour::green}, {"point", Point{1, 2}}, {"status", edri::Status::NotFound}});
  CHECK_SAME_AS_DOM({{"status", edri::Status(404)}, {"one", {edri::Status(201)}}});
  CHECK_SAME_AS_DOM({{"list", {1, 2, 3}}, {"object", {{"x", 1}}}, {"nested", nested}, {"empty", {}}});
  CHECK_SAME_AS_DOM({{"vector", std::vector<int>{1, 2}}, {"strings", std::vector<std::string>{"a", "b"}}});
  CHECK_SAME_AS_DOM({{"only", 1}});
  CHECK_SAME_AS_DOM({});
}

TEST_CASE("members are written in nlohmann's key order, the first of a repeated key kept", "[json]") {
  CHECK_SAME_AS_DOM({{"b", 1}, {"a", 2}, {"b", 3}, {"a", 4}, {"c", 5}});
  CHECK_SAME_AS_DOM({{"\xc3\xa9", 1}, {"z", 2}, {"A", 3}, {"", 4}, {"a\x7f", 5}, {"a", 6}});
  CHECK(edri::Response::json({{"z", 1}, {"a", 2}}).body_bytes() == R"({"a":2,"z":1})");
  // More members than the writer sorts on its stack.
  CHECK_SAME_AS_DOM({{"r", 1},
                     {"q", 2},
                     {"p", 3},
                     {"o", 4},
                     {"n", 5},
                     {"m", 6},
                     {"l", 7},
                     {"k", 8},
                     {"j", 9},
                     {"i", 10},
                     {"h", 11},
                     {"g", 12},
                     {"f", 13},
                     {"e", 14},
                     {"d", 15},
                     {"c", 16},
                     {"b", 17},
                     {"a", 18},
                     {"b", 19}});
}

TEST_CASE("strings are escaped as nlohmann escapes them, keys too", "[json]") {
  CHECK_SAME_AS_DOM({{"quote", "say \"hi\""}, {"back\\slash", "a\\b"}, {"slash", "a/b"}});
  CHECK_SAME_AS_DOM(
      {{"controls", "\b\f\n\r\t\x01\x1f"}, {"del", "\x7f"}, {"utf8", "h\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"}});
  CHECK_SAME_AS_DOM({{std::string("nul\0in", 6), std::string("a\0b", 3)}});
  CHECK(edri::Response::json({{"k", "a\"\n"}}).body_bytes() == R"({"k":"a\"\n"})");
}

TEST_CASE("bytes that are not UTF-8 throw what nlohmann's dump threw", "[json]") {
  const auto bad_value = thrown([] { return dom({{"ok", 1}, {"bad", "x\xff"}}); });
  CHECK(bad_value.find("type_error.316") != std::string::npos);
  CHECK(thrown([] { return edri::Response::json({{"ok", 1}, {"bad", "x\xff"}}); }) == bad_value);
  const auto bad_key = thrown([] { return dom({{"\xc3", 1}}); });
  CHECK(bad_key.find("type_error.316") != std::string::npos);
  CHECK(thrown([] { return edri::Response::json({{"\xc3", 1}}); }) == bad_key);
}

TEST_CASE("the status and content type of a braced list's answer", "[json]") {
  const auto r = edri::Response::json({{"error", "gone"}}, edri::Status::Conflict);
  CHECK(r.status == edri::Status::Conflict);
  CHECK(r.content_type == "application/json");
  const auto p = edri::Response::problem(edri::Status::BadRequest, "Bad \"Request\"", "line\nbreak");
  CHECK(p.body_bytes() == dom({{"type", "about:blank"},
                               {"title", "Bad \"Request\""},
                               {"status", edri::Status::BadRequest},
                               {"detail", "line\nbreak"}}));
  CHECK(p.content_type == "application/problem+json");
}

// Which overload C++ picks: only lists whose every element is a member.
static_assert(std::is_same_v<decltype(pick({{"id", 1}, {"ok", true}})), Members>);
static_assert(std::is_same_v<decltype(pick({{"id", 1}}, edri::Status::Created)), Members>);
static_assert(std::is_same_v<decltype(pick({{"list", {1, 2}}, {"n", nullptr}})), Members>);
static_assert(std::is_same_v<decltype(pick({{"status", edri::Status(404)}, {"one", {404}}})), Members>);
static_assert(std::is_same_v<decltype(pick({1, 2, 3})), Dom>);
static_assert(std::is_same_v<decltype(pick({"a", "b"})), Dom>);
static_assert(std::is_same_v<decltype(pick({{"a", 1}, {2, 3}})), Dom>);
static_assert(std::is_same_v<decltype(pick({{"a", 1}, {"b", 2, 3}})), Dom>);
static_assert(std::is_same_v<decltype(pick(nlohmann::json::object())), Dom>);
static_assert(std::is_same_v<decltype(pick(std::string("text"))), Dom>);
