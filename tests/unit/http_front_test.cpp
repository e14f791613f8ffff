// HttpFront without processes (unit/front_fixture.hpp): a request to a
// declared route becomes one request envelope to the router, with its
// event, decoded path parameters, query and the coding Accept-Encoding
// asks for; a 404, a 405 with Allow, a declared field that fails its check
// (422) and /health are answered by the front itself, with nothing sent.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "envelope/control.hpp"
#include "unit/front_fixture.hpp"

using namespace edri;
namespace env = edri::envelope;
using edri::testing::key_values;
using transport::Topology;
using Fixture = edri::testing::FrontFixture;

TEST_CASE("http front sends a routed request as one envelope with its params, query and coding",
          "[listener][http_front]") {
  struct Case {
    std::string accept_encoding;  // empty: none sent
    std::uint16_t coding;
  };
  for (const auto& [accept_encoding, coding] :
       {Case{"gzip", env::kFlagCodingGzip}, Case{"gzip, br", env::kFlagCodingBrotli}, Case{"", 0}}) {
    INFO("Accept-Encoding: " << accept_encoding);
    Fixture f;
    const std::string encoding = accept_encoding.empty() ? "" : "Accept-Encoding: " + accept_encoding + "\r\n";
    CHECK(f.exchange("GET /hello/w%C3%B6rld?lang=de&x=1 HTTP/1.1\r\nHost: x\r\n" + encoding + "\r\n").empty());
    CHECK(f.c->waiting());  // for the handler's answer

    const auto v = f.one_request_to(Topology::kRouter);
    CHECK(v.header.event_type == env::event_type_id("test.hello"));
    CHECK(key_values(v, env::SectionType::PathParams) ==
          std::vector<std::pair<std::string, std::string>>{{"name", "w\xC3\xB6rld"}});
    CHECK(v.text(env::SectionType::Query) == "lang=de&x=1");
    const std::uint16_t codings = env::kFlagCodingAsked | env::kFlagCodingGzip | env::kFlagCodingBrotli;
    CHECK((v.header.flags & codings) == (env::kFlagCodingAsked | coding));

    // The broker was told of it (to answer it should the router die).
    CHECK(f.broker_told_of_one());
  }
}

TEST_CASE("http front answers 404 and 405 with Allow itself", "[listener][http_front]") {
  Fixture f;
  const std::string wire = f.exchange(
      "GET /nowhere HTTP/1.1\r\nHost: x\r\n\r\n"
      "DELETE /hello/x HTTP/1.1\r\nHost: x\r\n\r\n");
  const auto second = wire.find("HTTP/1.1 405 Method Not Allowed\r\n");
  REQUIRE(second != std::string::npos);
  const std::string not_found = wire.substr(0, second), not_allowed = wire.substr(second);
  CHECK(not_found.find("HTTP/1.1 404 Not Found\r\n") == 0);
  CHECK(not_found.find("application/problem+json") != std::string::npos);
  CHECK(not_found.find("no route for /nowhere") != std::string::npos);
  CHECK(not_allowed.find("\r\nAllow: GET, HEAD, OPTIONS\r\n") != std::string::npos);
  CHECK(not_allowed.find("DELETE is not allowed here") != std::string::npos);
  // The plugins' middleware ran on both (test_app's "first" adds X-Order).
  CHECK(not_found.find("\r\nX-Order: first\r\n") != std::string::npos);
  CHECK(not_allowed.find("\r\nX-Order: first\r\n") != std::string::npos);
  CHECK(f.nothing_sent());
}

TEST_CASE("http front answers 422 naming the declared field that failed, sending nothing", "[listener][http_front]") {
  Fixture f;
  SECTION("a body field") {
    const std::string body = R"({"title":"","count":3})";
    const std::string wire =
        f.exchange("POST /things HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " +
                   std::to_string(body.size()) + "\r\n\r\n" + body);
    CHECK(wire.find("HTTP/1.1 422 ") == 0);
    CHECK(wire.find(R"("field":"title")") != std::string::npos);
    CHECK(wire.find(R"("field":"count")") == std::string::npos);
  }
  SECTION("a query field") {
    const std::string wire = f.exchange("GET /search?limit=5 HTTP/1.1\r\nHost: x\r\n\r\n");
    CHECK(wire.find("HTTP/1.1 422 ") == 0);
    CHECK(wire.find(R"("field":"q")") != std::string::npos);
    CHECK(wire.find(R"("field":"limit")") == std::string::npos);
  }
  CHECK(f.nothing_sent());
}

TEST_CASE("http front answers /health from the segment, sending nothing", "[listener][http_front]") {
  Fixture f;
  // Every process of the segment serves: this one stands in for them all,
  // asleep in its loop (not stalled).
  f.segment.segment.header().supervisor_pid = static_cast<std::uint64_t>(::getpid());
  for (std::uint32_t slot = 1; slot < f.segment.topology.process_slots(); ++slot) {
    f.segment.segment.doorbell(slot).pid = static_cast<std::uint32_t>(::getpid());
    f.segment.segment.doorbell(slot).sleeping = 1;
  }
  const std::string wire = f.exchange("GET /health HTTP/1.1\r\nHost: x\r\n\r\n");
  CHECK(wire.find("HTTP/1.1 200 OK\r\n") == 0);
  CHECK(wire.find("\r\nCache-Control: no-store\r\n") != std::string::npos);
  CHECK(wire.find(R"("status":"ok")") != std::string::npos);
  CHECK(wire.find(R"("name":"manager other")") != std::string::npos);
  // Before middleware: health checks need no credentials.
  CHECK(wire.find("X-Order") == std::string::npos);
  CHECK(f.nothing_sent());
}
