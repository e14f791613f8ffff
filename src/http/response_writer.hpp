// ResponseWriter: serializes HTTP/1.1 responses into a connection's output
// buffer. Holds the once-a-second Date header so that a response costs a
// few appends.
#pragma once

#include <cstdint>
#include <ctime>
#include <string>
#include <string_view>
#include <utility>

#include <edri/problem.hpp>

namespace edri::http {

struct ResponseHead {
  int status = 200;
  std::string_view content_type;
  std::size_t content_length = 0;
  bool keep_alive = true;
  bool http10 = false;  // the client spoke HTTP/1.0: say keep-alive explicitly
  bool head = false;    // HEAD: headers only
  // How the body's end is known: Content-Length, chunked transfer coding
  // (a streamed body), or the connection's close (a streamed body to an
  // HTTP/1.0 client; keep_alive must be false).
  enum class Framing : std::uint8_t { Length, Chunked, Close } framing = Framing::Length;
};

// A status whose answer has no body (RFC 9110 6.4.1): 1xx, 204, 304.
inline bool bodyless_status(int status) { return status == 204 || status == 304 || status < 200; }

class ResponseWriter {
 public:
  // Appends status line and standard headers, then `extra` header lines
  // (each "Name: value\r\n", already formatted), then the blank line and,
  // unless HEAD, the body.
  void write(std::string& out, const ResponseHead& h, std::string_view extra_headers, std::string_view body);
  // The lines every answer starts with (Server, Date), for a protocol that
  // frames its answers itself (HTTP/2).
  std::string_view standard_lines();

 private:
  void refresh_date();
  std::time_t date_second_ = 0;
  std::string date_line_;
  std::string standard_lines_;
};

// RFC 9457 problem details and reason phrases live in the plugin API
// (edri/problem.hpp), which every layer may use.
using edri::append_json_escaped;
using edri::problem_json;
using edri::reason_phrase;

}  // namespace edri::http
