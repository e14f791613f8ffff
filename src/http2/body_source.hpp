// BodySource: where an HTTP/2 response's body comes from. The session asks
// it for bytes only as flow control lets them go, so a body is held here,
// never copied into the session ahead of its window; a source with nothing
// yet (a streamed answer between pieces) says so, and the owner resumes the
// stream when it has more (ServerSession::resume).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>

namespace edri::http2 {

class BodySource {
 public:
  struct Read {
    std::size_t bytes = 0;  // copied into the buffer
    bool end = false;       // the body is whole
  };
  virtual ~BodySource() = default;
  // Copies up to `max` bytes into `buf`. {0, false}: nothing now, ask again
  // after a resume.
  virtual Read read(std::uint8_t* buf, std::size_t max) = 0;
};

// A body that is all here: bytes the source owns.
class BytesBody final : public BodySource {
 public:
  explicit BytesBody(std::string bytes) : bytes_(std::move(bytes)) {}
  Read read(std::uint8_t* buf, std::size_t max) override {
    const std::size_t n = std::min(max, bytes_.size() - off_);
    std::memcpy(buf, bytes_.data() + off_, n);
    off_ += n;
    return {n, off_ == bytes_.size()};
  }

 private:
  std::string bytes_;
  std::size_t off_ = 0;
};

}  // namespace edri::http2
