// Raw WebSocket frames (RFC 6455 section 5), for tests that must send what
// a well-behaved client library never would: unmasked frames, invalid
// UTF-8, reserved opcodes.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <string_view>

namespace edri::test {

// The opening handshake request for `path` (a fixed, valid key).
inline std::string ws_upgrade_request(const std::string& path, const std::string& extra_headers = {}) {
  return "GET " + path +
         " HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
         "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n" +
         extra_headers + "\r\n";
}

// A frame as a client sends it (masked unless `mask` is false).
inline std::string ws_client_frame(std::uint8_t opcode, std::string_view payload, bool fin = true, bool mask = true) {
  std::string f;
  f += static_cast<char>((fin ? 0x80 : 0) | opcode);
  const std::uint8_t m = mask ? 0x80 : 0;
  const std::size_t n = payload.size();
  if (n < 126) {
    f += static_cast<char>(m | n);
  } else if (n < 65536) {
    f += static_cast<char>(m | 126);
    f += static_cast<char>(n >> 8);
    f += static_cast<char>(n & 0xff);
  } else {
    f += static_cast<char>(m | 127);
    for (int i = 7; i >= 0; --i) f += static_cast<char>((n >> (8 * i)) & 0xff);
  }
  if (!mask) return f + std::string(payload);
  static std::mt19937 rng(12345);
  char key[4];
  for (auto& k : key) k = static_cast<char>(rng() & 0xff);
  f.append(key, 4);
  for (std::size_t i = 0; i < n; ++i) f += static_cast<char>(payload[i] ^ key[i % 4]);
  return f;
}

struct WsFrame {
  int opcode = -1;
  bool fin = false;
  bool rsv1 = false;  // permessage-deflate: the payload is compressed
  std::string payload;
  // A close frame's status code, or -1.
  int close_code() const {
    if (opcode != 8 || payload.size() < 2) return -1;
    return (static_cast<unsigned char>(payload[0]) << 8) | static_cast<unsigned char>(payload[1]);
  }
};

// Reads one server frame through `read_bytes(n)` (which returns exactly n bytes).
template <class ReadBytes>
WsFrame ws_read_frame(ReadBytes&& read_bytes) {
  WsFrame f;
  const std::string h = read_bytes(2);
  f.fin = (static_cast<unsigned char>(h[0]) & 0x80) != 0;
  f.opcode = static_cast<unsigned char>(h[0]) & 0x0f;
  f.rsv1 = (static_cast<unsigned char>(h[0]) & 0x40) != 0;
  std::size_t n = static_cast<unsigned char>(h[1]) & 0x7f;
  if (n == 126) {
    const std::string e = read_bytes(2);
    n = (static_cast<unsigned char>(e[0]) << 8) | static_cast<unsigned char>(e[1]);
  } else if (n == 127) {
    const std::string e = read_bytes(8);
    n = 0;
    for (char c : e) n = (n << 8) | static_cast<unsigned char>(c);
  }
  f.payload = n ? read_bytes(n) : std::string();
  return f;
}

}  // namespace edri::test
