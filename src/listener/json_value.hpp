// An answer's body as a JSON value, for the fronts that carry answers
// inside JSON or a JSON field (a WebSocket message, a gRPC Event): a JSON
// body as it is, nothing as {}, anything else as a JSON string.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace edri::listener {

// application/json, or any +json type (application/problem+json).
inline bool is_json_type(std::string_view content_type) {
  const std::string_view t = content_type.substr(0, content_type.find(';'));
  return t == "application/json" || (t.size() > 5 && t.substr(t.size() - 5) == "+json");
}

inline void append_json_value(std::string& out, std::string_view content_type, std::string_view body) {
  if (body.empty())
    out.append("{}");
  else if (is_json_type(content_type))
    out.append(body);
  else
    out.append(nlohmann::json(std::string(body)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

}  // namespace edri::listener
