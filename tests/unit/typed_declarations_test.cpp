// Typed fields, models and event names (edri/typed_field.hpp,
// edri/model.hpp, edri/event_name.hpp), without processes: the
// declaration each makes (what the listener checks), and what a handler
// reads through it.
#include <catch2/catch.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <edri/event_name.hpp>
#include <edri/model.hpp>
#include <edri/typed_field.hpp>

#include "plugin/field_rules.hpp"

using edri::FieldDecl;
using edri::FieldSource;
using edri::FieldType;
using edri::Request;
using edri::RequestError;
using nlohmann::json;

namespace {

struct Line {
  std::string sku;
  int qty = 0;
};
struct Order {
  std::string who;
  std::vector<Line> lines;
  std::optional<std::string> note;
  std::vector<std::string> tags;
  std::optional<Line> gift;
  bool paid = false;
  double total = 0;
};

const edri::Model<Line> line{edri::member(&Line::sku, "sku").pattern("^[A-Z]{3}$"),
                             edri::member(&Line::qty, "qty").range(1, 99)};
const edri::Model<Order> order{edri::member(&Order::who, "who").length(1, 40),
                               edri::member(&Order::lines, "lines", line).length(1, 10),
                               edri::member(&Order::note, "note"),
                               edri::member(&Order::tags, "tags").each(FieldDecl{}.string().length(1, 8)),
                               edri::member(&Order::gift, "gift", line),
                               edri::member(&Order::paid, "paid"),
                               edri::member(&Order::total, "total")};

// The error a read throws, as "status: detail".
template <class F>
std::string refusal(F read) {
  try {
    read();
  } catch (const RequestError& e) {
    return std::to_string(e.status()) + ": " + e.what();
  }
  return "(taken)";
}

std::vector<std::string> edge_errors(const FieldDecl& body, const json& value) {
  std::vector<edri::plugin::FieldError> errors;
  edri::plugin::FieldRule(body).check_json(value, "", errors);
  std::vector<std::string> out;
  for (const auto& e : errors) out.push_back(e.field + ": " + e.message);
  return out;
}

}  // namespace

TEST_CASE("a typed field declares its type from C++ and its default typed", "[typed]") {
  const auto limit = edri::query<std::int64_t>("limit").range(1, 100).default_to(20);
  const FieldDecl d = limit;
  CHECK(d.name == "limit");
  CHECK(d.source == FieldSource::Query);
  CHECK(d.type == FieldType::Int);
  CHECK(d.min == 1);
  CHECK(d.max == 100);
  CHECK(d.default_value == 20);
  CHECK_FALSE(d.required);
  CHECK(FieldDecl(edri::header<std::string>("x-key").uuid()).type == FieldType::Uuid);
  CHECK(FieldDecl(edri::cookie<bool>("seen")).type == FieldType::Bool);
  const FieldDecl state = edri::query<std::string>("state").one_of({"open", "done"}).optional();
  CHECK(state.allowed == std::vector<json>{"open", "done"});
  CHECK_FALSE(state.required);
  CHECK(state.default_value.is_null());
  // The listener's own check takes what a typed field declares.
  CHECK_NOTHROW(edri::plugin::FieldRule(d));
}

TEST_CASE("a handler reads a typed field as its type: value, default or none", "[typed]") {
  const auto limit = edri::query<std::int64_t>("limit").default_to(20);
  const auto tag = edri::query<std::string>("tag").optional();
  const auto ratio = edri::header<double>("x-ratio");
  const auto seen = edri::cookie<bool>("seen").optional();
  const auto small = edri::query<std::int8_t>("small");
  Request req;
  req.query_params = {{"limit", "7"}, {"small", "300"}};
  req.headers = {{"X-Ratio", "0.25"}};
  req.cookies = {{"seen", "1"}};
  CHECK(req.get(limit) == 7);
  CHECK(req.get(tag) == std::nullopt);
  CHECK(req.get(ratio) == 0.25);
  CHECK(req.get(seen) == std::optional<bool>(true));
  // Out of the type's range: not a value of this field.
  CHECK(refusal([&] { (void)req.get(small); }) == "400: query parameter small must be an integer");
  req.query_params = {{"tag", "red"}};
  req.headers.clear();
  // The default, where the listener did not apply it (a request from
  // another domain).
  CHECK(req.get(limit) == 20);
  CHECK(req.get(tag) == std::optional<std::string>("red"));
  CHECK(refusal([&] { (void)req.get(ratio); }) == "422: header x-ratio is missing");
  req.query_params = {{"limit", "ten"}};
  CHECK(refusal([&] { (void)req.get(limit); }) == "400: query parameter limit must be an integer");
}

