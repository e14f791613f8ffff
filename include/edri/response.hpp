// What a handler answers: a Response (status, head, and one body: bytes, a
// file or a stream), or the Deferred token when it answers later.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include <edri/json_members.hpp>
#include <edri/status.hpp>

namespace edri {

// The one rule for a response header a plugin adds, wherever it adds it
// (Response::header, ResponseHeaders::add): a name, no ':' in it, and no
// CR, LF or NUL in either part, so that no header can end the head early
// or smuggle another one in.
// One pass over each byte: find_first_of would call memchr over the three
// breaks once per byte, which every answer's X-Request-Id and traceparent
// paid for (1 % of the listener's CPU at c=32).
constexpr bool has_line_break(std::string_view text) {
  for (const char c : text)
    if (c == '\r' || c == '\n' || c == '\0') return true;
  return false;
}
constexpr bool is_valid_header(std::string_view name, std::string_view value) {
  return !name.empty() && !has_line_break(name) && name.find(':') == std::string_view::npos && !has_line_break(value);
}

// A status in JSON is its number.
inline void to_json(nlohmann::json& j, Status status) { j = status.code; }

// Makes a streamed body (Response::stream) piece by piece, as the client
// takes it: appends the next piece to `out` (a piece of about 64 KiB is
// best; any size works) and returns true while more will follow, false
// with the last piece. It runs in the manager's loop, called again only
// when the client has taken enough of what came before, so a client that
// stops reading stops the producer. A throw ends the stream: the client
// sees the response cut short (the connection closes without the final
// chunk).
using BodyProducer = std::function<bool(std::string& out)>;

// A body the listener sends from disk (it never crosses a channel), with
// ETag and Last-Modified, answering Range (206/416) and
// If-None-Match/If-Modified-Since (304) itself.
struct FileBody {
  std::string path;
};

// A body made by a producer as the client takes it: chunked, or with
// Content-Length when `length` is known.
struct StreamBody {
  BodyProducer next;
  std::optional<std::uint64_t> length;
};

// Bytes (a string is a byte container here; a large one travels through
// the blob area, which is the manager's choice, not the handler's), a
// file, or a stream.
using ResponseBody = std::variant<std::string, FileBody, StreamBody>;

struct Response {
  Status status = Status::Ok;
  std::string content_type = "application/json";
  ResponseBody body;
  std::vector<std::pair<std::string, std::string>> headers;

  // A JSON value, serialized.
  static Response json(const nlohmann::json& value, Status status = Status::Ok) {
    return with_bytes(status, "application/json", value.dump());
  }
  // A JSON object from a braced list of members, `json({{"id", 1}, {"ok",
  // true}})`: C++ picks this overload for such a list, and it writes the
  // text nlohmann would have without building a DOM (json_members.hpp).
  static Response json(std::initializer_list<JsonMember> members, Status status = Status::Ok) {
    return with_bytes(status, "application/json", json_object_text(members));
  }
  // A body that is already serialized JSON (no parsing, no copy of a DOM).
  static Response raw_json(std::string body, Status status = Status::Ok) {
    return with_bytes(status, "application/json", std::move(body));
  }
  static Response html(std::string body, Status status = Status::Ok) {
    return with_bytes(status, "text/html; charset=utf-8", std::move(body));
  }
  static Response text(std::string body, Status status = Status::Ok) {
    return with_bytes(status, "text/plain; charset=utf-8", std::move(body));
  }
  // Raw bytes.
  static Response bytes(std::string data, std::string content_type = "application/octet-stream",
                        Status status = Status::Ok) {
    return with_bytes(status, std::move(content_type), std::move(data));
  }
  // The file at `path` (absolute, or relative to the server's working
  // directory), sent from disk (FileBody); `content_type` empty: by its
  // extension. A file that cannot be read when the answer is sent is a 500.
  static Response file(std::string path, std::string content_type = {}) {
    return Response{Status::Ok, std::move(content_type), FileBody{std::move(path)}, {}};
  }
  // A body made by `next` piece by piece as the client takes it (see
  // BodyProducer): chunked, or with Content-Length when `length` is given
  // (the producer must then make exactly that many bytes, else the
  // connection is closed short). Over WebSocket, and to another manager's
  // request, the pieces are collected into one body.
  static Response stream(BodyProducer next, std::string content_type = "application/octet-stream",
                         std::optional<std::uint64_t> length = {}) {
    return Response{Status::Ok, std::move(content_type), StreamBody{std::move(next), length}, {}};
  }
  // No body: 204 by default.
  static Response empty(Status status = Status::NoContent) { return with_bytes(status, {}, {}); }
  // A redirect to `location` (302, or 301/303/307/308).
  static Response redirect(std::string location, Status status = Status::Found) {
    return with_bytes(status, {}, {}).header("Location", std::move(location));
  }
  // RFC 9457 problem details.
  static Response problem(Status status, std::string_view title, std::string_view detail) {
    return with_bytes(
        status, "application/problem+json",
        json_object_text({{"type", "about:blank"}, {"title", title}, {"status", status}, {"detail", detail}}));
  }

  // The body's bytes; empty for a file or a stream.
  std::string_view body_bytes() const {
    const auto* b = std::get_if<std::string>(&body);
    return b ? std::string_view(*b) : std::string_view{};
  }
  bool is_stream() const { return std::holds_alternative<StreamBody>(body); }

  // Adds a header; throws std::invalid_argument for one is_valid_header
  // refuses (the handler's bug: its request is answered 500).
  Response& header(std::string name, std::string value) {
    if (!is_valid_header(name, value))
      throw std::invalid_argument("response header " + name.substr(0, 64) + ": CR, LF or NUL, or ':' in the name");
    headers.emplace_back(std::move(name), std::move(value));
    return *this;
  }

  struct CookieOptions {
    std::string path = "/";
    long max_age = -1;  // seconds; -1: a session cookie; 0: delete it
    bool http_only = true;
    bool secure = false;
    std::string same_site = "Lax";  // "Strict", "Lax", "None" or empty
  };
  // Adds a Set-Cookie header (RFC 6265).
  Response& cookie(const std::string& name, const std::string& value, const CookieOptions& o) {
    std::string c = name + "=" + value;
    if (!o.path.empty()) c += "; Path=" + o.path;
    if (o.max_age >= 0) c += "; Max-Age=" + std::to_string(o.max_age);
    if (o.http_only) c += "; HttpOnly";
    if (o.secure) c += "; Secure";
    if (!o.same_site.empty()) c += "; SameSite=" + o.same_site;
    return header("Set-Cookie", std::move(c));
  }
  Response& cookie(const std::string& name, const std::string& value) { return cookie(name, value, CookieOptions{}); }

 private:
  static Response with_bytes(Status status, std::string content_type, std::string bytes) {
    return Response{status, std::move(content_type), std::move(bytes), {}};
  }
};

// The token a handler returns when it answers later, through the Responder
// Context::defer() gave it (or through Context::in_thread/in_process).
struct Deferred {};

// What a handler returns: a response now, or Deferred.
using Reply = std::variant<Response, Deferred>;

// Headers a middleware adds to the response of the request it sees.
class ResponseHeaders {
 public:
  // Adds "name: value"; false for one is_valid_header refuses.
  bool add(std::string_view name, std::string_view value) {
    if (!is_valid_header(name, value)) return false;
    lines_.append(name).append(": ").append(value).append("\r\n");
    return true;
  }
  const std::string& lines() const { return lines_; }
  void clear() { lines_.clear(); }

 private:
  std::string lines_;
};

}  // namespace edri
