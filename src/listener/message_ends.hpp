// MessageEnds: where the client's data messages end in the bytes handed to
// Beast, read from the frame headers alone (RFC 6455 5.2).
//
// Beast reads ahead: it takes up to 1.5 KB into its own buffer and parses
// frames from there. After it completes a message it may hold the start of
// the next, which no new input would announce. An idle session should not
// keep a read waiting (Beast's message buffer is an idle session's largest
// part), so it asks this first: Beast holds nothing after a message exactly
// when no other message ended behind it and no byte came after its end.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string_view>

namespace edri::listener {

class MessageEnds {
 public:
  // The next bytes handed to Beast, in order.
  void feed(std::string_view bytes) {
    for (std::size_t i = 0; i < bytes.size();) {
      if (payload_left_ > 0) {
        const auto take = static_cast<std::size_t>(std::min<std::uint64_t>(payload_left_, bytes.size() - i));
        i += take;
        fed_ += take;
        payload_left_ -= take;
        if (payload_left_ == 0) frame_done();
        continue;
      }
      header_[header_size_++] = static_cast<std::uint8_t>(bytes[i++]);
      ++fed_;
      if (header_size_ >= 2 && header_size_ == header_bytes()) start_payload();
    }
  }

  // Beast completed a message: the oldest one that ended.
  void message_taken() {
    if (ended_ > 0) --ended_;
  }

  // Whether Beast holds bytes past the messages it completed: another
  // message, the start of one, or a control frame.
  bool holds() const { return ended_ > 0 || fed_ > last_end_; }

 private:
  // 2, then the extended length's 2 or 8 bytes, then the mask's 4.
  std::size_t header_bytes() const {
    const unsigned length7 = header_[1] & 0x7f;
    const std::size_t extended = length7 == 126 ? 2 : length7 == 127 ? 8 : 0;
    return 2 + extended + ((header_[1] & 0x80) ? 4 : 0);
  }
  void start_payload() {
    const unsigned length7 = header_[1] & 0x7f;
    std::uint64_t length = length7;
    if (length7 >= 126) {
      length = 0;
      for (std::size_t k = 2; k < (length7 == 126 ? 4u : 10u); ++k) length = length << 8 | header_[k];
    }
    // A data frame (text, binary, continuation) with FIN ends a message;
    // control frames (opcodes from 8) sit between a message's frames.
    final_data_ = (header_[0] & 0x80) && (header_[0] & 0x0f) < 8;
    header_size_ = 0;
    payload_left_ = length;
    if (payload_left_ == 0) frame_done();
  }
  void frame_done() {
    if (!final_data_) return;
    ++ended_;
    last_end_ = fed_;
  }

  std::uint64_t fed_ = 0;           // bytes handed to Beast so far
  std::uint64_t last_end_ = 0;      // where the last message ended in them
  std::uint64_t payload_left_ = 0;  // of the frame being handed over
  std::uint32_t ended_ = 0;         // messages ended that Beast has not completed
  std::uint8_t header_[14] = {};
  std::uint8_t header_size_ = 0;
  bool final_data_ = false;
};

}  // namespace edri::listener
