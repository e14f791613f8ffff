// The fields of an event, declared by a plugin and checked by the listener
// before a request leaves it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace edri {

enum class FieldType : std::uint8_t { Int, String, Uuid, Number, Bool, Object, Array, Any };

// Where a declared field is read from.
enum class FieldSource : std::uint8_t { Body, Query, Header, Cookie };

// A field of an event, checked by the listener before the request leaves
// it: a request with a bad field is answered 422 there, naming every bad
// field by its path (`items[3].qty`), and never reaches a manager. The
// rules are JSON Schema's, declared fluently:
//   Field("title").string().length(1, 200)
//   Field("limit").in_query().integer().range(1, 100).default_to(20)
//   Field("state").string().one_of({"open", "done"})
//   Field("sku").string().pattern("^[A-Z]{3}-[0-9]{4}$")
//   Field("owner").object({Field("name").string(), Field("email").string().optional()})
//   Field("lines").array(Field("").object({Field("qty").integer().range(1, 99)})).length(1, 100)
// A declaration that cannot hold (a default its own rules refuse, a
// pattern that does not compile, members on a string) stops start-up
// with a message naming the event and the field.
struct FieldDecl {
  std::string name;
  FieldType type = FieldType::Any;
  bool required = true;
  FieldSource source = FieldSource::Body;
  std::optional<double> min;            // numbers: smallest value; strings: fewest characters; arrays: fewest items
  std::optional<double> max;            // numbers: largest value; strings: most characters; arrays: most items
  nlohmann::json default_value;         // query fields: used when absent (null: none)
  std::vector<nlohmann::json> allowed;  // one_of(): the only values taken (empty: any)
  std::string regex;                    // pattern(): strings: an expression (RE2's syntax) the value must contain
  bool null_ok = false;                 // nullable(): body fields: null is a value (else null is as if absent)
  std::vector<FieldDecl> members;       // object(members): the object's fields, checked as a body's are
  std::vector<FieldDecl> items;         // array(item): none, or the rule of every item

  FieldDecl& integer() { return type_is(FieldType::Int); }
  FieldDecl& number() { return type_is(FieldType::Number); }
  FieldDecl& string() { return type_is(FieldType::String); }
  FieldDecl& uuid() { return type_is(FieldType::Uuid); }
  FieldDecl& boolean() { return type_is(FieldType::Bool); }
  FieldDecl& object() { return type_is(FieldType::Object); }
  FieldDecl& array() { return type_is(FieldType::Array); }
  // An object whose fields are `fields` (their paths "name.field").
  FieldDecl& object(std::vector<FieldDecl> fields) {
    members = std::move(fields);
    return object();
  }
  // An array each of whose items is `item` (paths "name[3]"; the item's
  // own name is not used).
  FieldDecl& array(FieldDecl item) {
    items.assign(1, std::move(item));
    return array();
  }
  FieldDecl& optional() {
    required = false;
    return *this;
  }
  FieldDecl& nullable() {
    null_ok = true;
    return *this;
  }
  FieldDecl& range(double lo, double hi) {
    min = lo;
    max = hi;
    return *this;
  }
  FieldDecl& length(std::size_t lo, std::size_t hi) { return range(static_cast<double>(lo), static_cast<double>(hi)); }
  FieldDecl& one_of(std::vector<nlohmann::json> values) {
    allowed = std::move(values);
    return *this;
  }
  // Strings only; unanchored, as JSON Schema's `pattern`: write ^ and $
  // for a whole match. RE2 runs in time linear in the value, whatever
  // the expression: no client can make a check slow.
  FieldDecl& pattern(std::string expression) {
    regex = std::move(expression);
    return *this;
  }
  FieldDecl& in_query() { return from(FieldSource::Query); }
  FieldDecl& in_header() { return from(FieldSource::Header); }
  FieldDecl& in_cookie() { return from(FieldSource::Cookie); }
  FieldDecl& default_to(nlohmann::json value) {
    default_value = std::move(value);
    required = false;
    return *this;
  }

 private:
  FieldDecl& type_is(FieldType t) {
    type = t;
    return *this;
  }
  FieldDecl& from(FieldSource src) {
    source = src;
    return *this;
  }
};

inline FieldDecl Field(std::string name) {
  FieldDecl f;
  f.name = std::move(name);
  return f;
}

// The whole body must be JSON (of any type unless narrowed: JsonBody().array()).
// Bad JSON is answered 400 by the listener.
inline FieldDecl JsonBody() { return Field(""); }

}  // namespace edri
