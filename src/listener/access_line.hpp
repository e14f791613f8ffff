// AccessLine: one line of the access log, from what the listener knew of a
// call when it came (an AccessRecord) and how it ended (an AccessOutcome),
// in nginx's combined format or as a JSON object (docs/operations.md). Pure
// text: the writing is AccessLog's.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "runtime/trace_context.hpp"

namespace edri::listener {

enum class AccessFormat : std::uint8_t { Off, Combined, Json };

// One call as it came: an HTTP request (either version), a WebSocket
// command or a gRPC call.
struct AccessRecord {
  std::chrono::system_clock::time_point received;
  std::chrono::steady_clock::time_point started;
  std::string_view protocol;  // "http/1.1", "http/1.0", "h2", "websocket", "grpc": static text
  std::string method;         // the HTTP method, the command's name, "POST" for gRPC
  std::string target;         // the path and query as they came; the handshake's path for a command
  std::string_view route;     // the route's template; empty: none (stable text of the listener's)
  std::string_view domain;    // the domain of the event it became; empty: none
  std::string client;         // the client's address (a trusted proxy's client, where one named it)
  std::string request_id;
  std::string trace_id;  // of a valid `traceparent`, else empty; with tracing on, of the trace
  std::string user_agent;
  std::string referer;
  std::uint64_t bytes_in = 0;  // the body's, or the command message's
  // With tracing on (EDRI_TRACE_*): the listener's span of the call, the
  // client's span it continues (zeros: it started the trace), and the
  // Trace section that carries it on (envelope::SectionType::Trace).
  bool traced = false;
  TraceContext span;
  SpanId parent{};
  std::string trace_section;
};

struct AccessOutcome {
  int status = 0;               // the HTTP status (a gRPC call's: 200 once its head went)
  int grpc_status = -1;         // a gRPC call's status code; -1: not a gRPC call
  std::uint64_t bytes_out = 0;  // of the answer's body (a command's message; a gRPC call's messages)
  std::chrono::steady_clock::time_point ended;
};

// The trace id (32 lowercase hex digits) of a W3C `traceparent` header
// ("00-<trace id>-<parent id>-<flags>"); empty when it is not one.
std::string_view trace_id_of(std::string_view traceparent);

// Formats lines; keeps the text of the current second, so that most lines
// format no date. One per writer thread.
class AccessFormatter {
 public:
  explicit AccessFormatter(AccessFormat format) : format_(format) {}
  // Appends the line (with its '\n') to `out`.
  void append(std::string& out, const AccessRecord& r, const AccessOutcome& o);

 private:
  void append_combined(std::string& out, const AccessRecord& r, const AccessOutcome& o);
  void append_json(std::string& out, const AccessRecord& r, const AccessOutcome& o);
  // second_ = the second of `t`, and its texts.
  void set_second(std::chrono::system_clock::time_point t);

  AccessFormat format_;
  std::int64_t second_ = -1;
  std::string combined_time_;  // "06/Dec/2026:07:45:12 +0000"
  std::string iso_time_;       // "2026-12-06T07:45:12"
};

}  // namespace edri::listener
