// A JSON object written as text straight from its members, without a DOM:
// what `Response::json({{"id", id}, {"ok", true}})` takes. The text is
// byte for byte what nlohmann would have written for the same braced list
// (keys in its order, the first of a repeated key kept, its escapes, its
// exceptions), because that list used to become an nlohmann::json first:
// building and destroying that DOM was about 300 of the 500 ns a small
// answer cost in the manager (docs/decisions/0025).
//
// A member keeps views of its key and of a string value: it lives in the
// braced list of one call and must not be kept beyond it.
#pragma once

#include <charconv>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include <edri/status.hpp>

namespace edri {

namespace json_text {

// The string types nlohmann writes as JSON strings; nothing that merely
// converts to one (it might have a to_json of its own).
template <class T>
concept Text = std::same_as < std::decay_t<T>,
const char* > || std::same_as<std::decay_t<T>, char*> || std::same_as<std::remove_cvref_t<T>, std::string> ||
    std::same_as<std::remove_cvref_t<T>, std::string_view>;

// The integer types nlohmann writes as numbers (`char` too: 'a' is 97).
template <class T>
concept Integer = std::integral<T> && !std::same_as<T, bool> && !std::same_as<T, wchar_t> &&
                  !std::same_as<T, char8_t> && !std::same_as<T, char16_t> && !std::same_as<T, char32_t>;

// A member's name.
struct Key {
  template <Text T>
  Key(const T& text) : text(text) {}  // NOLINT: converts, as nlohmann's keys do
  std::string_view text;
};

}  // namespace json_text

// One `{"name", value}` of the braced list. Numbers without a fraction,
// an edri::Status (its code, as its to_json writes it), booleans, null and
// strings are written here; anything else (a double, an enum, a nested
// list, a type with to_json) becomes an nlohmann::json of that one value,
// as before. Every constructor but the last is a template, so that a
// braced value (`{"list", {1, 2}}`) can only mean an nlohmann::json.
class JsonMember {
 public:
  using Value = std::variant<std::nullptr_t, bool, std::int64_t, std::uint64_t, std::string_view, nlohmann::json>;

  template <std::same_as<bool> B>
  JsonMember(json_text::Key key, B value) : key_(key.text), value_(value) {}
  template <std::same_as<std::nullptr_t> N>
  JsonMember(json_text::Key key, N) : key_(key.text), value_(nullptr) {}
  template <json_text::Integer I>
  JsonMember(json_text::Key key, I value) : key_(key.text), value_(widen(value)) {}
  template <std::same_as<Status> S>
  JsonMember(json_text::Key key, S status) : key_(key.text), value_(std::int64_t{status.code}) {}
  template <json_text::Text S>
  JsonMember(json_text::Key key, const S& value) : key_(key.text), value_(std::string_view(value)) {}
  JsonMember(json_text::Key key, nlohmann::json value) : key_(key.text), value_(std::move(value)) {}

  std::string_view key() const { return key_; }
  const Value& value() const { return value_; }

 private:
  template <class I>
  static Value widen(I n) {
    if constexpr (std::is_signed_v<I>)
      return static_cast<std::int64_t>(n);
    else
      return static_cast<std::uint64_t>(n);
  }

  std::string_view key_;
  Value value_;
};

namespace json_text {

// Needs no escape and no UTF-8 check: what nlohmann copies as it is.
inline bool plain(std::string_view s) {
  for (const unsigned char c : s)
    if (c < 0x20 || c >= 0x80 || c == '"' || c == '\\') return false;
  return true;
}

// A string, key or value. Anything not plain goes through nlohmann: the
// same escapes, and the same type_error 316 for bytes that are not UTF-8.
inline void append(std::string& out, std::string_view s) {
  if (!plain(s)) {
    out += nlohmann::json(s).dump();
    return;
  }
  out += '"';
  out += s;
  out += '"';
}

template <class N>
void append_number(std::string& out, N n) {
  char digits[24];
  const auto end = std::to_chars(digits, digits + sizeof digits, n).ptr;
  out.append(digits, end);
}

inline void append(std::string& out, std::nullptr_t) { out += "null"; }
inline void append(std::string& out, bool b) { out += b ? "true" : "false"; }
inline void append(std::string& out, std::int64_t n) { append_number(out, n); }
inline void append(std::string& out, std::uint64_t n) { append_number(out, n); }
inline void append(std::string& out, const nlohmann::json& j) { out += j.dump(); }

inline void append_member(std::string& out, const JsonMember& m) {
  append(out, m.key());
  out += ':';
  std::visit([&out](const auto& v) { append(out, v); }, m.value());
}

// nlohmann's objects are std::maps: keys in byte order, and the first of
// a repeated key kept. An insertion sort is stable and quick for the few
// members a braced list has.
inline void sort_by_key(const JsonMember** first, const JsonMember** last) {
  for (auto** i = first + 1; i < last; ++i)
    for (auto** j = i; j > first && (*j)->key() < (*(j - 1))->key(); --j) std::swap(*j, *(j - 1));
}

inline void append_object(std::string& out, const JsonMember** first, const JsonMember** last) {
  sort_by_key(first, last);
  out += '{';
  for (auto** m = first; m < last; ++m) {
    if (m == first)
      append_member(out, **m);
    else if ((*m)->key() != (*(m - 1))->key())
      append_member(out += ',', **m);
  }
  out += '}';
}

}  // namespace json_text

// The object's text. An empty list is `null`, as nlohmann made it.
inline std::string json_object_text(std::initializer_list<JsonMember> members) {
  if (members.size() == 0) return "null";
  constexpr std::size_t kOnStack = 16;
  const JsonMember* on_stack[kOnStack];
  std::vector<const JsonMember*> on_heap;
  const JsonMember** order = on_stack;
  if (members.size() > kOnStack) {
    on_heap.resize(members.size());
    order = on_heap.data();
  }
  std::size_t n = 0;
  for (const auto& m : members) order[n++] = &m;
  std::string out;
  out.reserve(16 * n + 2);
  json_text::append_object(out, order, order + n);
  return out;
}

}  // namespace edri
