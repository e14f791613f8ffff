// gRPC's message framing over an HTTP/2 stream (PROTOCOL-HTTP2.md,
// "Length-Prefixed-Message"): each message is a 1-byte compressed flag, a
// 4-byte big-endian length, then that many bytes. This layer does no I/O:
// a MessageReader takes the DATA of one stream as it comes and gives whole
// messages; frame() writes one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace edri::grpc {

inline constexpr std::size_t kPrefixBytes = 5;

// Appends `payload` as one uncompressed message.
void frame(std::string& out, std::string_view payload);
// Appends the prefix of a message of `length` bytes, which the caller
// writes after it; `compressed`: its bytes are in the call's grpc-encoding.
void frame_prefix(std::string& out, std::size_t length, bool compressed = false);

class MessageReader {
 public:
  enum class Next : std::uint8_t {
    Message,     // next() filled `message`
    NeedMore,    // no whole message yet
    Compressed,  // next() filled `message`, whose flag says it is in the call's grpc-encoding
    TooLarge,    // the length passes max_message
  };
  explicit MessageReader(std::size_t max_message) : max_(max_message) {}

  void append(std::string_view bytes) { buf_.append(bytes); }
  // The next whole message, as a view valid until the next append() or
  // next(); its bytes (prefix included) count as taken. A compressed
  // message's limit is the caller's to apply once it is inflated.
  Next next(std::string_view& message);
  // Bytes appended and not yet given out as a message.
  std::size_t held() const { return buf_.size() - off_; }
  // The next message is begun and not whole: the client owes its rest.
  bool partial() const;
  // Bytes given out since the last call: what the stream may be granted
  // back (flow control).
  std::size_t take_consumed();
  // Empty again, for the next stream (its buffer kept while small).
  void clear();
  // The largest message taken from here on.
  void set_limit(std::size_t max_message) { max_ = max_message; }

 private:
  std::size_t max_;
  std::string buf_;
  std::size_t off_ = 0;
  std::size_t consumed_ = 0;
};

}  // namespace edri::grpc
