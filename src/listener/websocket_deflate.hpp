// permessage-deflate (RFC 7692) on the frames the listener writes itself.
//
// Beast negotiates the extension in the handshake and inflates what the
// client sends; the data frames to the client are written by the listener
// (websocket_frame.hpp), so it compresses them too. It always agrees to
// server_no_context_takeover: each message is compressed alone, so one
// compressed frame serves every connection that agreed on the same window
// (a push, a stream's revision), and no connection keeps a compressor of
// its own.
#pragma once

#include <array>
#include <memory>
#include <string>
#include <string_view>

#include "listener/websocket_frame.hpp"

namespace edri::listener {

// What the 101 response Beast wrote agreed to: the server's window bits
// (9..15; 8 is compressed with 9, which zlib cannot go below), or 0 when
// permessage-deflate was not agreed.
int agreed_deflate_bits(std::string_view response_head);

// Messages shorter than this go out plain on every connection (RSV1 is per
// message): a stream's 100-byte patch frame shrinks by a few dozen bytes
// and costs a compression here and an inflation in every client; at
// 100 x 10 in `bench fanout` compressing them put delivery p50 at 2.0 ms
// against 0.5 ms. Node's ws holds back the same way (threshold 1,024).
inline constexpr std::size_t kDeflateMinBytes = 512;

// A whole text frame of `payload`, compressed (RSV1 set) with a window of
// 2^window_bits.
std::string deflated_text_frame(std::string_view payload, int window_bits);

// A text message several connections are sent (a push, a stream's frame):
// framed once plain and, for the connections that agreed on
// permessage-deflate, compressed once per window size, as each is first
// asked for.
class OutgoingMessage {
 public:
  explicit OutgoingMessage(std::string payload) : payload_(std::move(payload)) {}
  // The frame for a connection that agreed on `deflate_bits` (0: none).
  const SharedFrame& frame(int deflate_bits) const;
  std::string_view payload() const { return payload_; }

 private:
  std::string payload_;
  mutable std::array<SharedFrame, 16> frames_;  // [0]: plain; [9..15]: deflated
};
using SharedMessage = std::shared_ptr<const OutgoingMessage>;

inline SharedMessage make_message(std::string payload) {
  return std::make_shared<const OutgoingMessage>(std::move(payload));
}

}  // namespace edri::listener
