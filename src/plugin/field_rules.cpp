#include "plugin/field_rules.hpp"

#include <re2/re2.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include <edri/field_value.hpp>

#include "http/route_table.hpp"

namespace edri::plugin {

namespace {

const char* type_name(FieldType t) {
  switch (t) {
    case FieldType::Int: return "an integer";
    case FieldType::String: return "a string";
    case FieldType::Uuid: return "a UUID";
    case FieldType::Number: return "a number";
    case FieldType::Bool: return "a boolean";
    case FieldType::Object: return "an object";
    case FieldType::Array: return "an array";
    case FieldType::Any: return "a value";
  }
  return "a value";
}

std::size_t utf8_length(std::string_view s) {
  std::size_t n = 0;
  for (unsigned char c : s)
    if ((c & 0xC0) != 0x80) ++n;
  return n;
}

std::string format_bound(double v) {
  if (std::floor(v) == v && std::fabs(v) < 1e15) return std::to_string(static_cast<long long>(v));
  return std::to_string(v);
}

bool has_type(FieldType t, const nlohmann::json& v) {
  switch (t) {
    case FieldType::Int: return v.is_number_integer();
    case FieldType::Number: return v.is_number();
    case FieldType::String: return v.is_string();
    case FieldType::Uuid: return v.is_string() && http::is_uuid_segment(v.get_ref<const std::string&>());
    case FieldType::Bool: return v.is_boolean();
    case FieldType::Object: return v.is_object();
    case FieldType::Array: return v.is_array();
    case FieldType::Any: return true;
  }
  return true;
}

// The bound check shared by every source: `measure` is the value of a
// number or the length of a string or array.
void check_range(const FieldDecl& f, double measure, bool is_length, const std::string& path,
                 std::vector<FieldError>& errors) {
  const bool low = f.min && measure < *f.min;
  const bool high = f.max && measure > *f.max;
  if (!low && !high) return;
  std::string m = "must be ";
  if (f.min && f.max)
    m += "between " + format_bound(*f.min) + " and " + format_bound(*f.max);
  else if (f.min)
    m += "at least " + format_bound(*f.min);
  else
    m += "at most " + format_bound(*f.max);
  if (is_length) m += f.type == FieldType::Array ? " items long" : " characters long";
  add_field_error(errors, path, std::move(m));
}

// The value a text stands for, by the field's type; null if it stands
// for none (then the type's message is the error). Numbers and booleans
// are read as a handler's typed field reads them (edri/field_value.hpp),
// so a value the edge took is one req.get() takes; integers as a route's
// `{id:int}` segment is matched, which parse_int64 then reads whole.
nlohmann::json value_of_text(FieldType t, std::string_view v) {
  switch (t) {
    case FieldType::Int:
      if (!http::is_int_segment(v)) return nullptr;
      return *parse_int64(v);
    case FieldType::Number:
      if (const auto d = FieldValue<double>::from_text(v)) return *d;
      return nullptr;
    case FieldType::Bool:
      if (const auto b = FieldValue<bool>::from_text(v)) return *b;
      return nullptr;
    case FieldType::Uuid:
      if (!http::is_uuid_segment(v)) return nullptr;
      return std::string(v);
    default: return std::string(v);
  }
}

const char* text_type_message(FieldType t) {
  switch (t) {
    case FieldType::Int: return FieldValue<std::int64_t>::kMustBe;
    case FieldType::Number: return FieldValue<double>::kMustBe;
    case FieldType::Bool: return FieldValue<bool>::kMustBe;
    case FieldType::Uuid: return "must be a UUID";
    default: return FieldValue<std::string>::kMustBe;
  }
}

std::string listed(const std::vector<nlohmann::json>& values) {
  std::string out;
  for (const auto& v : values) out += (out.empty() ? "" : ", ") + v.dump();
  return out;
}

std::string member_path(const std::string& path, const std::string& name) {
  return path.empty() ? name : path + "." + name;
}

std::string named(const std::string& where) { return where.empty() ? "the body" : where; }

}  // namespace

bool add_field_error(std::vector<FieldError>& errors, std::string path, std::string message) {
  if (errors.size() > kMaxFieldErrors) return false;
  if (errors.size() == kMaxFieldErrors) {
    errors.push_back({"", "more fields are invalid; the first " + std::to_string(kMaxFieldErrors) + " are listed"});
    return false;
  }
  errors.push_back({std::move(path), std::move(message)});
  return true;
}

FieldRule::FieldRule(const FieldDecl& decl) : FieldRule(decl, decl.name) {}

// `where` is empty for the whole body (JsonBody()).
FieldRule::FieldRule(FieldDecl decl, std::string where) : decl_(std::move(decl)) {
  if (!decl_.regex.empty()) {
    RE2::Options options;
    options.set_log_errors(false);
    regex_ = std::make_shared<const RE2>(decl_.regex, options);
    if (!regex_->ok())
      throw FieldDeclError(named(where) + ": pattern " + nlohmann::json(decl_.regex).dump() +
                           " does not compile: " + regex_->error());
  }
  for (auto& m : decl_.members) {
    if (m.name.empty()) throw FieldDeclError(named(where) + ": a member has no name");
    std::string at = member_path(where, m.name);
    members_.push_back(FieldRule(std::move(m), std::move(at)));
  }
  decl_.members.clear();
  for (auto& item : decl_.items) items_.push_back(FieldRule(std::move(item), where + "[]"));
  decl_.items.clear();
  check_declaration(where);
}

void FieldRule::check_declaration(const std::string& where) const {
  const FieldDecl& f = decl_;
  auto fail = [&](const std::string& message) { throw FieldDeclError(named(where) + ": " + message); };
  if (!members_.empty() && f.type != FieldType::Object) fail("has members but is not an object");
  if (!items_.empty() && f.type != FieldType::Array) fail("has an item rule but is not an array");
  if (regex_ && f.type != FieldType::String && f.type != FieldType::Any)
    fail("has a pattern but is " + std::string(type_name(f.type)) + ", not a string");
  if (f.min && f.max && *f.min > *f.max)
    fail("its least (" + format_bound(*f.min) + ") is above its most (" + format_bound(*f.max) + ")");
  for (const auto& v : f.allowed) {
    std::vector<FieldError> errors;
    check_json(v, "", errors);
    if (!errors.empty()) fail("one_of value " + v.dump() + " " + errors.front().message);
  }
  if (f.default_value.is_null()) return;
  std::vector<FieldError> errors;
  if (f.source == FieldSource::Body)
    check_json(f.default_value, "", errors);
  else
    check_text(f.default_value.is_string() ? f.default_value.get<std::string>() : f.default_value.dump(), "", errors);
  if (!errors.empty()) fail("its default " + f.default_value.dump() + " " + errors.front().message);
}

void FieldRule::check_json(const nlohmann::json& v, const std::string& path, std::vector<FieldError>& errors) const {
  const FieldDecl& f = decl_;
  if (v.is_null() && f.null_ok) return;
  if (!has_type(f.type, v)) {
    add_field_error(errors, path, std::string("must be ") + type_name(f.type));
    return;
  }
  if (v.is_number()) check_range(f, v.get<double>(), false, path, errors);
  if (v.is_string())
    check_range(f, static_cast<double>(utf8_length(v.get_ref<const std::string&>())), true, path, errors);
  if (v.is_array()) {
    check_range(f, static_cast<double>(v.size()), true, path, errors);
    check_items(v, path, errors);
  }
  if (v.is_object()) check_members(v, path, errors);
  check_value(v, path, errors);
}

void FieldRule::check_text(std::string_view v, const std::string& path, std::vector<FieldError>& errors) const {
  const FieldDecl& f = decl_;
  const nlohmann::json value = value_of_text(f.type, v);
  if (value.is_null()) {
    add_field_error(errors, path, text_type_message(f.type));
    return;
  }
  if (value.is_number())
    check_range(f, value.get<double>(), false, path, errors);
  else if (value.is_string() && f.type != FieldType::Uuid)
    check_range(f, static_cast<double>(utf8_length(v)), true, path, errors);
  check_value(value, path, errors);
}

void FieldRule::check_value(const nlohmann::json& v, const std::string& path, std::vector<FieldError>& errors) const {
  const FieldDecl& f = decl_;
  // nlohmann's == compares numbers by value: 3 and 3.0 are one.
  if (!f.allowed.empty() && std::find(f.allowed.begin(), f.allowed.end(), v) == f.allowed.end())
    add_field_error(errors, path, "must be one of " + listed(f.allowed));
  if (regex_ && v.is_string() && !RE2::PartialMatch(v.get_ref<const std::string&>(), *regex_))
    add_field_error(errors, path, "must match the pattern " + f.regex);
}

void FieldRule::check_members(const nlohmann::json& object, const std::string& path,
                              std::vector<FieldError>& errors) const {
  for (const FieldRule& m : members_) {
    const std::string at = member_path(path, m.decl_.name);
    const auto it = object.find(m.decl_.name);
    if (it != object.end() && (!it->is_null() || m.decl_.null_ok))
      m.check_json(*it, at, errors);
    else if (m.decl_.required)
      add_field_error(errors, at, "is required");
  }
}

void FieldRule::check_items(const nlohmann::json& array, const std::string& path,
                            std::vector<FieldError>& errors) const {
  if (items_.empty()) return;
  for (std::size_t i = 0; i < array.size() && errors.size() <= kMaxFieldErrors; ++i)
    items_.front().check_json(array[i], path + "[" + std::to_string(i) + "]", errors);
}

}  // namespace edri::plugin
