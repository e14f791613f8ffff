#include "grpc/framing.hpp"

namespace edri::grpc {

void frame_prefix(std::string& out, std::size_t length, bool compressed) {
  const auto n = static_cast<std::uint32_t>(length);
  const char prefix[kPrefixBytes] = {static_cast<char>(compressed ? 1 : 0), static_cast<char>(n >> 24),
                                     static_cast<char>(n >> 16), static_cast<char>(n >> 8), static_cast<char>(n)};
  out.append(prefix, kPrefixBytes);
}

void frame(std::string& out, std::string_view payload) {
  frame_prefix(out, payload.size());
  out.append(payload);
}

MessageReader::Next MessageReader::next(std::string_view& message) {
  // The bytes given out last time are dropped now, not before: the view
  // handed out stayed valid until this call.
  if (off_ > 0 && off_ == buf_.size()) {
    buf_.clear();
    off_ = 0;
  } else if (off_ > 64 * 1024 && off_ * 2 > buf_.size()) {
    buf_.erase(0, off_);
    off_ = 0;
  }
  if (held() < kPrefixBytes) return Next::NeedMore;
  const auto* p = reinterpret_cast<const unsigned char*>(buf_.data() + off_);
  const std::size_t len = (std::size_t{p[1]} << 24) | (std::size_t{p[2]} << 16) | (std::size_t{p[3]} << 8) | p[4];
  if (len > max_) return Next::TooLarge;
  if (held() < kPrefixBytes + len) return Next::NeedMore;
  message = std::string_view(buf_).substr(off_ + kPrefixBytes, len);
  off_ += kPrefixBytes + len;
  consumed_ += kPrefixBytes + len;
  return p[0] == 0 ? Next::Message : Next::Compressed;
}

bool MessageReader::partial() const {
  if (held() < kPrefixBytes) return held() > 0;
  const auto* p = reinterpret_cast<const unsigned char*>(buf_.data() + off_);
  const std::size_t len = (std::size_t{p[1]} << 24) | (std::size_t{p[2]} << 16) | (std::size_t{p[3]} << 8) | p[4];
  return held() < kPrefixBytes + len;
}

std::size_t MessageReader::take_consumed() {
  const std::size_t n = consumed_;
  consumed_ = 0;
  return n;
}

void MessageReader::clear() {
  constexpr std::size_t kKept = 16 * 1024;
  if (buf_.capacity() > kKept) std::string().swap(buf_);
  buf_.clear();
  off_ = 0;
  consumed_ = 0;
}

}  // namespace edri::grpc
