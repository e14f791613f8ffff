// What a handler sees of a request: Request, its parameters and form
// parts, and RequestError, the client's mistake a handler may answer.
#pragma once

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <nlohmann/json.hpp>

#include <edri/json_depth.hpp>

namespace edri {

enum class Method : std::uint8_t { Get, Head, Post, Put, Delete, Patch, Options };

inline constexpr std::string_view method_name(Method m) {
  switch (m) {
    case Method::Get: return "GET";
    case Method::Head: return "HEAD";
    case Method::Post: return "POST";
    case Method::Put: return "PUT";
    case Method::Delete: return "DELETE";
    case Method::Patch: return "PATCH";
    case Method::Options: return "OPTIONS";
  }
  return "?";
}

// A name=value pair that points into the request's envelope; valid only for
// the duration of the handler call.
struct Param {
  std::string_view name;
  std::string_view value;
};

// Writes `data` to a new file at `path` (replacing one there); false on
// failure.
inline bool write_file(const std::string& path, std::string_view data) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return false;
  const bool ok = std::fwrite(data.data(), 1, data.size(), f) == data.size();
  return std::fclose(f) == 0 && ok;
}

// The whole of `v` as a 64-bit integer: '-' and digits, no '+', no
// overflow, nothing after. The one rule for `{name:int}` path segments and
// Request::int_param/int_query, so a value the route matched is one the
// handler can read.
inline std::optional<std::int64_t> parse_int64(std::string_view v) {
  std::int64_t out = 0;
  const auto [end, error] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (error != std::errc{} || end != v.data() + v.size()) return std::nullopt;
  return out;
}

// One part of a multipart/form-data body (Request::form); views into the
// body, valid for the handler call.
struct FormPart {
  std::string_view name;
  std::string_view filename;      // empty for a plain field
  std::string_view content_type;  // empty when the part named none
  std::string_view data;
  // Keeps the part's bytes as the file `path`.
  bool save(const std::string& path) const { return write_file(path, data); }
};

// The client's request cannot be served as sent. Request::json() throws it;
// a handler may too. The manager answers it as a problem with this status
// (a 4xx; another is answered 400) and what() as the detail, even with
// ENVIRONMENT=production (it is about the request, not the server), where
// any other exception is a 500.
class RequestError : public std::runtime_error {
 public:
  RequestError(int status, const std::string& detail) : std::runtime_error(detail), status_(status) {}
  int status() const noexcept { return status_; }

 private:
  int status_;
};

// What a handler sees of a request. The views point into the shared-memory
// envelope the manager is reading; copy what must outlive the call.
class Request {
 public:
  // Method and path are set for middleware; a handler knows its route.
  // For a WebSocket command or a gRPC call, middleware sees the method of
  // the event's first route (POST when it has none) and the path of the
  // handshake or of the gRPC method.
  Method method = Method::Get;
  std::string_view path;   // the request path, without the query
  std::string_view event;  // the event's name (in middleware: the one the call becomes, or empty)
  // The protocol the client spoke: "http/1.1" (and 1.0), "h2",
  // "websocket" or "grpc".
  std::string_view protocol;
  // The client's IP address, as the listener's socket saw it, or as a
  // trusted proxy named it (a PROXY protocol header with
  // EDRI_PROXY_PROTOCOL=on, X-Forwarded-For, Forwarded; only from the
  // addresses of EDRI_TRUSTED_PROXIES). "unix" over a Unix socket.
  std::string_view client_address;
  // Who the caller is, as middleware named it (Admission::set_principal);
  // empty when none did. claims() are what it said of the caller.
  std::string_view principal;
  std::string_view claims_json;  // claims() as JSON text; empty: none
  // Unique to this request within the server's life, across process
  // restarts, and the same when the request is replayed (Registry::replay):
  // a key to deduplicate writes on. Empty in middleware.
  std::string_view id;
  // With tracing on (EDRI_TRACE_*, docs/operations.md): the W3C
  // `traceparent` of this handler's span, "00-<trace id>-<span id>-<flags>".
  // The calls a handler makes through its Context (ask, request, fetch,
  // http) carry the trace on by themselves, and Context::log's lines
  // about the request show its trace id. Empty when tracing is off.
  std::string_view traceparent;
  // The trace's `tracestate` (vendors' entries), as its client sent it and
  // as the calls above carry it on; empty when there is none.
  std::string_view tracestate;
  std::vector<Param> path_params;
  std::string_view query;  // raw query string, without '?'
  // Declared query fields, percent-decoded, defaults applied.
  std::vector<Param> query_params;
  // Declared header fields (names lower-case) and cookie fields.
  std::vector<Param> headers;
  std::vector<Param> cookies;
  std::string_view body;
  // The body's Content-Type, as the client sent it (empty without a body).
  std::string_view content_type;
  // A body larger than EDRI_UPLOAD_THRESHOLD was written to this file (under
  // EDRI_UPLOAD_FILES_PATH) as it arrived, never held in memory; `body` maps
  // it. The file is removed when the response is sent, unless keep_body()
  // moved it. Empty for a body in memory.
  std::string_view body_file;
  // multipart/form-data: the parts, in order (a malformed one was answered
  // 400 before the handler ran).
  std::vector<FormPart> form;
  // json() refuses a body nesting deeper: EDRI_MAX_JSON_DEPTH for a
  // client's request, kJsonDepthCeiling for JSON another manager made.
  std::size_t max_json_depth = kDefaultMaxJsonDepth;
  // When the client stops waiting: a gRPC call's grpc-timeout, counted
  // from when the listener took the call; time_point::max() when the
  // client set none. A handler past it runs for nobody, so long work may
  // check it and stop. A request whose deadline passed before its handler
  // could start is answered 504 without running the handler.
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();

