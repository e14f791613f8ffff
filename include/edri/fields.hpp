// The fields of an event, declared by a plugin and checked by the listener
// before a request leaves it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

namespace edri {

enum class FieldType : std::uint8_t { Int, String, Uuid, Number, Bool, Object, Array, Any };

// Where a declared field is read from.
enum class FieldSource : std::uint8_t { Body, Query, Header, Cookie };

// A field of an event, checked by the listener before the request leaves
// it: a request with a bad field is answered 422 there, naming every bad
// field, and never reaches a manager. Build one fluently:
//   Field("title").string().length(1, 200)
//   Field("limit").in_query().integer().range(1, 100).default_to(20)
struct FieldDecl {
  std::string name;
  FieldType type = FieldType::Any;
  bool required = true;
  FieldSource source = FieldSource::Body;
  std::optional<double> min;     // numbers: smallest value; strings: fewest characters
  std::optional<double> max;     // numbers: largest value; strings: most characters
  nlohmann::json default_value;  // query fields: used when absent (null: none)

  FieldDecl& integer() { return type_is(FieldType::Int); }
  FieldDecl& number() { return type_is(FieldType::Number); }
  FieldDecl& string() { return type_is(FieldType::String); }
  FieldDecl& uuid() { return type_is(FieldType::Uuid); }
  FieldDecl& boolean() { return type_is(FieldType::Bool); }
  FieldDecl& object() { return type_is(FieldType::Object); }
  FieldDecl& array() { return type_is(FieldType::Array); }
  FieldDecl& optional() {
    required = false;
    return *this;
  }
  FieldDecl& range(double lo, double hi) {
    min = lo;
    max = hi;
    return *this;
  }
  FieldDecl& length(std::size_t lo, std::size_t hi) { return range(static_cast<double>(lo), static_cast<double>(hi)); }
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
