#include <algorithm>
#include <catch2/catch.hpp>

#include "http/route_table.hpp"

using edri::Method;
using edri::http::RouteTable;
using Result = RouteTable::Match::Result;

TEST_CASE("literal and typed routes", "[routes]") {
  RouteTable t;
  t.add(Method::Get, "/noop", 0);
  t.add(Method::Get, "/notes/{id:int}", 1);
  t.add(Method::Put, "/notes/{id:int}", 2);
  t.add(Method::Get, "/notes/latest", 3);
  t.add(Method::Get, "/users/{name}", 4);
  t.add(Method::Get, "/users/{name}/notes/{id:int}", 5);
  t.add(Method::Get, "/things/{u:uuid}", 6);
  t.add(Method::Get, "/", 7);
  CHECK(t.size() == 8);

  auto m = t.find(Method::Get, "/noop");
  CHECK(m.result == Result::Found);
  CHECK(m.target == 0);
  CHECK(m.param_count == 0);

  m = t.find(Method::Get, "/notes/42");
  REQUIRE(m.result == Result::Found);
  CHECK(m.target == 1);
  REQUIRE(m.param_count == 1);
  CHECK(m.params[0].name == "id");
  CHECK(m.params[0].value == "42");

  CHECK(t.find(Method::Put, "/notes/42").target == 2);
  // A literal wins over a parameter.
  CHECK(t.find(Method::Get, "/notes/latest").target == 3);
  // A value of the wrong type matches nothing.
  CHECK(t.find(Method::Get, "/notes/abc").result == Result::NotFound);
  CHECK(t.find(Method::Get, "/notes/1.5").result == Result::NotFound);
  CHECK(t.find(Method::Get, "/notes/99999999999999999999").result == Result::NotFound);
  // Exactly the 64-bit integers: what Request::int_param reads.
  CHECK(t.find(Method::Get, "/notes/9223372036854775807").target == 1);
  CHECK(t.find(Method::Get, "/notes/-9223372036854775808").target == 1);
  CHECK(t.find(Method::Get, "/notes/9223372036854775808").result == Result::NotFound);
  CHECK(t.find(Method::Get, "/notes/-").result == Result::NotFound);
  CHECK(t.find(Method::Get, "/notes/+1").result == Result::NotFound);

  m = t.find(Method::Get, "/users/ann/notes/7");
  REQUIRE(m.result == Result::Found);
  CHECK(m.target == 5);
  REQUIRE(m.param_count == 2);
  CHECK(m.params[0].value == "ann");
  CHECK(m.params[1].value == "7");

  CHECK(t.find(Method::Get, "/things/123e4567-e89b-12d3-a456-426614174000").target == 6);
  CHECK(t.find(Method::Get, "/things/123e4567-e89b-12d3-a456-42661417400g").result == Result::NotFound);
  CHECK(t.find(Method::Get, "/").target == 7);
  CHECK(t.find(Method::Get, "/noop/").result == Result::NotFound);
  CHECK(t.find(Method::Get, "/users/").result == Result::NotFound);  // empty str parameter
  CHECK(t.find(Method::Get, "").result == Result::NotFound);
  CHECK(t.find(Method::Get, "noop").result == Result::NotFound);
}

TEST_CASE("a known path with another method is 405 with the allowed ones", "[routes]") {
  RouteTable t;
  t.add(Method::Get, "/notes/{id:int}", 0);
  t.add(Method::Delete, "/notes/{id:int}", 1);
  auto m = t.find(Method::Post, "/notes/3");
  CHECK(m.result == Result::MethodNotAllowed);
  CHECK(RouteTable::allow_header(m.allowed) == "GET, DELETE");
  CHECK(m.param_count == 0);
}

