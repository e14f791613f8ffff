#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
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

TEST_CASE("the Host header must be a valid uri-host [ \":\" port ]", "[parser]") {
  using edri::http::is_valid_host;
  for (const char* ok :
       {"", "example.com", "example.com:8080", "x:", "127.0.0.1:80", "[::1]", "[::1]:8080", "[2001:db8::7]",
        "[::ffff:192.0.2.1]", "[v1.fe80::a+en1]", "a%2Fb", "a-b_c~d!$&'()*+,;=", " h ", "h\t"})
    CHECK(is_valid_host(ok));
  for (const char* bad :
       {"a b",  "a@b",  "user:pw@host", "a/b",    "a?b",     "a#b",   "h:8o",   "h:80:90", "a%zz",  "a%2",
        "[::1", "[zz]", "[]",           "[::1]x", "[::1]:x", "[v1.]", "[vz.a]", "a[b]",    "\"h\"", "caf\xc3\xa9"})
    CHECK_FALSE(is_valid_host(bad));

  for (const char* bad : {"a b", "a@b"}) {
    Collected c;
    const auto r = c.feed(std::string("GET / HTTP/1.1\r\nHost: ") + bad + "\r\n\r\n");
    CHECK_FALSE(r.ok);
    CHECK(r.status == 400);
    CHECK(c.requests.empty());
  }
  // HTTP/1.0 may leave it out, but one it sends is checked too.
  Collected ten;
  CHECK(ten.feed("GET / HTTP/1.0\r\nHost: a@b\r\n\r\n").status == 400);
  // Empty: allowed (RFC 9112 3.2, a target without authority).
  Collected empty;
  REQUIRE(empty.feed("GET / HTTP/1.1\r\nHost:\r\n\r\nGET / HTTP/1.1\r\nHost: [::1]:80 \r\n\r\n").ok);
  CHECK(empty.requests.size() == 2);
}

TEST_CASE("HTTP/1.2 and later 1.x minors are served as HTTP/1.1, other majors are 505", "[parser]") {
  for (const char* version : {"1.2", "1.9"}) {
    Collected c;
    const auto r =
        c.feed(std::string("GET / HTTP/") + version + "\r\nHost: h\r\n\r\nGET /b HTTP/1.1\r\nHost: h\r\n\r\n");
    REQUIRE(r.ok);
    REQUIRE(c.requests.size() == 2);
    CHECK(c.requests[0].http_major == 1);
    CHECK(c.requests[0].http_minor == 1);
    CHECK(c.requests[0].keep_alive);  // 1.1's default
  }
  Collected closes;
  REQUIRE(closes.feed("GET / HTTP/1.2\r\nHost: h\r\nConnection: close\r\n\r\n").ok);
  CHECK_FALSE(closes.requests.at(0).keep_alive);
  // Still one Host, as in 1.1.
  Collected no_host;
  CHECK(no_host.feed("GET / HTTP/1.2\r\n\r\n").status == 400);
  for (const char* version : {"2.0", "3.0", "0.9", "0.1", "9.9"}) {
    Collected c;
    CHECK(c.feed(std::string("GET / HTTP/") + version + "\r\nHost: h\r\n\r\n").status == 505);
  }
  for (const char* version : {"1.10", "11.1", "1", "1.", "a.1", "1.1.1"}) {
    Collected c;
    CHECK(c.feed(std::string("GET / HTTP/") + version + "\r\nHost: h\r\n\r\n").status == 400);
  }
}

namespace {
std::string chunked_request(const std::string& chunks) {
  return "POST /c HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n" + chunks;
}

// A chunk-size line of exactly `length` bytes (CRLF included) for a
// 5-byte chunk: "5;e=xxx...\r\n".
std::string chunk_line(std::size_t length) { return "5;e=" + std::string(length - 6, 'x') + "\r\n"; }

// Feeds `bytes` split in two at `cut`: the first failure, or the last result.
RequestParser::Result feed_split(Collected& c, const std::string& bytes, std::size_t cut) {
  auto r = c.parser.feed(bytes.data(), cut);
  if (!r.ok) return r;
  return c.parser.feed(bytes.data() + cut, bytes.size() - cut);
}
}  // namespace

