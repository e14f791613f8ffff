// The HTTP/2 server session (http2/server_session.hpp) against nghttp2's
// own client, in memory: requests come out as the HttpRequest HTTP/1.1
// gives, answers go back with their fields and bodies, and the attack
// shapes a careful server refuses are refused.
#include <catch2/catch.hpp>
#include <chrono>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "http2/preface.hpp"
#include "http2/server_session.hpp"
#include "support/h2_client.hpp"

using namespace edri;
using edri::test::H2Client;

namespace {

// `prefix` then `n` (GCC 12 warns, wrongly, of "literal" + std::to_string).
std::string numbered(std::string prefix, long n) { return prefix.append(std::to_string(n)); }

// The listener's part, reduced: keeps what the session hands it.
struct Recorder final : http2::ServerSession::Handler {
  struct Seen {
    std::int32_t stream;
    http::HttpRequest req;
  };
  std::vector<Seen> requests;
  std::vector<std::pair<std::int32_t, int>> refusals;
  std::vector<std::pair<std::int32_t, bool>> closed;
  // Bodies taken as they come (paths that start /in), and whether each
  // ended.
  std::map<std::int32_t, std::pair<std::string, bool>> streamed;
  void on_request(std::int32_t stream, http::HttpRequest& req) override { requests.push_back({stream, req}); }
  bool on_head(std::int32_t stream, http::HttpRequest& head) override {
    if (head.target.rfind("/in", 0) != 0) return false;
    streamed[stream];
    return true;
  }
  void on_body(std::int32_t stream, std::string_view bytes, bool end) override {
    streamed[stream].first.append(bytes);
    if (end) streamed[stream].second = true;
  }
  void on_refused(std::int32_t stream, int status, std::string_view) override { refusals.emplace_back(stream, status); }
  void on_closed(std::int32_t stream, bool answered) override { closed.emplace_back(stream, answered); }
};

http2::Limits small_limits() {
  http2::Limits l;
  l.request.max_body_bytes = 64 * 1024;
  l.request.max_header_bytes = 4096;
  l.request.max_header_count = 20;
  l.request.max_url_bytes = 1024;
  l.max_concurrent_streams = 8;
  return l;
}

// Client and server, the bytes of each carried to the other until both
// are quiet. False when the server refused the connection.
struct Pair {
  Recorder rec;
  http2::ServerSession server;
  H2Client client;
  explicit Pair(const http2::Limits& l = small_limits(), std::uint32_t client_streams = 100)
      : server(rec, l), client(client_streams) {}
  // `now`: when the server reads what the client sent.
  bool pump(http2::ServerSession::Clock::time_point now = http2::ServerSession::Clock::now()) {
    for (int i = 0; i < 100; ++i) {
      const std::string up = client.produce();
      if (!up.empty() && !server.receive(up, now)) {
        std::string down;
        server.produce(down);
        client.receive(down);
        return false;
      }
      std::string down;
      server.produce(down);
      if (!down.empty()) client.receive(down);
      if (up.empty() && down.empty()) return true;
    }
    return true;
  }
  void answer(std::int32_t stream, int status, std::string body, std::string_view lines = {}) {
    const auto n = static_cast<std::int64_t>(body.size());
    REQUIRE(server.respond(stream, status, "text/plain", n, lines, http2::bytes_body(std::move(body))));
  }
};

// A body given piece by piece: nothing until fed, then what was fed.
struct Pieces final : http2::BodySource {
  std::string pending;
  bool ended = false;
  Read read(std::uint8_t* buf, std::size_t max) override {
    const std::size_t n = std::min(max, pending.size());
    std::copy_n(pending.data(), n, buf);
    pending.erase(0, n);
    return {n, ended && pending.empty()};
  }
};

}  // namespace

TEST_CASE("HTTP/2: the preface decides the protocol", "[http2]") {
  CHECK(http2::match_preface("GET / HTTP/1.1\r\nHost: a\r\n\r\n") == http2::PrefaceMatch::No);
  CHECK(http2::match_preface("P") == http2::PrefaceMatch::Partial);
  CHECK(http2::match_preface("PRI * HTTP/1.1") == http2::PrefaceMatch::No);
  CHECK(http2::match_preface(http2::kClientPreface) == http2::PrefaceMatch::Whole);
}

