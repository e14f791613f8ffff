#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "http/request_parser.hpp"

using edri::http::HttpRequest;
using edri::http::ParserLimits;
using edri::http::RequestParser;

namespace {
struct Collected {
  std::vector<HttpRequest> requests;
  RequestParser parser;
  explicit Collected(ParserLimits l = {}) : parser(l, [this](HttpRequest& r) { requests.push_back(r); }) {}
  RequestParser::Result feed(const std::string& s) { return parser.feed(s.data(), s.size()); }
};
}  // namespace

TEST_CASE("a simple request", "[parser]") {
  Collected c;
  auto r = c.feed("GET /a/b?x=1 HTTP/1.1\r\nHost: h\r\nX-Thing: v\r\n\r\n");
  REQUIRE(r.ok);
  REQUIRE(c.requests.size() == 1);
  const auto& q = c.requests[0];
  CHECK(q.method == HTTP_GET);
  CHECK(q.target == "/a/b?x=1");
  CHECK(q.header("host") == "h");
  CHECK(q.header("X-THING") == "v");
  CHECK(q.keep_alive);
  CHECK(q.http_minor == 1);
}

TEST_CASE("pipelined requests in one buffer, and one request byte by byte", "[parser]") {
  Collected c;
  const std::string two =
      "POST /e HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhello"
      "GET /n HTTP/1.1\r\nHost: h\r\n\r\n";
  REQUIRE(c.feed(two).ok);
  REQUIRE(c.requests.size() == 2);
  CHECK(c.requests[0].body == "hello");
  CHECK(c.requests[1].target == "/n");
  CHECK(c.requests[1].body.empty());

  Collected d;
  const std::string one = "POST /split HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nA: b\r\n\r\nxyz";
  for (char ch : one) REQUIRE(d.parser.feed(&ch, 1).ok);
  REQUIRE(d.requests.size() == 1);
  CHECK(d.requests[0].target == "/split");
  CHECK(d.requests[0].header("a") == "b");
  CHECK(d.requests[0].body == "xyz");
}

TEST_CASE("chunked bodies are reassembled", "[parser]") {
  Collected c;
  REQUIRE(
      c.feed("POST /c HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n").ok);
  REQUIRE(c.requests.size() == 1);
  CHECK(c.requests[0].body == "abcde");
}

TEST_CASE("HTTP/1.0 closes unless asked to keep alive", "[parser]") {
  Collected c;
  REQUIRE(c.feed("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET / HTTP/1.0\r\n\r\n").ok);
  REQUIRE(c.requests.size() == 2);
  CHECK(c.requests[0].keep_alive);
  CHECK_FALSE(c.requests[1].keep_alive);
  // Nothing may follow a request that closes the connection: the strict
  // parser refuses it rather than guess what it is.
  Collected d;
  const auto r = d.feed("GET / HTTP/1.0\r\n\r\nGET / HTTP/1.0\r\n\r\n");
  CHECK_FALSE(r.ok);
  REQUIRE(d.requests.size() == 1);
  CHECK_FALSE(d.requests[0].keep_alive);
}

TEST_CASE("malformed input and limits give the right status", "[parser]") {
  SECTION("garbage") {
    Collected c;
    auto r = c.feed("HELLO\r\n\r\n");
    CHECK_FALSE(r.ok);
    CHECK(r.status == 400);
    // The parser stays failed.
    CHECK_FALSE(c.feed("GET / HTTP/1.1\r\nHost: h\r\n\r\n").ok);
    CHECK(c.requests.empty());
  }
  SECTION("Content-Length and Transfer-Encoding together") {
    Collected c;
    auto r = c.feed("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n");
    CHECK_FALSE(r.ok);
    CHECK(r.status == 400);
  }
  SECTION("headers too large") {
    ParserLimits l;
    l.max_header_bytes = 100;
    Collected c(l);
    auto r = c.feed("GET / HTTP/1.1\r\nHost: h\r\nX: " + std::string(200, 'a') + "\r\n\r\n");
    CHECK(r.status == 431);
  }
  SECTION("too many headers") {
    ParserLimits l;
    l.max_header_count = 3;
    Collected c(l);
    auto r = c.feed("GET / HTTP/1.1\r\nHost: h\r\nA: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\n\r\n");
    CHECK(r.status == 431);
  }
  SECTION("URL too long") {
    ParserLimits l;
    l.max_url_bytes = 50;
    Collected c(l);
    CHECK(c.feed("GET /" + std::string(100, 'a') + " HTTP/1.1\r\nHost: h\r\n\r\n").status == 414);
  }
  SECTION("declared body too large is refused before it arrives") {
    ParserLimits l;
    l.max_body_bytes = 10;
    Collected c(l);
    CHECK(c.feed("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 11\r\n\r\n").status == 413);
  }
  SECTION("chunked body too large") {
    ParserLimits l;
    l.max_body_bytes = 4;
    Collected c(l);
    CHECK(c.feed("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nabcde\r\n0\r\n\r\n").status ==
          413);
  }
}

