// Models: a C++ struct described once (its members, their types and
// rules), which is at the same time an event's body fields (checked by
// the listener, named in /openapi.json), the parsed body its handler is
// given, and the JSON its answers are written from:
//
//   struct NoteInput {
//     std::string title;
//     std::optional<std::string> body;
//   };
//   const edri::Model<NoteInput> note_input{
//       edri::member(&NoteInput::title, "title").length(1, 200),
//       edri::member(&NoteInput::body, "body").length(0, 65536)};
//
//   edri::Async<> create(const NoteInput& in, const edri::Request& req, edri::Context& ctx);
//   r.post("/notes", "notes.create", create, note_input);
//
// A member's type makes its field's: integers, double, bool, std::string
// (edri/field_value.hpp), nlohmann::json (any value), std::vector of
// those (an array), std::optional of any (not required: absent and null
// are std::nullopt), and another model's struct, given with its model:
// edri::member(&Order::lines, "lines", line) for a std::vector<Line>.
// Every other member is required. An answer is written with to_json(),
// and declared for /openapi.json with Registry::answers(event, 201,
// "the note", note).
#pragma once

#include <cstddef>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <edri/async.hpp>
#include <edri/context.hpp>
#include <edri/field_value.hpp>
#include <edri/fields.hpp>
#include <edri/request.hpp>

namespace edri {

// Where a value is in a body: a chain on the reader's stack, made into
// text ("lines[3].qty") only when an error names it, so that a body read
// without error builds no string.
struct JsonPath {
  const JsonPath* parent = nullptr;  // null: the body itself
  std::string_view member;           // empty: an item of parent, at `index`
  std::size_t index = 0;

  std::string text() const {
    if (!parent) return {};
    std::string out = parent->text();
    if (member.empty()) return out + "[" + std::to_string(index) + "]";
    return out.empty() ? std::string(member) : out + "." + std::string(member);
  }
  // How an error names it.
  std::string named() const { return parent ? text() : "the body"; }
};

// How values of V are checked (`shape`, its name unused), read from JSON
// and written to it.
template <class V>
struct ValueCodec {
  FieldDecl shape;
  std::function<V(const nlohmann::json&, const JsonPath& at)> read;
  std::function<nlohmann::json(const V&)> write;
};

namespace detail {

template <class V>
inline constexpr bool is_optional = false;
template <class V>
inline constexpr bool is_optional<std::optional<V>> = true;
template <class V>
inline constexpr bool is_vector = false;
template <class V>
inline constexpr bool is_vector<std::vector<V>> = true;

template <FieldValueType V>
ValueCodec<V> scalar_codec() {
  ValueCodec<V> c;
  c.shape.type = FieldValue<V>::kType;
  c.read = [](const nlohmann::json& j, const JsonPath& at) -> V {
    if (auto v = FieldValue<V>::from_json(j)) return std::move(*v);
    throw RequestError(422, at.named() + " " + FieldValue<V>::kMustBe);
  };
  c.write = [](const V& v) { return FieldValue<V>::to_json(v); };
  return c;
}

template <class V>
ValueCodec<std::vector<V>> array_codec(ValueCodec<V> item) {
  ValueCodec<std::vector<V>> c;
  c.shape.array(item.shape);
  c.read = [item](const nlohmann::json& j, const JsonPath& at) {
    if (!j.is_array()) throw RequestError(422, at.named() + " must be an array");
    std::vector<V> out;
    out.reserve(j.size());
    for (std::size_t i = 0; i < j.size(); ++i) out.push_back(item.read(j[i], JsonPath{&at, {}, i}));
    return out;
  };
  c.write = [item](const std::vector<V>& values) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& v : values) out.push_back(item.write(v));
    return out;
  };
  return c;
}

inline ValueCodec<nlohmann::json> any_codec() {
  return {FieldDecl{}, [](const nlohmann::json& j, const JsonPath&) { return j; },
          [](const nlohmann::json& v) { return v; }};
}

