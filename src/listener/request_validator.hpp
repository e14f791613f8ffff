// RequestValidator: an event's declared fields, checked at the edge.
//
// The listener runs it before a request leaves the process, so a request
// with a bad field never crosses a process boundary. Every bad field is
// reported, not only the first. What passes is handed on decoded: query
// fields with their defaults applied, declared headers and cookies.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <edri/json_depth.hpp>
#include <edri/plugin.hpp>

#include "http/request_parser.hpp"
#include "plugin/field_rules.hpp"
#include "plugin/plugin_set.hpp"

namespace edri::listener {

using plugin::FieldError;

struct ValidatedFields {
  std::vector<std::pair<std::string, std::string>> query;    // declared query fields
  std::vector<std::pair<std::string, std::string>> headers;  // declared headers, names lower-case
  std::vector<std::pair<std::string, std::string>> cookies;  // declared cookies
  std::vector<FieldError> errors;
  int status = 0;  // 0: valid; 400: body is not JSON; 415: body is not declared JSON; 422: see errors
  void clear() {
    query.clear();
    headers.clear();
    cookies.clear();
    errors.clear();
    status = 0;
  }
};

// Fields an event does not declare (Registry::refuse_unknown_fields).
struct UnknownFields {
  bool refused = false;  // else they pass, as JSON Schema's default
  // What a WebSocket command's or gRPC call's fields may also hold: the
  // path parameters of the event's route.
  std::vector<std::string> path_params;
};

class RequestValidator {
 public:
  // A JSON body nesting deeper than `max_json_depth` is refused before it
  // is parsed (EDRI_MAX_JSON_DEPTH; see edri/json_depth.hpp).
  explicit RequestValidator(std::vector<FieldDecl> fields, std::size_t max_json_depth = kDefaultMaxJsonDepth,
                            UnknownFields unknown = {});

  bool empty() const { return rules_.empty() && !unknown_.refused; }
  // Whether check() reads the body (a JSON body or body fields).
  bool reads_body() const { return has_body_fields_; }
  // Checks `req` (whose raw query string is `query`) into `out`.
  void check(std::string_view query, const http::HttpRequest& req, ValidatedFields& out) const;

  // Checks a WebSocket command: body and query fields are read from the
  // message object `msg` (its fields, without "command"; a query field may
  // come as a JSON scalar), header and cookie fields from the connection's
  // upgrade request.
  void check_message(const nlohmann::json& msg, const http::HttpRequest& upgrade, ValidatedFields& out) const;

  // The 422/415/400 problem+json body for `out`.
  static std::string problem_body(const ValidatedFields& out);

  // Whether `text` nests at most `limit` levels deep; if not, `out` is the
  // 422 naming `field`. Checked before any client JSON is parsed.
  static bool depth_ok(std::string_view text, std::size_t limit, std::string_view field, ValidatedFields& out);

 private:
  std::vector<plugin::FieldRule> rules_;
  std::size_t max_json_depth_;
  UnknownFields unknown_;
  bool has_body_fields_ = false;
  bool has_named_body_fields_ = false;
  void check_headers(const plugin::FieldRule& rule, const http::HttpRequest& req, ValidatedFields& out,
                     bool& present) const;
  // The one walk over the fields for both: `find_query_value(name, value,
  // problem)` says whether a query field is there (REST: the query string;
  // WebSocket: the message).
  // With unknown fields refused: each member of `fields` that no rule
  // (nor, in a message, a path parameter) declares is an error.
  void check_unknown(const nlohmann::json& fields, bool message, ValidatedFields& out) const;
  bool declares(const std::string& name, bool message) const;
  template <class FindQuery>
  void check_fields(const nlohmann::json& body, const http::HttpRequest& req, std::string_view whole_body_label,
                    FindQuery&& find_query_value, ValidatedFields& out) const;
};

// One validator per event of `plugins`, shared by the routes and commands
// that lead to it (null: the event declares no fields and lets unknown
// ones pass).
std::vector<std::shared_ptr<const RequestValidator>> make_validators(const plugin::PluginSet& plugins,
                                                                     std::size_t max_json_depth);

// Whether a Content-Type names JSON: application/json or any type/x+json
// (RFC 6839), parameters allowed, case-insensitive.
bool is_json_content_type(std::string_view content_type);

// "a%20b+c" -> "a b c". Returns false on a malformed escape.
bool percent_decode(std::string_view in, std::string& out, bool plus_is_space);

}  // namespace edri::listener
