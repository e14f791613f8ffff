// Typed fields: a query, header or cookie field declared once, as a value
// that is both its declaration (the listener checks it) and what the
// handler reads it with, as the declared C++ type:
//
//   const auto limit = edri::query<std::int64_t>("limit").range(1, 100).default_to(20);
//   const auto tag = edri::query<std::string>("tag").length(1, 40).optional();
//   const auto id = edri::path_param<std::int64_t>("id");  // route "/notes/{id:int}"
//
//   r.get("/notes", "notes.list", list, {limit, tag});
//   ... in the handler:
//   std::int64_t n = req.get(limit);                 // a default: always a value
//   std::optional<std::string> t = req.get(tag);     // optional(): maybe none
//
// The type makes the declaration's type (std::int64_t is integer(),
// double number(), bool boolean(), std::string string()), and a default
// of another type does not compile. A body is declared as a model
// (edri/model.hpp); Field() and Request's by-name readers stay for what is
// known only at run time.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <edri/field_value.hpp>
#include <edri/fields.hpp>
#include <edri/request.hpp>

namespace edri {

// Whether a U is a default for a field of type T: a value of the same
// kind, so that no implicit conversion changes it.
template <class T, class U>
concept DefaultFor = std::is_same_v<std::remove_cvref_t<U>, T> ||
                     (std::is_same_v<T, std::string>&& std::is_convertible_v<U, std::string_view>) ||
                     (std::is_integral_v<T> && !std::is_same_v<T, bool> && std::is_integral_v<std::remove_cvref_t<U>> &&
                      !std::is_same_v<std::remove_cvref_t<U>, bool>) ||
                     (std::is_floating_point_v<T> && std::is_arithmetic_v<std::remove_cvref_t<U>> &&
                      !std::is_same_v<std::remove_cvref_t<U>, bool>);

// A query, header or cookie field whose value is a T. With `kMaybe` (after
// optional()), reading it gives std::optional<T>; else a T: the client's,
// or the default.
template <FieldValueType T, bool kMaybe = false>
class TypedField {
 public:
  using value_type = T;
  using read_type = std::conditional_t<kMaybe, std::optional<T>, T>;

  TypedField(std::string name, FieldSource source) {
    decl_.name = std::move(name);
    decl_.source = source;
    decl_.type = FieldValue<T>::kType;
  }

  // The declaration, as an event's fields take it: {limit, offset}.
  operator FieldDecl() const { return decl_; }
  const FieldDecl& decl() const { return decl_; }
  const std::string& name() const { return decl_.name; }

  // The rules, as FieldDecl's (edri/fields.hpp).
  TypedField& range(T lo, T hi) requires(std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) {
    decl_.range(static_cast<double>(lo), static_cast<double>(hi));
    return *this;
  }
  TypedField& length(std::size_t lo, std::size_t hi) requires std::is_same_v<T, std::string> {
    decl_.length(lo, hi);
    return *this;
  }
  TypedField& pattern(std::string expression) requires std::is_same_v<T, std::string> {
    decl_.pattern(std::move(expression));
    return *this;
  }
  TypedField& uuid() requires std::is_same_v<T, std::string> {
    decl_.uuid();
    return *this;
  }
  TypedField& one_of(std::vector<T> values) {
    decl_.allowed.clear();
    for (const auto& v : values) decl_.allowed.push_back(FieldValue<T>::to_json(v));
    return *this;
  }
  // Not required, no default: read as std::optional<T>.
  TypedField<T, true> optional() const {
    FieldDecl d = decl_;
    d.required = false;
    d.default_value = nullptr;
    return TypedField<T, true>(std::move(d));
  }
  // Not required; read as `value` when absent. The listener checks the
  // default against the rules at start-up. Only a value of the field's
  // kind compiles: an integer for an integer type, a number for a floating
  // one, text for std::string, true or false for bool (no 2.5 made 2, no
  // 5 made true).
  template <class U>
  requires DefaultFor<T, U> TypedField<T, false> default_to(U&& value)
  const {
    FieldDecl d = decl_;
    d.default_to(FieldValue<T>::to_json(T(std::forward<U>(value))));
    return TypedField<T, false>(std::move(d));
  }

  // What Request::get returns. Throws RequestError: 400 when the value is
  // not a T (a request from another domain, which the listener did not
  // check), 422 when a required field is absent.
  read_type read(const Request& req) const {
    const std::optional<std::string_view> text = text_in(req);
    if (!text) return absent();
    if (auto v = FieldValue<T>::from_text(*text)) return std::move(*v);
    throw RequestError(400, where() + decl_.name + " " + FieldValue<T>::kMustBe);
  }

 private:
  template <FieldValueType, bool>
  friend class TypedField;
  explicit TypedField(FieldDecl d) : decl_(std::move(d)) {}

  std::optional<std::string_view> text_in(const Request& req) const {
    switch (decl_.source) {
      case FieldSource::Query: return req.query_param(decl_.name);
      case FieldSource::Header: return req.header(decl_.name);
      case FieldSource::Cookie: return req.cookie(decl_.name);
      case FieldSource::Body: break;
    }
    return std::nullopt;
  }
  read_type absent() const {
    if constexpr (kMaybe) {
      return std::nullopt;
    } else {
      // The listener applied the default already; a request from another
      // domain did not pass it.
      if (!decl_.default_value.is_null())
        if (auto v = FieldValue<T>::from_json(decl_.default_value)) return std::move(*v);
      throw RequestError(422, where() + decl_.name + " is missing");
    }
  }
  std::string where() const {
    switch (decl_.source) {
      case FieldSource::Query: return "query parameter ";
      case FieldSource::Header: return "header ";
      case FieldSource::Cookie: return "cookie ";
      case FieldSource::Body: break;
    }
    return "field ";
  }

  FieldDecl decl_;
};

template <FieldValueType T>
TypedField<T> query(std::string name) {
  return TypedField<T>(std::move(name), FieldSource::Query);
}
template <FieldValueType T>
TypedField<T> header(std::string name) {
  return TypedField<T>(std::move(name), FieldSource::Header);
}
template <FieldValueType T>
TypedField<T> cookie(std::string name) {
  return TypedField<T>(std::move(name), FieldSource::Cookie);
}

// A path parameter, read as a T. The route declares it ("{id:int}",
// "{id:uuid}", "{name}"); this only reads it: std::int64_t for `:int`,
// std::string for the others.
template <FieldValueType T>
class PathParam {
 public:
  using read_type = T;
  explicit PathParam(std::string name) : name_(std::move(name)) {}
  const std::string& name() const { return name_; }

  // Throws std::invalid_argument when the route has no such parameter
  // (the handler's mistake: a 500), RequestError 400 when its value is not
  // a T (a `{name}` parameter without `:int`, read as an integer).
  T read(const Request& req) const {
    const auto text = req.path_param(name_);
    if (!text) throw std::invalid_argument("no path parameter " + name_);
    if (auto v = FieldValue<T>::from_text(*text)) return std::move(*v);
    throw RequestError(400, "path parameter " + name_ + " " + FieldValue<T>::kMustBe);
  }

 private:
  std::string name_;
};

template <FieldValueType T>
PathParam<T> path_param(std::string name) {
  return PathParam<T>(std::move(name));
}

}  // namespace edri