// The codec a member of type V gets without a model.
template <class V>
ValueCodec<V> codec_of() {
  if constexpr (FieldValueType<V>)
    return scalar_codec<V>();
  else if constexpr (std::is_same_v<V, nlohmann::json>)
    return any_codec();
  else if constexpr (is_vector<V>)
    return array_codec(codec_of<typename V::value_type>());
  else
    static_assert(sizeof(V) == 0, "a struct member needs its model: edri::member(&T::m, \"m\", model_of_m)");
}

}  // namespace detail

template <class T>
class Model;

// One member of T: its field (name, type, rules) and how it is read and
// written. Made by edri::member; the rules are FieldDecl's.
template <class T>
class Member {
 public:
  using Reader = std::function<void(T&, const nlohmann::json* value, const JsonPath& object)>;  // null: absent
  using Writer = std::function<void(const T&, nlohmann::json& object)>;
  Member(FieldDecl decl, Reader read, Writer write)
      : decl_(std::move(decl)), read_(std::move(read)), write_(std::move(write)) {}

  Member& range(double lo, double hi) {
    decl_.range(lo, hi);
    return *this;
  }
  Member& length(std::size_t lo, std::size_t hi) {
    decl_.length(lo, hi);
    return *this;
  }
  Member& one_of(std::vector<nlohmann::json> values) {
    decl_.one_of(std::move(values));
    return *this;
  }
  Member& pattern(std::string expression) {
    decl_.pattern(std::move(expression));
    return *this;
  }
  Member& uuid() {
    decl_.uuid();
    return *this;
  }
  // An array's rule for each item: each(Field("").string().length(1, 20)).
  Member& each(FieldDecl item) {
    decl_.items.assign(1, std::move(item));
    return *this;
  }

  const FieldDecl& decl() const { return decl_; }

 private:
  friend class Model<T>;

  FieldDecl decl_;
  Reader read_;
  Writer write_;
};

namespace detail {

template <class T, class V>
Member<T> required_member(V T::*field, std::string name, ValueCodec<V> c) {
  FieldDecl decl = c.shape;
  decl.name = name;
  auto read = [field, name, read = c.read](T& out, const nlohmann::json* j, const JsonPath& object) {
    const JsonPath at{&object, name};
    if (!j || j->is_null()) throw RequestError(422, at.text() + " is missing");
    out.*field = read(*j, at);
  };
  auto write = [field, name, write = c.write](const T& in, nlohmann::json& o) { o[name] = write(in.*field); };
  return Member<T>(std::move(decl), std::move(read), std::move(write));
}

template <class T, class V>
Member<T> optional_member(std::optional<V> T::*field, std::string name, ValueCodec<V> c) {
  FieldDecl decl = c.shape;
  decl.name = name;
  decl.required = false;
  auto read = [field, name, read = c.read](T& out, const nlohmann::json* j, const JsonPath& object) {
    if (!j || j->is_null())
      (out.*field).reset();
    else
      out.*field = read(*j, JsonPath{&object, name});
  };
  // Absent, not null: the member is optional, not nullable.
  auto write = [field, name, write = c.write](const T& in, nlohmann::json& o) {
    if (in.*field) o[name] = write(*(in.*field));
  };
  return Member<T>(std::move(decl), std::move(read), std::move(write));
}

}  // namespace detail

// A member whose type is a value type, a std::vector or a std::optional
// of one.
template <class T, class V>
Member<T> member(V T::*field, std::string name) {
  if constexpr (detail::is_optional<V>)
    return detail::optional_member(field, std::move(name), detail::codec_of<typename V::value_type>());
  else
    return detail::required_member(field, std::move(name), detail::codec_of<V>());
}

