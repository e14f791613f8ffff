// Http1Answers alone, writing into an OutputQueue read back through a socket
// pair: pipelined answers leave in the order their requests came whatever
// order they are given in; a streamed answer holds its turn until its last
// piece, chunked (HTTP/1.1) or ended by the close (HTTP/1.0); an answer that
// closes the connection drops those after it; HEAD drops a body unsent;
// stale answers are ignored; an event stream needs every answer before it
// out.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "listener/client_socket.hpp"
#include "listener/http1_answers.hpp"
#include "unit/socket_pair.hpp"

using edri::listener::AnswerSink;
using edri::listener::ClientSocket;
using edri::listener::Http1Answers;
using edri::listener::OutputQueue;
using edri::listener::SlotInfo;
using edri::listener::StreamRef;
using Framing = edri::http::ResponseHead::Framing;

namespace {

struct Recorder final : Http1Answers::Events {
  int ready = 0;
  int last = 0;
  std::vector<std::uint64_t> cancelled;
  void output_ready() override { ++ready; }
  void last_answer_queued() override { ++last; }
  void stream_cancel(const StreamRef& ref) override { cancelled.push_back(ref.id); }
};

struct Fixture {
  edri::testing::SocketPair pair;
  ClientSocket socket{std::move(pair.server), nullptr};
  OutputQueue out;
  Recorder events;
  Http1Answers answers{out, events};

  std::uint32_t open(bool keep_alive = true, bool http10 = false, bool head = false) {
    SlotInfo info;
    info.keep_alive = keep_alive;
    info.http10 = http10;
    info.head = head;
    return answers.open(std::move(info));
  }
  void respond(std::uint32_t seq, int status, std::string_view body, bool keep_alive = true) {
    edri::http::ResponseHead h{status, "text/plain", body.size(), keep_alive};
    answers.respond(seq, h, "X-Seq: " + std::to_string(seq) + "\r\n", body);
  }
  // What the client has been sent so far.
  std::string sent() {
    bool progress = false;
    (void)out.write(socket, progress, [](const StreamRef&, std::uint32_t) {});
    return pair.read_all();
  }
};

// The bodies of the answers in `wire`, in the order they appear.
std::vector<std::string> bodies(const std::string& wire) {
  std::vector<std::string> found;
  for (std::size_t at = wire.find("\r\n\r\n"); at != std::string::npos; at = wire.find("\r\n\r\n", at + 4)) {
    const auto next = wire.find("HTTP/1.", at);
    found.push_back(wire.substr(at + 4, next == std::string::npos ? std::string::npos : next - at - 4));
  }
  return found;
}

}  // namespace

TEST_CASE("http1 answers leave in request order whatever order they come in", "[listener][http1]") {
  Fixture f;
  const auto a = f.open(), b = f.open(), c = f.open();
  f.respond(c, 200, "third");
  f.respond(b, 404, "second");
  CHECK(f.sent().empty());
  CHECK(f.answers.pending() == 3);
  f.respond(a, 200, "first");
  const std::string wire = f.sent();
  CHECK(bodies(wire) == std::vector<std::string>{"first", "second", "third"});
  CHECK(wire.find("HTTP/1.1 404 Not Found\r\n") != std::string::npos);
  CHECK(wire.find("X-Seq: 1\r\n") != std::string::npos);
  CHECK(f.answers.empty());
  f.respond(a, 200, "again");  // stale: its slot was answered
  CHECK(f.sent().empty());
}

TEST_CASE("http1 streamed answer holds its turn until its last piece, chunked", "[listener][http1]") {
  Fixture f;
  const auto s = f.open(), after = f.open();
  edri::http::ResponseHead h{200, "text/plain", 0, true};
  h.framing = Framing::Chunked;
  REQUIRE(f.answers.open_stream(s, h, {}, StreamRef{1, 42, false}));
  f.respond(after, 200, "after");
  CHECK(f.answers.stream_piece(s, "hello", {}, false, false));
  std::string wire = f.sent();
  CHECK(wire.find("Transfer-Encoding: chunked\r\n") != std::string::npos);
  CHECK(wire.ends_with("\r\n\r\n5\r\nhello\r\n"));
  CHECK(f.answers.stream_piece(s, "!", {}, true, false));
  wire = f.sent();
  CHECK(wire.starts_with("1\r\n!\r\n0\r\n\r\nHTTP/1.1 200 OK\r\n"));
  CHECK(wire.ends_with("after"));
  CHECK_FALSE(f.answers.stream_piece(s, "late", {}, true, false));  // the stream ended
}

TEST_CASE("http1 streamed answer to HTTP/1.0 ends with the connection", "[listener][http1]") {
  Fixture f;
  const auto s = f.open(true, true);
  edri::http::ResponseHead h{200, "text/plain", 0, true, true};
  h.framing = Framing::Chunked;
  REQUIRE(f.answers.open_stream(s, h, {}, StreamRef{1, 7, false}));
  CHECK(f.answers.stream_piece(s, "raw", {}, true, false));
  const std::string wire = f.sent();
  CHECK(wire.find("chunked") == std::string::npos);
  CHECK(wire.ends_with("\r\n\r\nraw"));
  CHECK(f.events.last == 1);  // the close ends the body
}

TEST_CASE("http1 answer that closes the connection drops those after it", "[listener][http1]") {
  Fixture f;
  const auto a = f.open(false);
  CHECK(f.events.last == 1);  // nothing after it is read
  const auto b = f.open();
  edri::http::ResponseHead h{200, "text/plain", 0, true};
  h.framing = Framing::Chunked;
  REQUIRE(f.answers.open_stream(b, h, {}, StreamRef{1, 9, false}));
  f.respond(a, 400, "bad", false);
  CHECK(f.events.cancelled == std::vector<std::uint64_t>{9});  // the stream behind it stops
  CHECK(f.answers.empty());
  const std::string wire = f.sent();
  CHECK(wire.find("Connection: close\r\n") != std::string::npos);
  CHECK(bodies(wire) == std::vector<std::string>{"bad"});
}

TEST_CASE("http1 HEAD answer and a bodyless stream send the head alone", "[listener][http1]") {
  Fixture f;
  const auto s = f.open(true, false, true);
  edri::http::ResponseHead h{200, "text/plain", 0, true, false, true};
  h.framing = Framing::Chunked;
  CHECK_FALSE(f.answers.open_stream(s, h, {}, StreamRef{}));  // the producer must stop
  const auto n = f.open();
  edri::http::ResponseHead nc{204, "", 0, true};
  nc.framing = Framing::Chunked;
  CHECK_FALSE(f.answers.open_stream(n, nc, {}, StreamRef{}));
  const std::string wire = f.sent();
  CHECK(wire.find("HTTP/1.1 200 OK\r\n") == 0);
  CHECK(wire.find("HTTP/1.1 204 No Content\r\n") != std::string::npos);
  CHECK(wire.ends_with("\r\n\r\n"));
  CHECK(f.answers.empty());
}

TEST_CASE("http1 event stream needs every answer before it out", "[listener][http1]") {
  Fixture f;
  const auto first = f.open(), events = f.open();
  CHECK(f.answers.open_events(events, "Cache-Control: no-store\r\n") == AnswerSink::EventsCarrier::Refused);
  f.respond(first, 200, "one");
  f.respond(events, 400, "refused");
  (void)f.sent();
  const auto next = f.open();
  CHECK(f.answers.open_events(next, "Cache-Control: no-store\r\n") == AnswerSink::EventsCarrier::Connection);
  const std::string wire = f.sent();
  CHECK(wire.starts_with("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-store\r\n"));
  CHECK(f.answers.empty());
}