TEST_CASE("bad templates are refused with a clear message", "[routes]") {
  RouteTable t;
  t.add(Method::Get, "/a/{id:int}", 0);
  CHECK_THROWS_WITH(t.add(Method::Get, "/a/{id:int}", 1), Catch::Contains("declared twice"));
  CHECK_THROWS_WITH(t.add(Method::Get, "/a/{other:int}", 1), Catch::Contains("conflicts"));
  CHECK_THROWS_WITH(t.add(Method::Get, "no-slash", 1), Catch::Contains("must start with '/'"));
  CHECK_THROWS_WITH(t.add(Method::Get, "/x/{id:float}", 1), Catch::Contains("unknown parameter type"));
  CHECK_THROWS_WITH(t.add(Method::Get, "/x/{id", 1), Catch::Contains("unclosed"));
  CHECK_THROWS_WITH(t.add(Method::Get, "/x/a{id}", 1), Catch::Contains("whole segment"));
  CHECK_THROWS_WITH(t.add(Method::Get, "/x/{}", 1), Catch::Contains("needs a name"));
}

TEST_CASE("a 300-route table finds each of its routes", "[routes]") {
  RouteTable t;
  for (std::uint32_t i = 0; i < 100; ++i) {
    t.add(Method::Get, "/r" + std::to_string(i), i * 3);
    t.add(Method::Get, "/r" + std::to_string(i) + "/{id:int}", i * 3 + 1);
    t.add(Method::Post, "/r" + std::to_string(i) + "/{id:int}/items/{name}", i * 3 + 2);
  }
  for (std::uint32_t i = 0; i < 100; ++i) {
    const auto base = "/r" + std::to_string(i);
    REQUIRE(t.find(Method::Get, base).target == i * 3);
    REQUIRE(t.find(Method::Get, base + "/5").target == i * 3 + 1);
    REQUIRE(t.find(Method::Post, base + "/5/items/x").target == i * 3 + 2);
  }
  // Misses through the hashed children: near names, other lengths, a
  // prefix, the empty segment.
  for (const char* miss : {"/r100", "/r", "/r1x", "/R1", "/r01", "/", "/r99/5/item/x"})
    CHECK(t.find(Method::Get, miss).result == Result::NotFound);
}

TEST_CASE("hashed literals: long names alike but for their ends, and their misses", "[routes]") {
  RouteTable t;
  // Long segments that share their first and most of their last eight bytes.
  std::vector<std::string> names;
  for (int i = 0; i < 64; ++i)
    names.push_back("a-long-common-prefix-" + std::string(static_cast<std::size_t>(i % 7), 'x') + std::to_string(i));
  for (std::uint32_t i = 0; i < names.size(); ++i) t.add(Method::Get, "/" + names[i], i);
  for (std::uint32_t i = 0; i < names.size(); ++i) REQUIRE(t.find(Method::Get, "/" + names[i]).target == i);
  for (const auto& n : names) {
    CHECK(t.find(Method::Get, "/" + n + "0").result == Result::NotFound);
    // A name cut short is another route only if it is another name.
    const auto cut = n.substr(0, n.size() - 1);
    const auto m = t.find(Method::Get, "/" + cut);
    const auto other = std::find(names.begin(), names.end(), cut);
    if (other == names.end())
      CHECK(m.result == Result::NotFound);
    else
      CHECK(m.target == static_cast<std::uint32_t>(other - names.begin()));
  }
}

TEST_CASE("a template's parameters, in order", "[routes]") {
  using edri::http::ParamType;
  using P = std::vector<std::pair<std::string, ParamType>>;
  CHECK(RouteTable::parameters("/notes/{id:int}") == P{{"id", ParamType::Int}});
  CHECK(RouteTable::parameters("/a/{u:uuid}/b/{name}/{s:str}") ==
        P{{"u", ParamType::Uuid}, {"name", ParamType::Str}, {"s", ParamType::Str}});
  CHECK(RouteTable::parameters("/plain/path").empty());
  CHECK(RouteTable::parameters("/").empty());
}