// A member that is another model's struct U, or a std::vector or
// std::optional of it.
template <class T, class V, class U>
Member<T> member(V T::*field, std::string name, const Model<U>& model) {
  if constexpr (std::is_same_v<V, U>)
    return detail::required_member(field, std::move(name), model.codec());
  else if constexpr (std::is_same_v<V, std::vector<U>>)
    return detail::required_member(field, std::move(name), detail::array_codec(model.codec()));
  else if constexpr (std::is_same_v<V, std::optional<U>>)
    return detail::optional_member(field, std::move(name), model.codec());
  else if constexpr (std::is_same_v<V, std::optional<std::vector<U>>>)
    return detail::optional_member(field, std::move(name), detail::array_codec(model.codec()));
  else
    static_assert(sizeof(V) == 0, "the member is not the model's struct, a std::vector or a std::optional of it");
}

// The description of T, once: see the top of this file.
template <class T>
class Model {
  static_assert(std::is_default_constructible_v<T>, "a model's struct is made empty, then filled member by member");

 public:
  Model(std::initializer_list<Member<T>> members) : members_(members) {}

  // The body's fields, for an event: r.event("x", model.fields()).
  std::vector<FieldDecl> fields() const {
    std::vector<FieldDecl> out;
    for (const auto& m : members_) out.push_back(m.decl_);
    return out;
  }
  // The whole as one object field (its name empty): an answer's body, or
  // a member of another model.
  FieldDecl shape() const { return FieldDecl{}.object(fields()); }

  // Throws RequestError 422 naming the first bad member by its path
  // ("lines[3].qty"). The listener checked a client's body already; this
  // checks types and presence again for requests from other domains.
  T from_json(const nlohmann::json& j, const JsonPath& at = {}) const {
    if (!j.is_object()) throw RequestError(422, at.named() + " must be an object");
    T out{};
    for (const auto& m : members_) {
      const auto it = j.find(m.decl_.name);
      m.read_(out, it == j.end() ? nullptr : &*it, at);
    }
    return out;
  }
  nlohmann::json to_json(const T& value) const {
    nlohmann::json out = nlohmann::json::object();
    for (const auto& m : members_) m.write_(value, out);
    return out;
  }
  // The request's body as a T (what Request::get(model) returns): 400
  // when it is not JSON, 422 as from_json.
  T read(const Request& req) const { return from_json(req.json()); }

  ValueCodec<T> codec() const {
    auto self = std::make_shared<const Model>(*this);
    return {shape(), [self](const nlohmann::json& j, const JsonPath& at) { return self->from_json(j, at); },
            [self](const T& v) { return self->to_json(v); }};
  }

 private:
  std::vector<Member<T>> members_;
};

namespace detail {

template <class T, class F>
struct BodyHandler {
  Model<T> model;
  F handler;
};

// The coroutine that owns the parsed body while the handler's coroutine
// runs: a handler taking `const T&` may keep it across its co_awaits.
template <class T, class F>
Async<Response> await_with_body(std::shared_ptr<BodyHandler<T, F>> bound, const Request& req, Context& ctx) {
  const T body = bound->model.read(req);
  co_return co_await bound->handler(body, req, ctx);
}

}  // namespace detail

// A handler that takes the body as a T, as one that takes the request:
// the body is parsed before it runs (a body that is not a T is answered
// 422 or 400, and the handler does not run). `handler` is called with
// (const T&, const Request&, Context&) and returns what a handler does:
// Reply (or Response), or Async<> for a coroutine.
template <class T, class F>
Handler with_body(Model<T> model, F handler) {
  using Result = std::invoke_result_t<F&, const T&, const Request&, Context&>;
  auto bound =
      std::make_shared<detail::BodyHandler<T, F>>(detail::BodyHandler<T, F>{std::move(model), std::move(handler)});
  if constexpr (std::is_same_v<Result, Async<Response>>) {
    return from_async(
        AsyncHandler([bound](const Request& req, Context& ctx) { return detail::await_with_body(bound, req, ctx); }));
  } else {
    return [bound](const Request& req, Context& ctx) -> Reply {
      const T body = bound->model.read(req);
      return bound->handler(body, req, ctx);
    };
  }
}

}  // namespace edri
