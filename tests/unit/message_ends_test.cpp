// MessageEnds: whether Beast holds bytes past the messages it completed,
// from the frame headers of what it was handed, in any split.
#include <catch2/catch.hpp>

#include <string>

#include "listener/message_ends.hpp"
#include "support/ws_frames.hpp"

using edri::listener::MessageEnds;

namespace {

// A client frame of `length` bytes: FIN and opcode in `first`.
std::string client_frame(unsigned first, std::size_t length) {
  return edri::test::ws_client_frame(static_cast<std::uint8_t>(first & 0x0f), std::string(length, 'x'),
                                     (first & 0x80) != 0);
}
constexpr unsigned kText = 0x81, kTextFirst = 0x01, kLast = 0x80, kPing = 0x89;

}  // namespace

TEST_CASE("nothing handed over: nothing held", "[message_ends]") {
  MessageEnds ends;
  CHECK_FALSE(ends.holds());
}

TEST_CASE("one message handed over whole, then taken: nothing held", "[message_ends]") {
  MessageEnds ends;
  ends.feed(client_frame(kText, 20));
  CHECK(ends.holds());
  ends.message_taken();
  CHECK_FALSE(ends.holds());
}

TEST_CASE("three messages in one read: held until the third is taken", "[message_ends]") {
  MessageEnds ends;
  ends.feed(client_frame(kText, 5) + client_frame(kText, 300) + client_frame(kText, 70000));
  ends.message_taken();
  CHECK(ends.holds());
  ends.message_taken();
  CHECK(ends.holds());
  ends.message_taken();
  CHECK_FALSE(ends.holds());
}

TEST_CASE("a message and the start of the next: the start is held", "[message_ends]") {
  MessageEnds ends;
  const auto next = client_frame(kText, 10);
  ends.feed(client_frame(kText, 10) + next.substr(0, 1));  // half a header
  ends.message_taken();
  CHECK(ends.holds());
  ends.feed(next.substr(1));
  ends.message_taken();
  CHECK_FALSE(ends.holds());
}

TEST_CASE("headers and payloads split anywhere, byte by byte", "[message_ends]") {
  const auto bytes = client_frame(kTextFirst, 3) + client_frame(kPing, 4) + client_frame(kLast, 200) +
                     client_frame(kText, 126) + client_frame(kText, 0);
  MessageEnds ends;
  int ended = 0;
  for (char c : bytes) ends.feed(std::string(1, c));
  // Two frames then a ping between them make one message; three in all.
  while (ends.holds() && ended < 10) {
    ends.message_taken();
    ++ended;
  }
  CHECK(ended == 3);
}

TEST_CASE("a control frame after a message is held: Beast must read it", "[message_ends]") {
  MessageEnds ends;
  ends.feed(client_frame(kText, 10));
  ends.message_taken();
  ends.feed(client_frame(kPing, 0));
  CHECK(ends.holds());
}
