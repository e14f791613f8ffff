// What a C++ type is as a field's value: its FieldType, and how it is
// read from a query, header or cookie text and from JSON, and written to
// JSON. Used by typed fields (edri/typed_field.hpp) and models
// (edri/model.hpp); the types a field may have are the ones below.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include <nlohmann/json.hpp>

#include <edri/fields.hpp>
#include <edri/request.hpp>

namespace edri {

template <class T>
struct FieldValue;  // only the specializations below exist

// Any integer type but bool: a field declared integer(). A value outside
// T's range is refused as not an integer of that field.
template <class T>
requires(std::is_integral_v<T> && !std::is_same_v<T, bool>) struct FieldValue<T> {
  static constexpr FieldType kType = FieldType::Int;
  static constexpr const char* kMustBe = "must be an integer";
  static std::optional<T> from_text(std::string_view v) {
    const auto n = parse_int64(v);
    if (!n || !std::in_range<T>(*n)) return std::nullopt;
    return static_cast<T>(*n);
  }
  static std::optional<T> from_json(const nlohmann::json& j) {
    if (j.is_number_unsigned()) {
      const auto n = j.get<std::uint64_t>();
      return std::in_range<T>(n) ? std::optional<T>(static_cast<T>(n)) : std::nullopt;
    }
    if (!j.is_number_integer()) return std::nullopt;
    const auto n = j.get<std::int64_t>();
    return std::in_range<T>(n) ? std::optional<T>(static_cast<T>(n)) : std::nullopt;
  }
  static nlohmann::json to_json(T v) { return v; }
};

// double and float: a field declared number().
template <class T>
requires std::is_floating_point_v<T>
struct FieldValue<T> {
  static constexpr FieldType kType = FieldType::Number;
  static constexpr const char* kMustBe = "must be a number";
  static std::optional<T> from_text(std::string_view v) {
    const std::string s(v);
    char* end = nullptr;
    const double d = std::strtod(s.c_str(), &end);
    if (s.empty() || *end != '\0' || !std::isfinite(d)) return std::nullopt;
    return static_cast<T>(d);
  }
  static std::optional<T> from_json(const nlohmann::json& j) {
    if (!j.is_number()) return std::nullopt;
    return j.get<T>();
  }
  static nlohmann::json to_json(T v) { return v; }
};

// bool: a field declared boolean(); in text, true/1 and false/0, as the
// listener takes them.
template <>
struct FieldValue<bool> {
  static constexpr FieldType kType = FieldType::Bool;
  static constexpr const char* kMustBe = "must be true or false";
  static std::optional<bool> from_text(std::string_view v) {
    if (v == "true" || v == "1") return true;
    if (v == "false" || v == "0") return false;
    return std::nullopt;
  }
  static std::optional<bool> from_json(const nlohmann::json& j) {
    if (!j.is_boolean()) return std::nullopt;
    return j.get<bool>();
  }
  static nlohmann::json to_json(bool v) { return v; }
};

// std::string: a field declared string() (uuid() narrows it).
template <>
struct FieldValue<std::string> {
  static constexpr FieldType kType = FieldType::String;
  static constexpr const char* kMustBe = "must be text";
  static std::optional<std::string> from_text(std::string_view v) { return std::string(v); }
  static std::optional<std::string> from_json(const nlohmann::json& j) {
    if (!j.is_string()) return std::nullopt;
    return j.get<std::string>();
  }
  static nlohmann::json to_json(const std::string& v) { return v; }
};

// Whether T may be a typed field's value.
template <class T>
concept FieldValueType = requires {
  FieldValue<T>::kType;
};

}  // namespace edri