TEST_CASE("HTTP/2: a request comes out as HTTP/1.1's, and its answer goes back whole", "[http2]") {
  Pair p;
  const auto id = p.client.request("POST", "/notes?x=1", std::string(40000, 'b'),
                                   {{"content-type", "application/json"}, {"cookie", "a=1"}, {"cookie", "b=2"}},
                                   "example.com:8080");
  REQUIRE(p.pump());
  REQUIRE(p.rec.requests.size() == 1);
  const auto& req = p.rec.requests[0].req;
  CHECK(p.rec.requests[0].stream == id);
  CHECK(req.method == HTTP_POST);
  CHECK(req.target == "/notes?x=1");
  CHECK(req.http_major == 2);
  CHECK(req.body == std::string(40000, 'b'));
  CHECK(req.body_size == 40000);
  CHECK(req.header("host") == "example.com:8080");
  CHECK(req.header("content-type") == "application/json");
  CHECK(req.header("cookie") == "a=1; b=2");

  p.answer(id, 201, std::string(100000, 'r'), "X-Request-Id: 7\r\nConnection: keep-alive\r\nTransfer-Encoding: x\r\n");
  REQUIRE(p.pump());
  const auto& a = p.client.answers[id];
  CHECK(a.status == 201);
  CHECK(a.body == std::string(100000, 'r'));  // past the 64 KiB default window: WINDOW_UPDATEs carried it
  CHECK(a.field("content-type") == "text/plain");
  CHECK(a.field("content-length") == "100000");
  CHECK(a.field("x-request-id") == "7");
  CHECK(a.field("connection").empty());
  CHECK(a.field("transfer-encoding").empty());
  CHECK(a.closed);
  CHECK(a.error_code == 0);
  REQUIRE(p.rec.closed.size() == 1);
  CHECK(p.rec.closed[0] == std::pair<std::int32_t, bool>{id, true});
  CHECK(p.server.open_streams() == 0);  // RFC 9218 2.1: no RFC 7540 priority tree is kept.
  CHECK(p.client.server_setting(NGHTTP2_SETTINGS_NO_RFC7540_PRIORITIES) == 1);
}

TEST_CASE("HTTP/2: many streams at once are answered in any order", "[http2]") {
  Pair p;
  std::vector<std::int32_t> ids;
  for (int i = 0; i < 6; ++i) ids.push_back(p.client.request("GET", numbered("/n/", i)));
  REQUIRE(p.pump());
  REQUIRE(p.rec.requests.size() == 6);
  for (auto it = ids.rbegin(); it != ids.rend(); ++it) p.answer(*it, 200, numbered("s", *it));
  REQUIRE(p.pump());
  for (const auto id : ids) CHECK(p.client.answers[id].body == numbered("s", id));
}

TEST_CASE("HTTP/2: a body given in pieces goes out as they come", "[http2]") {
  Pair p;
  const auto id = p.client.request("GET", "/stream");
  REQUIRE(p.pump());
  auto source = std::make_unique<Pieces>();
  Pieces* pieces = source.get();
  REQUIRE(p.server.respond(id, 200, "text/event-stream", -1, {}, std::move(source)));
  REQUIRE(p.pump());
  CHECK(p.client.answers[id].status == 200);
  CHECK(p.client.answers[id].field("content-length").empty());
  CHECK_FALSE(p.client.answers[id].closed);
  pieces->pending = "one\n";
  p.server.resume(id);
  REQUIRE(p.pump());
  CHECK(p.client.answers[id].body == "one\n");
  pieces->pending = "two\n";
  pieces->ended = true;
  p.server.resume(id);
  REQUIRE(p.pump());
  CHECK(p.client.answers[id].body == "one\ntwo\n");
  CHECK(p.client.answers[id].closed);
}

TEST_CASE("HTTP/2: a body taken as it comes reopens its window only as it is consumed", "[http2]") {
  auto limits = small_limits();
  limits.stream_window = 16384;
  Pair p(limits);
  // Until the client has the server's SETTINGS it may send the default
  // window (65,535 bytes): settle them first.
  REQUIRE(p.pump());
  const auto id = p.client.request("POST", "/in", std::string(100000, 'x'));
  REQUIRE(p.pump());
  // The window holds the client back: no more than it, and no end.
  auto& [got, ended] = p.rec.streamed[id];
  CHECK(got.size() == 16384);
  CHECK_FALSE(ended);
  // Another stream is not held up by it: the connection's window reopens
  // as bytes arrive.
  const auto other = p.client.request("POST", "/collected", std::string(30000, 'y'));
  REQUIRE(p.pump());
  REQUIRE(p.rec.requests.size() == 1);
  CHECK(p.rec.requests[0].stream == other);
  CHECK(p.rec.requests[0].req.body.size() == 30000);
  // Consumed, it comes on to its end.
  for (int round = 0; round < 20 && !ended; ++round) {
    p.server.consume(id, got.size());
    got.clear();
    REQUIRE(p.pump());
  }
  CHECK(ended);
  CHECK(p.rec.requests.size() == 1);  // never handed over as a whole request
}