  // Keeps the body as the file `path`: the upload file is renamed there
  // (no copy on the same file system), a body in memory written. False on
  // failure.
  bool keep_body(const std::string& path) const {
    if (!body_file.empty()) {
      if (std::rename(std::string(body_file).c_str(), path.c_str()) == 0) return true;
      if (errno != EXDEV) return false;  // another file system: copied below
    }
    return write_file(path, body);
  }
  // The form part named `name`, or nullptr.
  const FormPart* form_part(std::string_view name) const {
    for (const auto& p : form)
      if (p.name == name) return &p;
    return nullptr;
  }

  // The value of a typed field or path parameter (edri/typed_field.hpp)
  // or of a model's body (edri/model.hpp), as its declared C++ type:
  //   std::int64_t n = req.get(limit);
  template <class Declared>
  auto get(const Declared& declared) const -> decltype(declared.read(*this)) {
    return declared.read(*this);
  }

  // A path parameter by name; the listener has already checked its type.
  std::optional<std::string_view> path_param(std::string_view name) const { return find(path_params, name); }

  // An integer path parameter (declared `{name:int}` in the route, which
  // the listener matches only for a 64-bit integer). Throws
  // std::invalid_argument when the route has no such parameter, and
  // RequestError 400 when its value is not a 64-bit integer (a `{name}`
  // parameter declared without `:int`).
  std::int64_t int_param(std::string_view name) const {
    auto v = path_param(name);
    if (!v) throw std::invalid_argument("no path parameter " + std::string(name));
    return to_int(*v, "path parameter", name);
  }

  // A declared query field (validated, default applied).
  std::optional<std::string_view> query_param(std::string_view name) const { return find(query_params, name); }
  // An integer query field; throws as int_param does.
  std::int64_t int_query(std::string_view name) const {
    auto v = query_param(name);
    if (!v) throw std::invalid_argument("no query parameter " + std::string(name));
    return to_int(*v, "query parameter", name);
  }
  std::optional<std::string_view> cookie(std::string_view name) const { return find(cookies, name); }

  // The claims middleware gave the principal: a JSON object, empty when
  // there are none.
  nlohmann::json claims() const {
    if (claims_json.empty()) return nlohmann::json::object();
    auto j = nlohmann::json::parse(claims_json, nullptr, false);
    return j.is_discarded() ? nlohmann::json::object() : j;
  }

  // A request header by case-insensitive name: the event's declared header
  // fields, or every header the client sent where the event was declared
  // with Registry::all_headers.
  std::optional<std::string_view> header(std::string_view name) const {
    for (const auto& h : headers) {
      if (h.name.size() != name.size()) continue;
      bool same = true;
      for (std::size_t i = 0; i < name.size() && same; ++i) same = ascii_lower(h.name[i]) == ascii_lower(name[i]);
      if (same) return h.value;
    }
    return std::nullopt;
  }

  // The body parsed as JSON. Throws RequestError: 422 when it nests deeper
  // than max_json_depth (a document that deep could overflow the stack of
  // whatever copies, compares or serializes it), 400 when it is not JSON.
  nlohmann::json json() const {
    if (json_nests_deeper_than(body, max_json_depth))
      throw RequestError(
          422, "the body nests deeper than " + std::to_string(max_json_depth) + " levels (EDRI_MAX_JSON_DEPTH)");
    try {
      return nlohmann::json::parse(body);
    } catch (const nlohmann::json::parse_error& e) {
      throw RequestError(400, "the body is not valid JSON (at byte " + std::to_string(e.byte) + ")");
    } catch (const nlohmann::json::exception&) {
      // out_of_range 406: a number too large for a double (1e99999).
      throw RequestError(400, "the body is not valid JSON (a number out of range)");
    }
  }

 private:
  static std::optional<std::string_view> find(const std::vector<Param>& v, std::string_view name) {
    for (const auto& p : v)
      if (p.name == name) return p.value;
    return std::nullopt;
  }
  static std::int64_t to_int(std::string_view v, std::string_view what, std::string_view name) {
    if (const auto n = parse_int64(v)) return *n;
    throw RequestError(400, std::string(what) + " " + std::string(name) + " is not a 64-bit integer");
  }
  static constexpr char ascii_lower(char c) { return (c >= 'A' && c <= 'Z') ? char(c + 32) : c; }
};

}  // namespace edri
