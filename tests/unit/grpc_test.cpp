// gRPC's pieces that do no I/O (src/grpc/): message framing, grpc-timeout,
// and the status mapping of ../shared/specs/grpc.md; and the listener's
// table of one connection's calls.
#include <catch2/catch.hpp>
#include <string>

#include "grpc/framing.hpp"
#include "grpc/status.hpp"
#include "grpc/timeout.hpp"
#include "listener/grpc_calls.hpp"

using namespace edri::grpc;
using namespace std::chrono;

TEST_CASE("gRPC framing: messages out of bytes however they are split", "[grpc]") {
  std::string wire;
  frame(wire, "first");
  frame(wire, "");
  frame(wire, std::string(70000, 'z'));
  CHECK(wire.substr(0, 5) == std::string("\0\0\0\0\5", 5));
  MessageReader r(1 << 20);
  std::vector<std::string> got;
  std::size_t consumed = 0;
  std::string_view m;
  for (std::size_t i = 0; i < wire.size(); i += 7) {  // a few bytes at a time
    r.append(std::string_view(wire).substr(i, 7));
    for (auto next = r.next(m); next == MessageReader::Next::Message; next = r.next(m)) got.emplace_back(m);
    consumed += r.take_consumed();
  }
  REQUIRE(got.size() == 3);
  CHECK(got[0] == "first");
  CHECK(got[1].empty());
  CHECK(got[2] == std::string(70000, 'z'));
  CHECK(consumed == wire.size());
  CHECK(r.held() == 0);
}

TEST_CASE("gRPC framing: compressed and oversized messages are told apart", "[grpc]") {
  MessageReader r(10);
  std::string_view m;
  r.append(std::string("\1\0\0\0\1x", 6));
  CHECK(r.next(m) == MessageReader::Next::Compressed);
  CHECK(m == "x");
  std::string wire;
  frame_prefix(wire, 2, true);
  wire += "yz";
  r.append(wire);
  CHECK(r.next(m) == MessageReader::Next::Compressed);
  CHECK(m == "yz");
  MessageReader big(10);
  big.append(std::string("\0\0\0\0\13", 5));  // 11 bytes announced: refused before they come
  CHECK(big.next(m) == MessageReader::Next::TooLarge);
  MessageReader part(10);
  part.append(std::string("\0\0\0", 3));
  CHECK(part.next(m) == MessageReader::Next::NeedMore);
  CHECK(part.take_consumed() == 0);
}

TEST_CASE("gRPC calls: a call on a reused node starts clean, with its own message limit", "[grpc]") {
  using edri::listener::GrpcCall;
  edri::listener::GrpcCalls calls;
  std::string_view m;
  // More rounds than the table keeps spare calls; each leaves state behind.
  for (int round = 0; round < 6; ++round) {
    const std::int32_t id = 1 + 2 * round;
    const std::size_t limit = round % 2 == 0 ? 100 : 4;
    GrpcCall& call = calls.open(id, GrpcCall::Method::Call, limit);
    CHECK(call.method == GrpcCall::Method::Call);
    CHECK(call.typed == nullptr);
    CHECK(call.head.headers.empty());
    CHECK(call.head.target.empty());
    CHECK(call.pending.empty());
    CHECK(call.subscriptions.empty());
    CHECK(call.messages == 0);
    CHECK_FALSE(call.client_done);
    CHECK_FALSE(call.finished);
    CHECK(call.body == nullptr);
    CHECK(call.reader.held() == 0);
    // A 10-byte message: taken under a limit of 100, refused under 4.
    call.reader.append(std::string("\0\0\0\0\12", 5) + std::string(10, 'm'));
    CHECK(call.reader.next(m) == (limit == 100 ? MessageReader::Next::Message : MessageReader::Next::TooLarge));
    call.reader.append("left");
    call.head.target = "/edri.v1.Edri/Call";
    call.head.headers.emplace_back("x-left", "behind");
    call.subscriptions.push_back(7);
    call.messages = 3;
    call.client_done = call.finished = true;
    const std::uint32_t seq = calls.open_event(id, call, 9, "t");
    std::int32_t stream = 0;
    CHECK(calls.find_event(seq, stream).second != nullptr);
    CHECK(stream == id);
    calls.close(id);
    CHECK(calls.find(id) == nullptr);
    CHECK(calls.find_event(seq, stream).first == nullptr);
    CHECK_FALSE(calls.waiting());
  }
}

TEST_CASE("grpc-timeout: every unit, and what breaks the grammar", "[grpc]") {
  CHECK(parse_timeout("1H") == hours(1));
  CHECK(parse_timeout("2M") == minutes(2));
  CHECK(parse_timeout("3S") == seconds(3));
  CHECK(parse_timeout("200m") == milliseconds(200));
  CHECK(parse_timeout("5u") == microseconds(5));
  CHECK(parse_timeout("99999999n") == nanoseconds(99999999));
  CHECK(parse_timeout("99999999H") == hours(87600));  // no overflow: ten years
  CHECK_FALSE(parse_timeout(""));
  CHECK_FALSE(parse_timeout("S"));
  CHECK_FALSE(parse_timeout("1"));
  CHECK_FALSE(parse_timeout("123456789S"));  // nine digits
  CHECK_FALSE(parse_timeout("-1S"));
  CHECK_FALSE(parse_timeout("1s"));
  CHECK_FALSE(parse_timeout("1 S"));
}

TEST_CASE("gRPC statuses: refusals map as the spec says, and grpc-message is percent-encoded", "[grpc]") {
  CHECK(code_for_refusal(404) == Code::Unimplemented);
  CHECK(code_for_refusal(422) == Code::InvalidArgument);
  CHECK(code_for_refusal(503) == Code::Unavailable);
  CHECK(code_for_refusal(504) == Code::DeadlineExceeded);
  CHECK(code_for_refusal(413) == Code::ResourceExhausted);
  CHECK(code_for_refusal(418) == Code::Unknown);
  CHECK(percent_encode("plain text: ok") == "plain text: ok");
  CHECK(percent_encode("100%\n\xc3\xa9") == "100%25%0A%C3%A9");
}
