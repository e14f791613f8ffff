// A declared field's rules (plugin/field_rules.hpp), without processes:
// what a declaration may not say, and how values are checked by path.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "plugin/field_rules.hpp"

using edri::Field;
using edri::plugin::FieldDeclError;
using edri::plugin::FieldError;
using edri::plugin::FieldRule;

namespace {

std::vector<std::string> said(const std::vector<FieldError>& errors) {
  std::vector<std::string> out;
  for (const auto& e : errors) out.push_back(e.field + ": " + e.message);
  return out;
}

std::string refusal(const edri::FieldDecl& f) {
  try {
    FieldRule rule(f);
  } catch (const FieldDeclError& e) {
    return e.what();
  }
  return "(taken)";
}

}  // namespace

TEST_CASE("a declaration that cannot hold is refused, naming the field's path", "[fields]") {
  CHECK(refusal(Field("limit").in_query().integer().default_to("abc")) ==
        "limit: its default \"abc\" must be an integer");
  CHECK(refusal(Field("limit").in_query().integer().range(1, 10).default_to(20)) ==
        "limit: its default 20 must be between 1 and 10");
  CHECK(refusal(Field("state").in_query().string().one_of({"a", "b"}).default_to("c")) ==
        "state: its default \"c\" must be one of \"a\", \"b\"");
  CHECK(refusal(Field("sku").string().pattern("^[A-Z]+$").default_to("abc")) ==
        "sku: its default \"abc\" must match the pattern ^[A-Z]+$");
  CHECK(refusal(Field("lines").array(Field("").object({Field("sku").string().pattern("([A-Z")}))) ==
        "lines[].sku: pattern \"([A-Z\" does not compile: missing ]: [A-Z");
  CHECK(refusal(Field("n").integer().pattern("[0-9]")) == "n: has a pattern but is an integer, not a string");
  CHECK(refusal(Field("s").string().one_of({"a", 1})) == "s: one_of value 1 must be a string");
  CHECK(refusal(Field("s").string().length(5, 1)) == "s: its least (5) is above its most (1)");
  CHECK(refusal(Field("o").string().object({Field("x")}).string()) == "o: has members but is not an object");
  CHECK(refusal(Field("o").object({Field("")})) == "o: a member has no name");
  CHECK(refusal(Field("a").array(Field("").integer()).object()) == "a: has an item rule but is not an array");
  CHECK(refusal(edri::JsonBody().array(Field("").object({Field("q").integer().range(3, 1)}))) ==
        "[].q: its least (3) is above its most (1)");
  CHECK(refusal(Field("fine").integer().range(1, 9).one_of({1, 2}).optional()) == "(taken)");
}

TEST_CASE("values are checked by path: members, items, enum, pattern, null", "[fields]") {
  const FieldRule order(Field("order").object(
      {Field("state").string().one_of({"open", "paid"}), Field("note").string().nullable(),
       Field("lines").array(Field("").object({Field("qty").integer().range(1, 9)})).length(1, 3)}));
  std::vector<FieldError> errors;
  order.check_json({{"state", "open"}, {"note", nullptr}, {"lines", {{{"qty", 1}}}}}, "order", errors);
  CHECK(errors.empty());
  order.check_json({{"state", "gone"}, {"lines", {{{"qty", 10}}, 4, {{"qty", 2}}, {{"qty", 2}}}}}, "order", errors);
  CHECK(said(errors) ==
        std::vector<std::string>{"order.state: must be one of \"open\", \"paid\"", "order.note: is required",
                                 "order.lines: must be between 1 and 3 items long",
                                 "order.lines[0].qty: must be between 1 and 9", "order.lines[1]: must be an object"});
  errors.clear();
  order.check_json("text", "order", errors);
  CHECK(said(errors) == std::vector<std::string>{"order: must be an object"});
}

TEST_CASE("a text value (query, header, cookie) is read as its declared type first", "[fields]") {
  const FieldRule priority(Field("p").in_query().integer().one_of({1, 2, 3}));
  std::vector<FieldError> errors;
  priority.check_text("2", "p", errors);
  CHECK(errors.empty());
  priority.check_text("4", "p", errors);
  priority.check_text("two", "p", errors);
  CHECK(said(errors) == std::vector<std::string>{"p: must be one of 1, 2, 3", "p: must be an integer"});
  errors.clear();
  const FieldRule flag(Field("f").in_query().boolean().one_of({true}));
  flag.check_text("1", "f", errors);
  CHECK(errors.empty());
  flag.check_text("0", "f", errors);
  CHECK(said(errors) == std::vector<std::string>{"f: must be one of true"});
}

TEST_CASE("a pattern costs time linear in the value: no backtracking blow-up", "[fields]") {
  // A backtracking engine takes about 2^n steps for this pair; RE2 one pass.
  const FieldRule evil(Field("s").string().pattern("^(a+)+$"));
  std::vector<FieldError> errors;
  evil.check_json(std::string(100000, 'a') + "!", "s", errors);
  CHECK(said(errors) == std::vector<std::string>{"s: must match the pattern ^(a+)+$"});
  errors.clear();
  evil.check_json(std::string(100000, 'a'), "s", errors);
  CHECK(errors.empty());
  // Unanchored, as JSON Schema's pattern: found anywhere.
  const FieldRule at(Field("e").string().pattern("@"));
  at.check_json("a@b", "e", errors);
  CHECK(errors.empty());
}

TEST_CASE("past 64 errors one more entry says the rest were not listed", "[fields]") {
  const FieldRule numbers(Field("n").array(Field("").integer()));
  nlohmann::json many = nlohmann::json::array();
  for (int i = 0; i < 1000; ++i) many.push_back("x");
  std::vector<FieldError> errors;
  numbers.check_json(many, "n", errors);
  REQUIRE(errors.size() == edri::plugin::kMaxFieldErrors + 1);
  CHECK(errors[63].field == "n[63]");
  CHECK(errors.back().message == "more fields are invalid; the first 64 are listed");
}
