#include "listener/request_validator.hpp"

#include <algorithm>

#include "http/route_table.hpp"

namespace edri::listener {

namespace {

// The value of `name` in "a=1&b=2" (decoded), if present.
bool find_query(std::string_view query, std::string_view name, std::string& value, bool& malformed) {
  std::string key;
  while (!query.empty()) {
    const auto amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
    const auto eq = pair.find('=');
    if (!percent_decode(pair.substr(0, eq), key, true)) {
      malformed = true;
      continue;
    }
    if (key != name) continue;
    if (!percent_decode(eq == std::string_view::npos ? std::string_view{} : pair.substr(eq + 1), value, true)) {
      malformed = true;
      return false;
    }
    return true;
  }
  return false;
}

bool find_cookie(std::string_view header, std::string_view name, std::string& value) {
  while (!header.empty()) {
    const auto semi = header.find(';');
    std::string_view pair = header.substr(0, semi);
    header = semi == std::string_view::npos ? std::string_view{} : header.substr(semi + 1);
    while (!pair.empty() && pair.front() == ' ') pair.remove_prefix(1);
    const auto eq = pair.find('=');
    if (eq == std::string_view::npos || pair.substr(0, eq) != name) continue;
    std::string_view v = pair.substr(eq + 1);
    if (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = v.substr(1, v.size() - 2);
    value.assign(v);
    return true;
  }
  return false;
}

char lower_char(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; }

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = lower_char(c);
  return out;
}

// RFC 9110 5.6.2 token characters.
bool is_token(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    const bool alnum = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    if (!alnum && std::string_view("!#$%&'*+-.^_`|~").find(c) == std::string_view::npos) return false;
  }
  return true;
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (lower_char(a[i]) != lower_char(b[i])) return false;
  return true;
}

}  // namespace

namespace {
// What an event that refuses unknown fields knows beside its fields: the
// path parameters of its first route (a command's fields carry them).
UnknownFields unknown_fields_of(const plugin::PluginSet& plugins, std::size_t event) {
  UnknownFields unknown{plugins.events()[event].closed, {}};
  for (const auto& r : plugins.routes()) {
    if (r.event != event) continue;
    for (auto& [name, type] : http::RouteTable::parameters(r.path)) unknown.path_params.push_back(name);
    break;
  }
  return unknown;
}
}  // namespace

std::vector<std::shared_ptr<const RequestValidator>> make_validators(const plugin::PluginSet& plugins,
                                                                     std::size_t max_json_depth) {
  std::vector<std::shared_ptr<const RequestValidator>> validators(plugins.events().size());
  for (std::size_t e = 0; e < plugins.events().size(); ++e)
    if (!plugins.events()[e].fields.empty() || plugins.events()[e].closed)
      validators[e] = std::make_shared<const RequestValidator>(plugins.events()[e].fields, max_json_depth,
                                                               unknown_fields_of(plugins, e));
  return validators;
}

bool is_json_content_type(std::string_view type) {
  type = type.substr(0, type.find(';'));
  while (!type.empty() && (type.back() == ' ' || type.back() == '\t')) type.remove_suffix(1);
  while (!type.empty() && (type.front() == ' ' || type.front() == '\t')) type.remove_prefix(1);
  const auto slash = type.find('/');
  if (slash == std::string_view::npos) return false;
  const auto subtype = type.substr(slash + 1);
  if (!is_token(type.substr(0, slash)) || !is_token(subtype)) return false;
  if (iequals(type, "application/json")) return true;
  constexpr std::string_view suffix = "+json";
  return subtype.size() > suffix.size() && iequals(subtype.substr(subtype.size() - suffix.size()), suffix);
}

bool percent_decode(std::string_view in, std::string& out, bool plus_is_space) {
  out.clear();
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  for (std::size_t i = 0; i < in.size(); ++i) {
    const char c = in[i];
    if (c == '%') {
      if (i + 2 >= in.size()) return false;
      const int hi = hex(in[i + 1]), lo = hex(in[i + 2]);
      if (hi < 0 || lo < 0) return false;
      out += static_cast<char>(hi * 16 + lo);
      i += 2;
    } else if (c == '+' && plus_is_space) {
      out += ' ';
    } else {
      out += c;
    }
  }
  return true;
}

RequestValidator::RequestValidator(std::vector<FieldDecl> fields, std::size_t max_json_depth, UnknownFields unknown)
    : max_json_depth_(max_json_depth), unknown_(std::move(unknown)) {
  // The plugin set made each rule at start-up already, so none throws here.
  for (const auto& f : fields) rules_.emplace_back(f);
  for (const auto& f : fields) {
    if (f.source != FieldSource::Body) continue;
    has_body_fields_ = true;
    if (!f.name.empty()) has_named_body_fields_ = true;
  }
}

void RequestValidator::check(std::string_view query, const http::HttpRequest& req, ValidatedFields& out) const {
  out.clear();
  nlohmann::json body;
  if (has_body_fields_) {
    // A body the client did not call JSON is refused before it is read as
    // JSON: text/plain (or a form type) is what a cross-site page can send
    // without a CORS preflight.
    const bool has_body = req.body_size > 0 || !req.body.empty();
    if (has_body && !is_json_content_type(req.header("content-type"))) {
      out.status = 415;
      return;
    }
    if (!depth_ok(req.body, max_json_depth_, "body", out)) return;
    body = nlohmann::json::parse(req.body, nullptr, false);
    if (body.is_discarded()) {
      out.status = 400;
      return;
    }
    if (has_named_body_fields_ && !body.is_object()) {
      out.errors.push_back({"body", "must be a JSON object"});
      out.status = 422;
      return;
    }
  }
  check_fields(
      body, req, "body",
      [&](const std::string& name, std::string& value, const char*& problem) {
        bool malformed = false;
        const bool found = find_query(query, name, value, malformed);
        if (malformed && !found) problem = "has a malformed percent-escape";
        return found;
      },
      out);
  // A body is read as an object only where it has named fields.
  if (has_named_body_fields_) check_unknown(body, false, out);
}

