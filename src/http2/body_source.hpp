// BodySource: where an HTTP/2 response's body comes from. The session asks
// it for bytes only as flow control lets them go, so a body is held here,
// never copied into the session ahead of its window; a source with nothing
// yet (a streamed answer between pieces) says so, and the owner resumes the
// stream when it has more (ServerSession::resume).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

namespace edri::http2 {

class BodySource {
 public:
  struct Read {
    std::size_t bytes = 0;  // copied into the buffer
    bool end = false;       // the body is whole
    bool failed = false;    // it cannot be whole: the stream is reset, the client sees it cut
    bool trailers = false;  // with end: trailer_lines() follow the body (gRPC's status)
  };
  virtual ~BodySource() = default;
  // Copies up to `max` bytes into `buf`. {0, false}: nothing now, ask again
  // after a resume.
  virtual Read read(std::uint8_t* buf, std::size_t max) = 0;
  // The trailing fields, "Name: value\r\n"..., asked once a read said
  // `trailers`.
  virtual std::string_view trailer_lines() const { return {}; }
};

// A body that is all here, in memory `Owner` keeps (a string, a lease on
// shared memory), copied out as the window allows.
template <class Owner>
class HeldBody final : public BodySource {
 public:
  // `bytes_of`: where the owner's bytes are, asked once it is in place.
  HeldBody(Owner owner, std::string_view (*bytes_of)(const Owner&))
      : owner_(std::move(owner)), bytes_(bytes_of(owner_)) {}
  Read read(std::uint8_t* buf, std::size_t max) override {
    const std::size_t n = std::min(max, bytes_.size());
    std::memcpy(buf, bytes_.data(), n);
    bytes_.remove_prefix(n);
    return {n, bytes_.empty()};
  }

 private:
  Owner owner_;
  std::string_view bytes_;
};

// Bytes the source owns.
inline std::unique_ptr<BodySource> bytes_body(std::string bytes) {
  return std::make_unique<HeldBody<std::string>>(std::move(bytes),
                                                 [](const std::string& s) { return std::string_view(s); });
}

}  // namespace edri::http2
