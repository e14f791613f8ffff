// Http1Reader alone: the reading side of an HTTP/1.1 connection, with no
// socket: pipelining, a pause and what it holds, the last request read,
// refusals, upgrades taken or declined, and the header and body clocks.
#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <vector>

#include "http/http1_reader.hpp"

using edri::http::Http1Reader;
using edri::http::HttpRequest;
using Kind = Http1Reader::Outcome::Kind;
using namespace std::chrono_literals;

namespace {

const Http1Reader::Limits kLimits{10s, 20s};

struct Reading {
  std::vector<std::string> targets;
  bool pause_next = false;
  bool stop_next = false;
  int continues = 0;
  Http1Reader reader{{},
                     [this](HttpRequest& r) {
                       targets.push_back(r.target);
                       reader.mark_served();
                       if (pause_next) reader.pause();
                       if (stop_next) reader.stop();
                     },
                     [this] { ++continues; },
                     {}};
  Http1Reader::Clock::time_point t0 = Http1Reader::Clock::now();
  Http1Reader::Outcome feed(const std::string& bytes, Http1Reader::Clock::duration at = {}) {
    return reader.feed(bytes, t0 + at);
  }
  // Why the reader would answer 408 at t0 + `now`, the client's last byte
  // at t0 + `last` ("" when it would not).
  std::string overdue(Http1Reader::Clock::duration now, Http1Reader::Clock::duration last, bool stopped = false,
                      bool waiting = false) const {
    const char* why = reader.overdue(t0 + now, t0 + last, kLimits, stopped, waiting);
    return why ? why : "";
  }
};

const std::string kGetA = "GET /a HTTP/1.1\r\nHost: h\r\n\r\n";
const std::string kGetB = "GET /b HTTP/1.1\r\nHost: h\r\n\r\n";
}  // namespace

TEST_CASE("http1 reader: pipelined requests in one read are all delivered", "[http1_reader]") {
  Reading r;
  CHECK_FALSE(r.reader.served());
  CHECK(r.feed(kGetA + kGetB).kind == Kind::More);
  CHECK(r.targets == std::vector<std::string>{"/a", "/b"});
  CHECK(r.reader.served());
  CHECK_FALSE(r.reader.input_left());
}

TEST_CASE("http1 reader: a pause holds the rest until resume", "[http1_reader]") {
  Reading r;
  r.pause_next = true;
  CHECK(r.feed(kGetA + kGetB).kind == Kind::Held);
  CHECK(r.targets == std::vector<std::string>{"/a"});
  r.pause_next = false;
  CHECK(r.reader.resume(r.t0).kind == Kind::More);
  CHECK(r.targets == std::vector<std::string>{"/a", "/b"});
  // Nothing held any more: resuming again reads nothing.
  CHECK(r.reader.resume(r.t0).kind == Kind::More);
  CHECK(r.targets.size() == 2);
}

TEST_CASE("http1 reader: nothing after the last request is read, and it is remembered", "[http1_reader]") {
  Reading r;
  r.stop_next = true;
  CHECK(r.feed(kGetA + kGetB).kind == Kind::Ended);
  CHECK(r.targets == std::vector<std::string>{"/a"});
  CHECK(r.reader.stopped());
  CHECK(r.reader.input_left());  // the client's close should linger

  Reading quiet;
  quiet.stop_next = true;
  CHECK(quiet.feed(kGetA).kind == Kind::Ended);
  CHECK_FALSE(quiet.reader.input_left());
  CHECK(quiet.feed("G").kind == Kind::Ended);  // bytes that came later
  CHECK(quiet.reader.input_left());
}

TEST_CASE("http1 reader: a stop while input is held drops it", "[http1_reader]") {
  Reading r;
  r.pause_next = true;
  CHECK(r.feed(kGetA + kGetB).kind == Kind::Held);
  r.reader.stop();
  CHECK(r.reader.input_left());
  CHECK(r.reader.resume(r.t0).kind == Kind::More);  // nothing held to feed
  CHECK(r.targets.size() == 1);
}

TEST_CASE("http1 reader: bad input is refused with its status, after the requests before it", "[http1_reader]") {
  Reading r;
  const auto out = r.feed(kGetA + "GET / HTTP/1.1\r\nBad Header\r\n\r\n");
  CHECK(out.kind == Kind::Refused);
  CHECK(out.status == 400);
  CHECK(std::string(out.reason).size() > 0);
  CHECK(r.targets == std::vector<std::string>{"/a"});
  CHECK(r.reader.stopped());
  CHECK(r.reader.input_left());
  CHECK(r.feed(kGetB).kind == Kind::Ended);
}

TEST_CASE("http1 reader: an upgrade hands over what follows, or reads it as the next request", "[http1_reader]") {
  const std::string upgrade = "GET /ws HTTP/1.1\r\nHost: h\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n";
  // `rest` points into the bytes fed: they must outlive it.
  const std::string with_frame = upgrade +
                                 "\x81\x05"
                                 "frame";
  Reading taken;
  auto out = taken.feed(with_frame);
  REQUIRE(out.kind == Kind::Upgrade);
  CHECK(out.rest ==
        "\x81\x05"
        "frame");

  const std::string with_request = upgrade + kGetB;
  Reading declined;
  out = declined.feed(with_request);
  REQUIRE(out.kind == Kind::Upgrade);
  declined.reader.decline_upgrade();
  CHECK(declined.reader.feed(out.rest, declined.t0).kind == Kind::More);
  CHECK(declined.targets == std::vector<std::string>{"/ws", "/b"});

  // Held input that turns out to be an upgrade: its rest outlives the feed.
  Reading held;
  held.pause_next = true;
  CHECK(held.feed(kGetA + upgrade + "tail").kind == Kind::Held);
  held.pause_next = false;
  out = held.reader.resume(held.t0);
  REQUIRE(out.kind == Kind::Upgrade);
  CHECK(out.rest == "tail");
}

TEST_CASE("http1 reader: 100-continue is asked for by the head", "[http1_reader]") {
  Reading r;
  CHECK(r.feed("POST /p HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n").kind == Kind::More);
  CHECK(r.continues == 1);
  CHECK(r.reader.mid_message());
  CHECK(r.feed("ok").kind == Kind::More);
  CHECK(r.targets == std::vector<std::string>{"/p"});
}

TEST_CASE("http1 reader: the header clock runs from the head's first byte", "[http1_reader]") {
  Reading r;
  CHECK(r.feed("GET /slow HTTP/1.1\r\n", 5s).kind == Kind::More);
  CHECK(r.overdue(15s, 15s).empty());
  const std::string why = r.overdue(16s, 15s);
  REQUIRE(!why.empty());
  CHECK(why.find("EDRI_HEADER_TIMEOUT") != std::string::npos);
  // Not once this side stopped reading.
  CHECK(r.overdue(16s, 15s, true).empty());
}

TEST_CASE("http1 reader: the body clock runs from the last byte, not while we wait", "[http1_reader]") {
  Reading r;
  CHECK(r.feed("POST /p HTTP/1.1\r\nHost: h\r\nContent-Length: 9\r\n\r\nabc").kind == Kind::More);
  CHECK(r.overdue(40s, 30s).empty());
  const std::string why = r.overdue(51s, 30s);
  REQUIRE(!why.empty());
  CHECK(why.find("EDRI_BODY_TIMEOUT") != std::string::npos);
  CHECK(r.overdue(51s, 30s, false, true).empty());
  CHECK(r.feed("defghi").kind == Kind::More);
  CHECK(r.overdue(500s, 30s).empty());  // whole: nothing in progress
}
