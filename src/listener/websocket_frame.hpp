// Server-to-client WebSocket data frames (RFC 6455 section 5.2), written by
// the listener itself rather than by Beast.
//
// A server frame is never masked, and the one extension edri agrees to
// (permessage-deflate, websocket_deflate.hpp) compresses each message
// alone, so the frame of a message is the same bytes for every connection
// that agreed the same: a push is framed once and the one buffer goes to
// every subscriber (SharedFrame).
// Beast still writes the control frames (pong, close) into the same output.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "listener/shared_frame.hpp"

namespace edri::listener {

// Appends the header of a final text frame carrying `payload_size` bytes.
inline void append_text_frame_header(std::string& out, std::size_t payload_size) {
  out += static_cast<char>(0x81);  // FIN, opcode 1 (text)
  if (payload_size < 126) {
    out += static_cast<char>(payload_size);
  } else if (payload_size < 65536) {
    out += static_cast<char>(126);
    out += static_cast<char>(payload_size >> 8);
    out += static_cast<char>(payload_size & 0xff);
  } else {
    out += static_cast<char>(127);
    for (int shift = 56; shift >= 0; shift -= 8) out += static_cast<char>((payload_size >> shift) & 0xff);
  }
}

// A whole text frame of `payload`.
inline std::string text_frame(std::string_view payload) {
  std::string f;
  f.reserve(payload.size() + 10);
  append_text_frame_header(f, payload.size());
  f.append(payload);
  return f;
}

// A close frame (opcode 8) with `code` and up to 123 bytes of `reason`.
inline std::string close_frame(std::uint16_t code, std::string_view reason) {
  reason = reason.substr(0, 123);
  std::string f;
  f += static_cast<char>(0x88);
  f += static_cast<char>(2 + reason.size());
  f += static_cast<char>(code >> 8);
  f += static_cast<char>(code & 0xff);
  f.append(reason);
  return f;
}

}  // namespace edri::listener
