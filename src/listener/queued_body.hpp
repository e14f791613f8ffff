// QueuedBody: an HTTP/2 answer's body made of what the listener queues as
// it comes (a gRPC call's messages, a Server-Sent Events stream's frames),
// taken by the session as the client's window allows, then optionally
// trailers (gRPC's status). It holds what the client has not taken, so
// its size says how far behind the client is; a body asked to wake its
// owner puts its stream on a list once it is drained.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "http2/body_source.hpp"

namespace edri::listener {

class QueuedBody final : public http2::BodySource {
 public:
  // `woken`: where this body puts `stream` once drained, if
  // wake_when_drained was set.
  QueuedBody(std::int32_t stream, std::vector<std::int32_t>& woken) : stream_(stream), woken_(woken) {}
  bool wake_when_drained = false;

  void add(std::string_view bytes) { bytes_.append(bytes); }
  // The same, taking the buffer itself when nothing is held.
  void add(std::string&& bytes) {
    if (bytes_.empty())
      bytes_ = std::move(bytes);
    else
      bytes_.append(bytes);
  }
  // The body ends after what was added; `trailer_lines` (none: the last
  // DATA frame ends the stream) follow it.
  void end(std::string trailer_lines = {}) {
    trailers_ = std::move(trailer_lines);
    ended_ = true;
  }
  // Bytes added and not yet taken by the session (the client's window).
  std::size_t held() const { return bytes_.size() - off_; }

  Read read(std::uint8_t* buf, std::size_t max) override {
    const std::size_t n = std::min(max, held());
    std::memcpy(buf, bytes_.data() + off_, n);
    off_ += n;
    if (off_ == bytes_.size()) {
      bytes_.clear();
      off_ = 0;
      if (wake_when_drained) woken_.push_back(stream_);
      wake_when_drained = false;
    }
    const bool end = ended_ && bytes_.empty();
    return {n, end, false, end && !trailers_.empty()};
  }
  std::string_view trailer_lines() const override { return trailers_; }

 private:
  std::int32_t stream_;
  std::vector<std::int32_t>& woken_;
  std::string bytes_;
  std::size_t off_ = 0;
  std::string trailers_;
  bool ended_ = false;
};

}  // namespace edri::listener
