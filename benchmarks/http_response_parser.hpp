#pragma once

#include <cstddef>
#include <string_view>

namespace edri::bench {

// Frames one HTTP/1.1 response at the front of a byte buffer. Only what a
// keep-alive load generator needs: status code, Content-Length or chunked
// body, and whether the server is about to close the connection.
struct ParsedResponse {
  enum class State { kIncomplete, kComplete, kMalformed };

  State state = State::kIncomplete;
  int status = 0;
  std::size_t total_size = 0;   // header + body bytes, valid when kComplete
  std::size_t body_offset = 0;  // where the body starts, valid when kComplete
  bool chunked = false;         // body bytes still carry the chunk framing
  bool connection_close = false;
};

// Never throws; a response not framed by Content-Length or chunked encoding
// (other than 1xx/204/304) is kMalformed because on a kept-alive connection
// its end could only be learnt from the server closing it.
ParsedResponse parse_http_response(std::string_view bytes);

}  // namespace edri::bench
