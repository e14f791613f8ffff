#include "listener/websocket_deflate.hpp"

#include <boost/beast/zlib/deflate_stream.hpp>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>

#include "http/field_text.hpp"
#include "listener/websocket_frame.hpp"

namespace edri::listener {

namespace zlib = boost::beast::zlib;

namespace {

// One compressor per window size, shared by the whole listener (one
// thread): reset before each message, its buffers kept.
zlib::deflate_stream& compressor(int window_bits) {
  static std::array<std::unique_ptr<zlib::deflate_stream>, 16> by_bits;
  auto& c = by_bits[static_cast<std::size_t>(window_bits)];
  if (!c) {
    c = std::make_unique<zlib::deflate_stream>();
    // Level 6 and memLevel 8: zlib's defaults, the usual balance.
    c->reset(6, window_bits, 8, zlib::Strategy::normal);
  }
  return *c;
}

}  // namespace

int agreed_deflate_bits(std::string_view response_head) {
  const std::string head = http::lowered(response_head.substr(0, response_head.find("\r\n\r\n")));
  const auto line = head.find("\r\nsec-websocket-extensions:");
  if (line == std::string::npos) return 0;
  const std::string_view value = std::string_view(head).substr(line, head.find("\r\n", line + 2) - line);
  if (value.find("permessage-deflate") == std::string_view::npos) return 0;
  constexpr std::string_view kBits = "server_max_window_bits=";
  const auto at = value.find(kBits);
  if (at == std::string_view::npos) return 15;
  int bits = 15;
  const char* begin = value.data() + at + kBits.size();
  std::from_chars(begin, value.data() + value.size(), bits);
  return std::clamp(bits, 9, 15);
}

std::string deflated_text_frame(std::string_view payload, int window_bits) {
  auto& ds = compressor(window_bits);
  ds.reset();
  std::string body(ds.upper_bound(payload.size()) + 16, '\0');
  zlib::z_params zs;
  zs.next_in = payload.data();
  zs.avail_in = payload.size();
  zs.next_out = body.data();
  zs.avail_out = body.size();
  boost::beast::error_code ec;
  // Sync flush ends the message on a byte boundary with 00 00 ff ff, which
  // RFC 7692 7.2.1 says to leave out.
  ds.write(zs, zlib::Flush::sync, ec);
  std::size_t n = zs.total_out;
  if (n >= 4 && body.compare(n - 4, 4, std::string("\0\0\xff\xff", 4)) == 0) n -= 4;
  std::string frame;
  frame.reserve(n + 10);
  append_text_frame_header(frame, n);
  frame[0] = static_cast<char>(0xc1);  // FIN, RSV1 (compressed), opcode 1
  frame.append(body.data(), n);
  return frame;
}

const SharedFrame& OutgoingMessage::frame(int deflate_bits) const {
  if (payload_.size() < kDeflateMinBytes) deflate_bits = 0;
  auto& f = frames_[static_cast<std::size_t>(deflate_bits)];
  if (!f)
    f = std::make_shared<const std::string>(deflate_bits ? deflated_text_frame(payload_, deflate_bits)
                                                         : text_frame(payload_));
  return f;
}

}  // namespace edri::listener