TEST_CASE("a chunk-size line is at most 4096 bytes and a chunk size at most 16 hex digits", "[parser]") {
  const std::size_t max_line = RequestParser::kMaxChunkLineBytes;
  SECTION("the line limit, extensions included, at every split of the stream") {
    const std::string ok = chunked_request(chunk_line(max_line) + "hello\r\n0\r\n\r\n");
    const std::string bad = chunked_request(chunk_line(max_line + 1) + "hello\r\n0\r\n\r\n");
    for (std::size_t cut = 0; cut <= ok.size(); cut += (cut > 60 && cut < ok.size() - 60) ? 97 : 1) {
      INFO("cut at " << cut);
      Collected c;
      REQUIRE(feed_split(c, ok, cut).ok);
      REQUIRE(c.requests.size() == 1);
      CHECK(c.requests[0].body == "hello");
      Collected d;
      const auto r = feed_split(d, bad, std::min(cut, bad.size()));
      CHECK_FALSE(r.ok);
      CHECK(r.status == 400);
      CHECK(d.requests.empty());
    }
  }
  SECTION("a line that never ends is refused once it is too long, not when it ends") {
    Collected c;
    REQUIRE(c.feed(chunked_request("5;e=" + std::string(max_line - 10, 'x'))).ok);
    const auto r = c.feed(std::string(100, 'x'));
    CHECK_FALSE(r.ok);
    CHECK(r.status == 400);
    CHECK(std::string(r.reason) == "chunk-size line too long");
    Collected big;  // 1 MB of extension in one read
    CHECK(big.feed(chunked_request("5;e=" + std::string(1 << 20, 'x'))).status == 400);
  }
  SECTION("16 digits, leading zeros counted") {
    Collected c;
    REQUIRE(c.feed(chunked_request("0000000000000005\r\nhello\r\n000000000000000\r\n\r\n")).ok);
    REQUIRE(c.requests.size() == 1);
    CHECK(c.requests[0].body == "hello");
    for (const std::string& bad :
         {std::string("00000000000000005\r\nhello\r\n0\r\n\r\n"),
          std::string("5\r\nhello\r\n00000000000000000\r\n\r\n"), std::string(1000, '0') + "5\r\nhello\r\n0\r\n\r\n",
          std::string("00000000000000005;a=b\r\nhello\r\n0\r\n\r\n")}) {
      INFO(bad.substr(0, 40));
      for (std::size_t cut = 0; cut <= bad.size(); ++cut) {
        Collected d;
        const auto all = chunked_request(bad);
        const auto r = feed_split(d, all, all.size() - bad.size() + cut);
        CHECK_FALSE(r.ok);
        CHECK(r.status == 400);
      }
    }
    Collected ext;
    REQUIRE(ext.feed(chunked_request("0000000000000005;a;b=c\r\nhello\r\n0;z\r\n\r\n")).ok);
    CHECK(ext.requests.at(0).body == "hello");
  }
  SECTION("many chunks, pipelined, a byte at a time") {
    std::string chunks;
    std::string body;
    for (int i = 1; i <= 20; ++i) {
      const std::string data(static_cast<std::size_t>(i), static_cast<char>('a' + i));
      char size[8];
      std::snprintf(size, sizeof size, "%x", i);
      chunks += std::string(size) + (i % 3 ? "" : ";n=v") + "\r\n" + data + "\r\n";
      body += data;
    }
    const std::string one = chunked_request(chunks + "0\r\nTrailer: t\r\n\r\n");
    const std::string two = one + one + "GET /after HTTP/1.1\r\nHost: h\r\n\r\n";
    Collected c;
    REQUIRE(c.feed(two).ok);
    Collected d;
    for (char ch : two) REQUIRE(d.parser.feed(&ch, 1).ok);
    for (const auto* got : {&c, &d}) {
      REQUIRE(got->requests.size() == 3);
      CHECK(got->requests[0].body == body);
      CHECK(got->requests[1].body == body);
      CHECK(got->requests[2].target == "/after");
    }
  }
  SECTION("a chunked request paused after, then the rest") {
    std::vector<std::string> bodies;
    RequestParser* self = nullptr;
    RequestParser p({}, [&](HttpRequest& r) {
      bodies.push_back(r.body);
      self->pause();
    });
    self = &p;
    const std::string one = chunked_request("3\r\nabc\r\n0\r\n\r\n");
    const std::string all = one + one;
    auto r = p.feed(all.data(), all.size());
    REQUIRE(r.ok);
    CHECK(r.paused);
    CHECK(r.consumed == one.size());
    r = p.feed(all.data() + r.consumed, all.size() - r.consumed);
    REQUIRE(r.ok);
    CHECK(bodies == std::vector<std::string>{"abc", "abc"});
  }
}

TEST_CASE("HTTP/2's preface after HTTP/1.1 requests is refused in words a client can act on", "[parser]") {
  for (const std::string bytes : {"GET /a HTTP/1.1\r\nHost: h\r\n\r\nPRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
                                  "GET /a HTTP/1.1\r\nHost: h\r\n\r\nPRI * HTTP/2.0\r\n\r\nXX\r\n\r\n"}) {
    Collected c;
    const auto r = c.feed(bytes);
    CHECK_FALSE(r.ok);
    CHECK(r.status == 400);
    CHECK(std::string(r.reason).find("prior knowledge") != std::string::npos);
  }
}