TEST_CASE("an upgrade request stops parsing where the new protocol starts", "[parser]") {
  Collected c;
  const std::string head = "GET /ws HTTP/1.1\r\nHost: h\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n";
  auto r = c.feed(head +
                  "\x81\x85"
                  "frame");
  REQUIRE(r.ok);
  CHECK(r.upgrade);
  CHECK(r.consumed == head.size());
  REQUIRE(c.requests.size() == 1);
  CHECK(c.requests[0].upgrade);
  SECTION("an ignored upgrade goes on as HTTP") {
    Collected d;
    const std::string next = "GET /n HTTP/1.1\r\nHost: h\r\n\r\n";
    auto r1 = d.feed(head + next);
    REQUIRE(r1.upgrade);
    d.parser.resume_after_upgrade();
    auto r2 = d.parser.feed(next.data(), next.size());
    CHECK(r2.ok);
    CHECK_FALSE(r2.upgrade);
    REQUIRE(d.requests.size() == 2);
    CHECK(d.requests[1].target == "/n");
  }
}

TEST_CASE("Expect: 100-continue is reported at the end of the headers", "[parser]") {
  int continues = 0;
  std::vector<HttpRequest> got;
  RequestParser p(
      {}, [&](HttpRequest& r) { got.push_back(r); }, [&] { ++continues; });
  const std::string head = "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\nExpect: 100-Continue\r\n\r\n";
  REQUIRE(p.feed(head.data(), head.size()).ok);
  CHECK(continues == 1);
  CHECK(got.empty());
  REQUIRE(p.feed("{}", 2).ok);
  REQUIRE(got.size() == 1);
  CHECK(got[0].body == "{}");

  RequestParser q(
      {}, [](HttpRequest&) {}, [&] { ++continues; });
  const std::string odd = "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\nExpect: something\r\n\r\n{}";
  const auto r = q.feed(odd.data(), odd.size());
  CHECK_FALSE(r.ok);
  CHECK(r.status == 417);
  CHECK(continues == 1);
}

TEST_CASE("pause() stops after the request being delivered: the rest parses when fed again", "[parser]") {
  std::vector<std::string> urls;
  RequestParser* self = nullptr;
  RequestParser p({}, [&](HttpRequest& r) {
    urls.push_back(r.target);
    if (urls.size() == 1) self->pause();
  });
  self = &p;
  const std::string first = "GET /a HTTP/1.1\r\nHost: x\r\n\r\n";
  const std::string rest = "GET /b HTTP/1.1\r\nHost: x\r\n\r\nGET /c HTTP/1.1\r\nHost: x\r\n\r\n";
  const std::string all = first + rest;
  auto r = p.feed(all.data(), all.size());
  REQUIRE(r.ok);
  CHECK(r.paused);
  CHECK(r.consumed == first.size());
  CHECK(urls == std::vector<std::string>{"/a"});
  r = p.feed(all.data() + r.consumed, all.size() - r.consumed);
  REQUIRE(r.ok);
  CHECK_FALSE(r.paused);
  CHECK(r.consumed == rest.size());
  CHECK(urls == std::vector<std::string>{"/a", "/b", "/c"});
}

TEST_CASE("a body past the spill size goes to OnSpill as it arrives, and the limit holds while it does", "[parser]") {
  ParserLimits l;
  l.spill_bytes = 10;
  l.max_body_bytes = 40;
  struct Spilled : edri::http::SpilledBody {};
  std::string spilled;
  std::vector<HttpRequest> requests;
  RequestParser p(
      l, [&](HttpRequest& r) { requests.push_back(r); }, {},
      [&](HttpRequest& r, std::string_view bytes) {
        if (!r.spill) r.spill = std::make_shared<Spilled>();
        spilled.append(bytes);
        return true;
      });
  // Byte by byte: 8 bytes stay in memory, then everything spills.
  const std::string req =
      "POST /u HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: "
      "chunked\r\n\r\n8\r\nabcdefgh\r\n10\r\n0123456789ABCDEF\r\n0\r\n\r\n";
  for (char ch : req) REQUIRE(p.feed(&ch, 1).ok);
  REQUIRE(requests.size() == 1);
  CHECK(requests[0].spill != nullptr);
  CHECK(requests[0].body.empty());
  CHECK(requests[0].body_size == 24);
  CHECK(spilled == "abcdefgh0123456789ABCDEF");
  // A small body stays in memory.
  spilled.clear();
  const std::string small = "POST /u HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabc";
  REQUIRE(p.feed(small.data(), small.size()).ok);
  REQUIRE(requests.size() == 2);
  CHECK(requests[1].body == "abc");
  CHECK(requests[1].spill == nullptr);
  CHECK(spilled.empty());
  // Past the limit in a chunked body: 413 at once, before the body ends.
  const std::string big =
      "POST /u HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n32\r\n" + std::string(50, 'x');
  const auto r = p.feed(big.data(), big.size());
  CHECK_FALSE(r.ok);
  CHECK(r.status == 413);
}