TEST_CASE("HTTP/2: trailers follow a body that asks for them", "[http2]") {
  struct WithTrailers final : http2::BodySource {
    bool sent = false;
    Read read(std::uint8_t* buf, std::size_t max) override {
      if (sent) return {0, true, false, true};
      sent = true;
      const std::string_view b = "message";
      std::copy_n(b.data(), std::min(max, b.size()), buf);
      return {b.size(), true, false, true};
    }
    std::string_view trailer_lines() const override { return "Grpc-Status: 0\r\ngrpc-message: fine\r\n"; }
  };
  Pair p;
  const auto id = p.client.request("POST", "/in", "x");
  REQUIRE(p.pump());
  REQUIRE(p.server.respond(id, 200, "application/grpc", -1, {}, std::make_unique<WithTrailers>()));
  REQUIRE(p.pump());
  const auto& a = p.client.answers[id];
  CHECK(a.closed);
  CHECK(a.error_code == 0);
  CHECK(a.body == "message");
  CHECK(a.field("grpc-status") == "0");
  CHECK(a.field("grpc-message") == "fine");
}

TEST_CASE("HTTP/2: an answer whole before its request ends resets the stream with NO_ERROR", "[http2]") {
  // RFC 9113 8.1: the client stops sending what no one will read and
  // keeps the answer; the stream closes, not the connection.
  Pair p;
  const auto collected = p.client.request_left_open("POST", "/b", "part");
  const auto streamed = p.client.request_left_open("POST", "/in", "part");
  REQUIRE(p.pump());
  CHECK(p.rec.requests.empty());
  CHECK(p.server.open_streams() == 2);
  p.answer(collected, 408, "late");
  REQUIRE(p.server.respond(streamed, 200, "application/grpc", -1, "grpc-status: 12\r\n", nullptr));
  REQUIRE(p.pump());
  for (const auto id : {collected, streamed}) {
    CHECK(p.client.answers[id].closed);
    CHECK(p.client.answers[id].error_code == NGHTTP2_NO_ERROR);
  }
  CHECK(p.client.answers[collected].status == 408);
  CHECK(p.client.answers[collected].body == "late");
  CHECK(p.client.answers[streamed].field("grpc-status") == "12");
  CHECK(p.server.open_streams() == 0);
  const std::set<std::pair<std::int32_t, bool>> answered{{collected, true}, {streamed, true}};
  CHECK(std::set<std::pair<std::int32_t, bool>>(p.rec.closed.begin(), p.rec.closed.end()) == answered);
  const auto after = p.client.request("GET", "/after");
  REQUIRE(p.pump());
  REQUIRE(p.rec.requests.size() == 1);
  CHECK(p.rec.requests[0].stream == after);
}

TEST_CASE("HTTP/2: a collected body that stops arriving is stalled on its own stream's clock", "[http2]") {
  using namespace std::chrono_literals;
  Pair p;
  const auto t0 = http2::ServerSession::Clock::now();
  const auto slow = p.client.request_left_open("POST", "/b", "part");
  const auto streamed = p.client.request_left_open("POST", "/in", "part");  // its taker's to bound
  REQUIRE(p.pump(t0));
  const auto fresh = p.client.request_left_open("POST", "/b", "part");
  REQUIRE(p.pump(t0 + 2s));
  CHECK(p.server.bodies_stalled(t0).empty());
  CHECK(p.server.bodies_stalled(t0 + 1s) == std::vector<std::int32_t>{slow});
  const auto both = p.server.bodies_stalled(t0 + 3s);
  CHECK(std::set<std::int32_t>(both.begin(), both.end()) == std::set<std::int32_t>{slow, fresh});
  p.answer(slow, 408, "late");  // answered: no longer owed
  REQUIRE(p.pump(t0 + 3s));
  CHECK(p.server.bodies_stalled(t0 + 3s) == std::vector<std::int32_t>{fresh});
  CHECK_FALSE(p.client.answers[streamed].closed);
  CHECK_FALSE(p.server.head_owed());
}

