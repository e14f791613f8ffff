#include "websocket_frame.hpp"

namespace edri::bench {

std::string websocket_upgrade(const std::string& path, const std::string& host) {
  return "GET " + path + " HTTP/1.1\r\nHost: " + host +
         "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
         "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n";
}

std::string masked_text_frame(std::string_view text) {
  std::string f;
  f += static_cast<char>(0x81);  // FIN, text
  const std::size_t n = text.size();
  if (n < 126) {
    f += static_cast<char>(0x80 | n);
  } else if (n < 65536) {
    f += static_cast<char>(0x80 | 126);
    f += static_cast<char>(n >> 8);
    f += static_cast<char>(n & 0xff);
  } else {
    f += static_cast<char>(0x80 | 127);
    for (int i = 7; i >= 0; --i) f += static_cast<char>((n >> (8 * i)) & 0xff);
  }
  static constexpr char kKey[4] = {0x37, 0x1d, 0x5a, 0x0c};
  f.append(kKey, 4);
  for (std::size_t i = 0; i < n; ++i) f += static_cast<char>(text[i] ^ kKey[i % 4]);
  return f;
}

ParsedFrame parse_server_frame(std::string_view b) {
  ParsedFrame f;
  if (b.size() < 2) return f;
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(b[i]); };
  if (!(byte(0) & 0x80) || (byte(1) & 0x80)) {  // fragmented, or masked by a server
    f.state = ParsedFrame::State::kMalformed;
    return f;
  }
  f.opcode = byte(0) & 0x0f;
  std::size_t n = byte(1) & 0x7f;
  std::size_t off = 2;
  if (n == 126) {
    if (b.size() < 4) return f;
    n = (byte(2) << 8) | byte(3);
    off = 4;
  } else if (n == 127) {
    if (b.size() < 10) return f;
    n = 0;
    for (std::size_t i = 2; i < 10; ++i) n = (n << 8) | byte(i);
    off = 10;
  }
  if (b.size() < off + n) return f;
  f.state = ParsedFrame::State::kComplete;
  f.payload_offset = off;
  f.total_size = off + n;
  return f;
}

}  // namespace edri::bench
