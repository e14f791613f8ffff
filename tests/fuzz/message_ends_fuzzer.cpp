// The client's bytes as handed to Beast, read for where its messages end
// (listener/message_ends.hpp): the same bytes handed over whole and in
// pieces of any size must say the same at every message Beast completes,
// and a message can only be completed once it ended.
//
// Input: byte 0 picks the size of the pieces (1..256); the rest is the
// bytes, client frames or not.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "listener/message_ends.hpp"

using edri::listener::MessageEnds;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const std::size_t piece = std::size_t{data[0]} + 1;
  const std::string_view bytes(reinterpret_cast<const char*>(data + 1), size - 1);
  MessageEnds whole, pieces;
  whole.feed(bytes);
  for (std::size_t at = 0; at < bytes.size(); at += piece) pieces.feed(bytes.substr(at, piece));
  // Each frame takes at least 2 bytes: no more messages end than that.
  for (std::size_t taken = 0; taken <= bytes.size() / 2 + 1; ++taken) {
    if (whole.holds() != pieces.holds()) std::abort();
    if (!whole.holds()) return 0;
    whole.message_taken();
    pieces.message_taken();
  }
  // Still holding after every message that could have ended: a byte came
  // after the last end (a frame begun), which stays held.
  if (!whole.holds()) std::abort();
  return 0;
}