TEST_CASE("HTTP/2: limits refuse the stream, not the connection", "[http2]") {
  Pair p;
  const auto big_head = p.client.request("GET", "/h", {}, {{"x-big", std::string(5000, 'h')}});
  const auto many = [] {
    std::vector<std::pair<std::string, std::string>> f;
    for (int i = 0; i < 21; ++i) f.emplace_back(numbered("x-f", i), "v");
    return f;
  }();
  const auto many_fields = p.client.request("GET", "/h", {}, many);
  const auto long_path = p.client.request("GET", "/" + std::string(1100, 'p'));
  const auto big_body = p.client.request("POST", "/b", std::string(200000, 'x'));
  const auto unknown = p.client.request("FROBNICATE", "/x");
  const auto bad_host = p.client.request("GET", "/x", {}, {}, "user@host");
  REQUIRE(p.pump());
  CHECK(p.rec.requests.empty());
  std::map<std::int32_t, int> refused(p.rec.refusals.begin(), p.rec.refusals.end());
  CHECK(p.rec.refusals.size() == refused.size());  // each once
  CHECK(refused[big_head] == 431);
  CHECK(refused[many_fields] == 431);
  CHECK(refused[long_path] == 414);
  CHECK(refused[big_body] == 413);
  CHECK(refused[unknown] == 501);
  CHECK(refused[bad_host] == 400);
  for (const auto& [id, status] : p.rec.refusals) p.answer(id, status, "no");
  REQUIRE(p.pump());
  for (const auto& [id, status] : p.rec.refusals) CHECK(p.client.answers[id].status == status);
  // The connection still serves.
  const auto after = p.client.request("GET", "/ok");
  REQUIRE(p.pump());
  REQUIRE(!p.rec.requests.empty());
  CHECK(p.rec.requests.back().stream == after);
}

TEST_CASE("HTTP/2: each stream starts clean though the session reuses the last ones' buffers", "[http2]") {
  // More rounds than the session keeps spare streams, each round leaving
  // something behind that the next request must not see: a body, cookies,
  // a field, an authority, a refusal, a body taken as it came.
  Pair p;
  for (int round = 0; round < 6; ++round) {
    const auto full = p.client.request("POST", "/full", "payload",
                                       {{"cookie", "a=1"}, {"cookie", "b=2"}, {"x-left", "behind"}}, "full.example");
    const auto refused = p.client.request("GET", "/r", {}, {{"x-big", std::string(5000, 'h')}});
    const auto in = p.client.request("POST", "/in/x", "streamed", {{"x-in", "1"}});
    REQUIRE(p.pump());
    REQUIRE(!p.rec.refusals.empty());
    CHECK(p.rec.refusals.back() == std::pair<std::int32_t, int>{refused, 431});
    CHECK(p.rec.streamed[in] == std::pair<std::string, bool>{"streamed", true});
    p.answer(full, 200, "f");
    p.answer(refused, 431, "r");
    p.answer(in, 200, "i");
    REQUIRE(p.pump());

    const auto plain = p.client.request("GET", "/plain", {}, {{"x-now", "here"}}, "plain.example");
    REQUIRE(p.pump());
    REQUIRE(p.rec.requests.back().stream == plain);  // whole, not taken as it came
    const auto& req = p.rec.requests.back().req;
    CHECK(req.method == HTTP_GET);
    CHECK(req.target == "/plain");
    CHECK(req.body.empty());
    CHECK(req.body_size == 0);
    CHECK(req.header("host") == "plain.example");
    CHECK(req.header("x-now") == "here");
    CHECK(req.header("cookie").empty());
    CHECK(req.header("x-left").empty());
    CHECK(req.header("x-in").empty());
    CHECK(req.headers.size() == 2);
    p.answer(plain, 200, "p");
    REQUIRE(p.pump());
    CHECK(p.client.answers[plain].body == "p");
    CHECK(p.server.open_streams() == 0);
  }
}

TEST_CASE("HTTP/2: streams past the concurrency limit are refused", "[http2]") {
  Pair p(small_limits(), 1000);  // the client opens streams before it hears the limit
  std::vector<std::int32_t> ids;
  for (int i = 0; i < 12; ++i) ids.push_back(p.client.request("GET", "/c"));
  REQUIRE(p.pump());
  CHECK(p.rec.requests.size() == 8);
  int refused = 0;
  for (const auto id : ids)
    if (p.client.answers[id].closed && p.client.answers[id].error_code == NGHTTP2_REFUSED_STREAM) ++refused;
  CHECK(refused == 4);
}

