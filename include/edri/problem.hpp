// RFC 9457 problem details as JSON text, written without a JSON library:
// what the listener answers an HTTP error with, and what a hop puts in the
// envelope of a request it cannot pass on. (A handler's Response::problem
// has a title of its own and keeps nlohmann's key order: json_members.hpp.)
#pragma once

#include <string>
#include <string_view>

#include <edri/status.hpp>

namespace edri {

// Escapes `text` for a JSON string literal (without the quotes).
inline void append_json_escaped(std::string& out, std::string_view text) {
  static constexpr char hex[] = "0123456789abcdef";
  for (unsigned char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          out += "\\u00";
          out += hex[c >> 4];
          out += hex[c & 15];
        } else {
          out += static_cast<char>(c);
        }
    }
  }
}

// {"type":"about:blank","title":<reason phrase>,"status":..,"detail":..}
inline std::string problem_json(int status, std::string_view detail) {
  std::string body = R"({"type":"about:blank","title":")";
  append_json_escaped(body, reason_phrase(status));
  body += R"(","status":)" + std::to_string(status) + R"(,"detail":")";
  append_json_escaped(body, detail);
  body += "\"}";
  return body;
}

}  // namespace edri