template <class FindQuery>
void RequestValidator::check_fields(const nlohmann::json& body, const http::HttpRequest& req,
                                    std::string_view whole_body_label, FindQuery&& find_query_value,
                                    ValidatedFields& out) const {
  std::string value;
  for (const auto& rule : rules_) {
    const FieldDecl& f = rule.decl();
    bool present = false;
    switch (f.source) {
      case FieldSource::Body: {
        if (f.name.empty()) {  // the whole body (JsonBody())
          rule.check_json(body, std::string(whole_body_label), out.errors);
          present = true;
          break;
        }
        auto it = body.find(f.name);
        if (it != body.end() && (!it->is_null() || f.null_ok)) {
          rule.check_json(*it, f.name, out.errors);
          present = true;
        }
        break;
      }
      case FieldSource::Query: {
        const char* problem = nullptr;
        present = find_query_value(f.name, value, problem);
        if (problem) {
          plugin::add_field_error(out.errors, f.name, problem);
          continue;
        }
        if (!present && !f.default_value.is_null()) {
          value = f.default_value.is_string() ? f.default_value.get<std::string>() : f.default_value.dump();
          present = true;
        }
        if (present) {
          rule.check_text(value, f.name, out.errors);
          out.query.emplace_back(f.name, value);
        }
        break;
      }
      case FieldSource::Header:
      case FieldSource::Cookie: check_headers(rule, req, out, present); break;
    }
    if (!present && f.required) plugin::add_field_error(out.errors, f.name, "is required");
  }
  if (!out.errors.empty()) out.status = 422;
}

void RequestValidator::check_headers(const plugin::FieldRule& rule, const http::HttpRequest& req, ValidatedFields& out,
                                     bool& present) const {
  const FieldDecl& f = rule.decl();
  if (f.source == FieldSource::Header) {
    const std::string name = lower(f.name);
    for (const auto& [k, v] : req.headers) {
      if (lower(k) != name) continue;
      present = true;
      rule.check_text(v, f.name, out.errors);
      out.headers.emplace_back(name, v);
      return;
    }
    return;
  }
  std::string value;
  present = find_cookie(req.header("cookie"), f.name, value);
  if (present) {
    rule.check_text(value, f.name, out.errors);
    out.cookies.emplace_back(f.name, value);
  }
}

void RequestValidator::check_message(const nlohmann::json& msg, const http::HttpRequest& upgrade,
                                     ValidatedFields& out) const {
  out.clear();
  check_fields(
      msg, upgrade, "message",
      [&](const std::string& name, std::string& value, const char*& problem) {
        auto it = msg.find(name);
        if (it == msg.end() || it->is_null()) return false;
        if (it->is_structured()) {
          problem = "must be a single value";
          return false;
        }
        value = it->is_string() ? it->get<std::string>() : it->dump();
        return true;
      },
      out);
  if (msg.is_object()) check_unknown(msg, true, out);
}

bool RequestValidator::declares(const std::string& name, bool message) const {
  for (const auto& rule : rules_) {
    const FieldDecl& f = rule.decl();
    // A message holds query fields too; a body only body fields.
    if (f.name == name && (f.source == FieldSource::Body || (message && f.source == FieldSource::Query))) return true;
  }
  return message &&
         std::find(unknown_.path_params.begin(), unknown_.path_params.end(), name) != unknown_.path_params.end();
}

void RequestValidator::check_unknown(const nlohmann::json& fields, bool message, ValidatedFields& out) const {
  if (!unknown_.refused || !fields.is_object()) return;
  for (const auto& [key, value] : fields.items())
    if (!declares(key, message)) plugin::add_field_error(out.errors, key, "is not a declared field");
  if (!out.errors.empty()) out.status = 422;
}

bool RequestValidator::depth_ok(std::string_view text, std::size_t limit, std::string_view field,
                                ValidatedFields& out) {
  if (!json_nests_deeper_than(text, limit)) return true;
  out.clear();
  out.status = 422;
  out.errors.push_back(
      {std::string(field), "nests deeper than " + std::to_string(limit) + " levels (EDRI_MAX_JSON_DEPTH)"});
  return false;
}

std::string RequestValidator::problem_body(const ValidatedFields& out) {
  nlohmann::json j{{"type", "about:blank"}, {"status", out.status}};
  if (out.status == 415) {
    j["title"] = "Unsupported Media Type";
    j["detail"] = "a JSON body needs Content-Type application/json";
    return j.dump();
  }
  if (out.status == 400) {
    j["title"] = "Bad Request";
    j["detail"] = "the body is not valid JSON";
    return j.dump();
  }
  j["title"] = "Unprocessable Content";
  j["detail"] = std::to_string(out.errors.size()) + (out.errors.size() == 1 ? " field is" : " fields are") + " invalid";
  auto& errs = j["errors"] = nlohmann::json::array();
  for (const auto& e : out.errors) errs.push_back({{"field", e.field}, {"message", e.message}});
  return j.dump();
}

}  // namespace edri::listener