TEST_CASE("HTTP/2: a client's reset closes its stream unanswered", "[http2]") {
  Pair p;
  const auto id = p.client.request("GET", "/slow");
  REQUIRE(p.pump());
  p.client.reset(id);
  REQUIRE(p.pump());
  REQUIRE(p.rec.closed.size() == 1);
  CHECK(p.rec.closed[0] == std::pair<std::int32_t, bool>{id, false});
  CHECK_FALSE(p.server.respond(id, 200, "text/plain", 0, {}, nullptr));  // late: the stream is gone
}

TEST_CASE("HTTP/2: nothing of a stream reset in the read that brought it is handed over", "[http2]") {
  Pair p;
  REQUIRE(p.pump());
  // Request and reset, and a streamed body and its reset, each in one read.
  const auto whole = p.client.request("GET", "/whole");
  const auto streamed = p.client.request("POST", "/in", std::string(100, 'x'));
  p.client.reset(whole);
  p.client.reset(streamed);
  const auto kept = p.client.request("POST", "/in", "kept");
  REQUIRE(p.pump());
  CHECK(p.rec.requests.empty());
  CHECK(p.rec.streamed[streamed].first.empty());
  CHECK_FALSE(p.rec.streamed[streamed].second);
  // What the same read brought for a stream it did not reset comes in order.
  CHECK(p.rec.streamed[kept] == std::pair<std::string, bool>{"kept", true});
}

TEST_CASE("HTTP/2: rapid reset ends the connection with a GOAWAY", "[http2]") {
  http2::Limits l = small_limits();
  l.max_concurrent_streams = 128;  // each round's streams are all taken, then all reset
  Pair p(l, 100000);
  // Each stream opened (its HEADERS sent) and reset at once: the server
  // starts work for each, the client pays nothing. nghttp2's token bucket
  // (1,000 at once, 33 a second) ends it.
  for (int round = 0; round < 40 && !p.client.goaway; ++round) {
    std::vector<std::int32_t> ids;
    for (int i = 0; i < 100; ++i) ids.push_back(p.client.request("GET", "/r"));
    p.server.receive(p.client.produce(), {});
    for (const auto id : ids) p.client.reset(id);
    p.pump();
  }
  CHECK(p.client.goaway);
  CHECK(p.client.goaway_error != 0);
  CHECK(p.rec.requests.size() < 1200);
  CHECK(p.server.done());
}

TEST_CASE("HTTP/2: a SETTINGS flood the client never acknowledges ends the connection", "[http2]") {
  Recorder rec;
  http2::ServerSession server(rec, small_limits());
  std::string flood(http2::kClientPreface);
  // An empty SETTINGS frame: length 0, type 4, no flags, stream 0.
  const std::string settings("\x00\x00\x00\x04\x00\x00\x00\x00\x00", 9);
  for (int i = 0; i < 5000; ++i) flood += settings;
  CHECK_FALSE(server.receive(flood, {}));
}

TEST_CASE("HTTP/2: a PING flood the client never reads ends the connection", "[http2]") {
  Recorder rec;
  http2::ServerSession server(rec, small_limits());
  std::string flood(http2::kClientPreface);
  flood += std::string("\x00\x00\x00\x04\x00\x00\x00\x00\x00", 9);  // the client's SETTINGS first
  // PING: length 8, type 6, no flags, stream 0, 8 bytes of data.
  const std::string ping(
      "\x00\x00\x08\x06\x00\x00\x00\x00\x00"
      "12345678",
      17);
  for (int i = 0; i < 5000; ++i) flood += ping;
  CHECK_FALSE(server.receive(flood, {}));
}

TEST_CASE("HTTP/2: a header block in more than 8 CONTINUATION frames ends the connection", "[http2]") {
  // One field per frame, literal and new ("x: y"), so that the block is
  // valid as it grows: only the count of frames is wrong.
  auto frame = [](char type, char flags, std::string_view payload) {
    std::string f{'\x00', '\x00', static_cast<char>(payload.size()), type, flags, '\x00', '\x00', '\x00', '\x01'};
    return f.append(payload);
  };
  const std::string field("\x40\x01x\x01y", 5);
  auto run = [&](int continuations) {
    Recorder rec;
    http2::ServerSession server(rec, small_limits());
    std::string bytes(http2::kClientPreface);
    bytes += std::string("\x00\x00\x00\x04\x00\x00\x00\x00\x00", 9);          // the client's SETTINGS
    bytes += frame('\x01', '\x01', std::string("\x82\x86\x84\x41\x01h", 6));  // HEADERS, END_STREAM
    for (int i = 0; i < continuations; ++i) bytes += frame('\x09', i + 1 == continuations ? '\x04' : '\x00', field);
    const bool alive = server.receive(bytes, {});
    return std::pair{alive, rec.requests.size()};
  };
  CHECK(run(8) == std::pair<bool, std::size_t>{true, 1});  // at the limit: served
  CHECK_FALSE(run(9).first);
}

