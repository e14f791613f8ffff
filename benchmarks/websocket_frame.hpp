#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace edri::bench {

// The opening handshake of a WebSocket at `path` (a fixed key: the load
// generator checks the status, not the accept hash).
std::string websocket_upgrade(const std::string& path, const std::string& host);

// One text message as a single masked client frame. The mask key is fixed:
// the server cannot tell, and the frame is built once per run.
std::string masked_text_frame(std::string_view text);

// Frames one unmasked server frame at the front of a byte buffer.
struct ParsedFrame {
  enum class State { kIncomplete, kComplete, kMalformed };
  State state = State::kIncomplete;
  int opcode = 0;
  std::size_t payload_offset = 0;
  std::size_t total_size = 0;
};

ParsedFrame parse_server_frame(std::string_view bytes);

}  // namespace edri::bench
