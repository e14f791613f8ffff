// FieldRule: a declared field (edri/fields.hpp) made ready to check
// values: its pattern compiled once (RE2, linear in the value), its
// members' and items' rules made with it. Built at start-up, where a
// declaration that cannot hold throws with a message; the listener's
// RequestValidator then checks every request's fields with it.
#pragma once

#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <edri/fields.hpp>

namespace re2 {
class RE2;
}

namespace edri::plugin {

struct FieldError {
  std::string field;  // its path: "title", "owner.name", "lines[3].qty"
  std::string message;
};

// A declaration that cannot hold: its message names the field's path.
struct FieldDeclError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Past this many, a request's further errors are not listed (one more
// entry says so): an array of a million bad items makes a short answer.
inline constexpr std::size_t kMaxFieldErrors = 64;

class FieldRule {
 public:
  // Throws FieldDeclError: a pattern that does not compile (or on a field
  // that is not text), members on a field that is not an object, items
  // on one that is not an array, min above max, a one_of value or a
  // default that the field's own rules refuse.
  explicit FieldRule(const FieldDecl& decl);

  const FieldDecl& decl() const { return decl_; }
  // A JSON value (a body's field, an object's member, an item) at `path`.
  void check_json(const nlohmann::json& v, const std::string& path, std::vector<FieldError>& errors) const;
  // A value that came as text (a query parameter, a header, a cookie).
  void check_text(std::string_view v, const std::string& path, std::vector<FieldError>& errors) const;

 private:
  void check_members(const nlohmann::json& object, const std::string& path, std::vector<FieldError>& errors) const;
  void check_items(const nlohmann::json& array, const std::string& path, std::vector<FieldError>& errors) const;
  // one_of and pattern, on a value of the right type.
  void check_value(const nlohmann::json& v, const std::string& path, std::vector<FieldError>& errors) const;
  // `where`: the field's path in messages ("owner.name", "lines[].qty").
  FieldRule(FieldDecl decl, std::string where);
  void check_declaration(const std::string& where) const;

  FieldDecl decl_;  // its members and items are the rules' below
  std::shared_ptr<const re2::RE2> regex_;
  std::vector<FieldRule> members_;
  std::vector<FieldRule> items_;  // none, or the rule of every item
};

// Adds an error unless the list is full; false once it is.
bool add_field_error(std::vector<FieldError>& errors, std::string path, std::string message);

}  // namespace edri::plugin