TEST_CASE("HTTP/2: a client that is not speaking HTTP/2 is refused", "[http2]") {
  Recorder rec;
  http2::ServerSession server(rec, small_limits());
  CHECK_FALSE(server.receive("GET / HTTP/1.1\r\nHost: a\r\n\r\n", {}));
  Recorder rec2;
  http2::ServerSession no_settings(rec2, small_limits());
  // The preface, then a PING where the SETTINGS must come: a GOAWAY, and
  // the session is done once it is out.
  (void)(no_settings.receive(std::string(http2::kClientPreface) + std::string("\x00\x00\x08\x06\x00\x00\x00\x00\x00"
                                                                              "12345678",
                                                                              17),
                             {}));
  std::string out;
  no_settings.produce(out);
  CHECK(out.find(std::string("\x07\x00\x00\x00\x00\x00", 6)) != std::string::npos);  // a GOAWAY frame's type
  CHECK(no_settings.done());
}

TEST_CASE("HTTP/2: a graceful stop answers the streams it took, then the connection is done", "[http2]") {
  Pair p;
  const auto id = p.client.request("GET", "/inflight");
  REQUIRE(p.pump());
  p.server.shutdown();
  REQUIRE(p.pump());
  CHECK(p.client.goaway);
  CHECK(p.client.goaway_error == 0);
  CHECK(p.client.goaway_last_stream == id);
  CHECK_FALSE(p.server.done());  // the stream it took is still owed
  p.answer(id, 200, "late but whole");
  REQUIRE(p.pump());
  CHECK(p.client.answers[id].body == "late but whole");
  CHECK(p.server.done());
}

namespace {

std::string raw_frame(std::uint8_t type, std::uint8_t flags, std::uint32_t stream, std::string_view payload) {
  const auto n = static_cast<std::uint32_t>(payload.size());
  std::string f{static_cast<char>(n >> 16),      static_cast<char>(n >> 8),      static_cast<char>(n),
                static_cast<char>(type),         static_cast<char>(flags),       static_cast<char>(stream >> 24),
                static_cast<char>(stream >> 16), static_cast<char>(stream >> 8), static_cast<char>(stream)};
  return f.append(payload);
}

}  // namespace

TEST_CASE("HTTP/2 session: header blocks naming one HPACK entry thousands of times are cut short", "[http2]") {
  Recorder rec;
  http2::ServerSession server(rec, small_limits());
  const auto now = http2::ServerSession::Clock::now();
  std::string in = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + raw_frame(NGHTTP2_SETTINGS, 0, 0, {});
  // x-big: 4,000 bytes, into the dynamic table (index 62).
  const std::string get("\x82\x86\x84\x01\x09localhost", 14);  // GET / (localhost)
  std::string entry = get + std::string("\x40\x05x-big\x7f\xa1\x1e", 10);
  entry.append(4000, 'v');
  in += raw_frame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_STREAM | NGHTTP2_FLAG_END_HEADERS, 1, entry);
  const std::string refs = get + std::string(16000, '\xbe');
  REQUIRE(server.receive(in, now));
  std::string out;
  server.produce(out);
  REQUIRE(rec.requests.size() == 1);  // stream 1: whole, and small
  CHECK(rec.requests[0].stream == 1);
  // Each block is reset once past twice the header limit, not answered 431
  // after decoding it all; past 256 x the limit decoded in a second, the
  // connection ends.
  std::uint32_t id = 3;
  for (; id < 3 + 2 * 200; id += 2) {
    if (!server.receive(raw_frame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_STREAM | NGHTTP2_FLAG_END_HEADERS, id, refs), now))
      break;
    server.produce(out);
  }
  CHECK(rec.refusals.empty());
  CHECK(rec.closed.size() > 50);
  CHECK(id < 3 + 2 * 200);
  server.produce(out);  // the GOAWAY
  CHECK(server.done());
}