TEST_CASE("a typed path parameter reads the route's parameter", "[typed]") {
  const auto id = edri::path_param<std::int64_t>("id");
  const auto slug = edri::path_param<std::string>("slug");
  Request req;
  req.path_params = {{"id", "-42"}, {"slug", "a-b"}};
  CHECK(req.get(id) == -42);
  CHECK(req.get(slug) == "a-b");
  req.path_params = {{"id", "x1"}};
  CHECK(refusal([&] { (void)req.get(id); }) == "400: path parameter id must be an integer");
  CHECK_THROWS_AS(req.get(slug), std::invalid_argument);
}

TEST_CASE("a model's members are the body's fields, nested and with their rules", "[typed]") {
  const std::vector<FieldDecl> fields = order.fields();
  REQUIRE(fields.size() == 7);
  CHECK(fields[0].name == "who");
  CHECK(fields[0].required);
  CHECK(fields[0].max == 40);
  CHECK(fields[1].type == FieldType::Array);
  CHECK(fields[1].max == 10);
  REQUIRE(fields[1].items.size() == 1);
  CHECK(fields[1].items[0].type == FieldType::Object);
  REQUIRE(fields[1].items[0].members.size() == 2);
  CHECK(fields[1].items[0].members[1].name == "qty");
  CHECK_FALSE(fields[2].required);
  CHECK(fields[3].items.at(0).max == 8);
  CHECK(fields[4].type == FieldType::Object);
  CHECK_FALSE(fields[4].required);
  CHECK(fields[5].type == FieldType::Bool);
  CHECK(fields[6].type == FieldType::Number);
  // The edge checks a client's body with them, naming each path.
  const json bad = {{"who", ""},
                    {"lines", {{{"sku", "ABC"}, {"qty", 1}}, {{"sku", "abc"}, {"qty", 0}}}},
                    {"tags", {"ok", "far too long"}},
                    {"paid", true},
                    {"total", 1.5}};
  CHECK(edge_errors(order.shape(), bad) ==
        std::vector<std::string>{
            "who: must be between 1 and 40 characters long", "lines[1].sku: must match the pattern ^[A-Z]{3}$",
            "lines[1].qty: must be between 1 and 99", "tags[1]: must be between 1 and 8 characters long"});
}

TEST_CASE("a model reads JSON into its struct and writes it back", "[typed]") {
  const json in = {{"who", "ann"},
                   {"lines", {{{"sku", "ABC"}, {"qty", 2}}, {{"sku", "XYZ"}, {"qty", 1}}}},
                   {"note", nullptr},
                   {"tags", {"a"}},
                   {"gift", {{"sku", "GFT"}, {"qty", 1}}},
                   {"paid", false},
                   {"total", 9}};
  const Order o = order.from_json(in);
  CHECK(o.who == "ann");
  REQUIRE(o.lines.size() == 2);
  CHECK(o.lines[1].sku == "XYZ");
  CHECK(o.lines[0].qty == 2);
  CHECK_FALSE(o.note);
  REQUIRE(o.gift);
  CHECK(o.gift->sku == "GFT");
  CHECK(o.total == 9.0);
  json back = in;
  back.erase("note");  // optional and absent: not written
  CHECK(order.to_json(o) == back);
  // Through the request, as a handler is given it.
  Request req;
  const std::string body = in.dump();
  req.body = body;
  CHECK(req.get(order).lines.size() == 2);
}

TEST_CASE("a body that is not the model is refused, naming the first bad path", "[typed]") {
  const json good = {{"who", "ann"}, {"lines", json::array()}, {"tags", json::array()}, {"paid", true}, {"total", 1}};
  CHECK(refusal([&] { order.from_json(good); }) == "(taken)");
  auto with = [&](const char* key, json value) {
    json j = good;
    j[key] = std::move(value);
    return refusal([&] { order.from_json(j); });
  };
  CHECK(with("lines", {{{"sku", "ABC"}, {"qty", "2"}}}) == "422: lines[0].qty must be an integer");
  CHECK(with("lines", {{{"sku", "ABC"}, {"qty", 1e10}}}) == "422: lines[0].qty must be an integer");
  CHECK(with("lines", {{{"sku", "ABC"}}}) == "422: lines[0].qty is missing");
  CHECK(with("who", nullptr) == "422: who is missing");
  CHECK(with("gift", "x") == "422: gift must be an object");
  CHECK(with("tags", "x") == "422: tags must be an array");
  CHECK(with("paid", 1) == "422: paid must be true or false");
  CHECK(refusal([&] { order.from_json(json::array()); }) == "422: the body must be an object");
  Request req;
  req.body = "{";
  CHECK(refusal([&] { (void)req.get(order); }).starts_with("400: the body is not valid JSON"));
}

TEST_CASE("an event name converts wherever a name goes", "[typed]") {
  constexpr edri::EventName kCreate{"notes.create"};
  static_assert(kCreate.name() == "notes.create");
  const std::string s = kCreate;
  const std::string_view v = kCreate;
  CHECK(s == "notes.create");
  CHECK(v == "notes.create");
  CHECK(kCreate == std::string_view("notes.create"));
  CHECK_FALSE(kCreate == edri::EventName("notes.get"));
}
