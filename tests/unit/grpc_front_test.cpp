// GrpcFront without processes (unit/front_fixture.hpp), with nghttp2's
// client speaking HTTP/2 over the connection's socket pair: a health check
// and a method no service has are answered by the front itself, with
// nothing sent; a Call's Event becomes one request envelope of its
// command's event, sent as an HTTP request's is, its fields the path
// parameters of the event's route (behind its subscriptions, to the
// broker, on a connection that subscribed); an unknown command ends the
// Call UNIMPLEMENTED.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "support/grpc_event.hpp"
#include "support/h2_client.hpp"
#include "unit/front_fixture.hpp"

using namespace edri;
namespace env = edri::envelope;
using edri::test::H2Client;
using edri::testing::key_values;
using transport::Topology;

namespace {

struct Fixture : edri::testing::FrontFixture {
  H2Client client;
  // The bytes of each side carried to the other until both are quiet.
  void pump() {
    for (int i = 0; i < 20; ++i) {
      const std::string up = client.produce();
      const std::string down = exchange(up);
      if (up.empty() && down.empty()) return;
      REQUIRE(client.receive(down));
    }
    FAIL("the client and the connection never went quiet");
  }
  // A gRPC call of `method` with one message, its answer once pumped.
  const H2Client::Answer& call(const std::string& method, const std::string& message) {
    const auto id = client.request("POST", method, message, {{"content-type", "application/grpc"}, {"te", "trailers"}});
    pump();
    return client.answers[id];
  }
};

// `payload` as one uncompressed gRPC message.
std::string framed(const std::string& payload) {
  std::string out;
  edri::grpc::frame_prefix(out, payload.size(), false);
  return out + payload;
}

}  // namespace

TEST_CASE("grpc front answers a health check itself", "[listener][grpc_front]") {
  Fixture f;
  const auto& a = f.call("/grpc.health.v1.Health/Check", framed(""));
  CHECK(f.c->http2() != nullptr);
  CHECK(a.closed);
  CHECK(a.status == 200);
  CHECK(a.field("grpc-status") == "0");
  CHECK(a.body == framed(std::string("\x08\x01", 2)));  // HealthCheckResponse{status: SERVING}
  CHECK(f.nothing_sent());
}

TEST_CASE("grpc front ends a call of a method no service has UNIMPLEMENTED", "[listener][grpc_front]") {
  Fixture f;
  const auto& a = f.call("/no.Such/Method", framed(""));
  CHECK(a.closed);
  CHECK(a.field("grpc-status") == "12");
  CHECK(a.field("grpc-message").find("no method /no.Such/Method") != std::string::npos);
  CHECK(f.nothing_sent());
}

TEST_CASE("grpc front sends a Call's event as an HTTP request's, with its command's fields", "[listener][grpc_front]") {
  Fixture f;
  const auto& a = f.call("/edri.v1.Edri/Call", test::event_message("hello", R"({"name":"grpc"})", 7));
  CHECK_FALSE(a.closed);  // the handler's answer is awaited
  CHECK(f.broker_told_of_one());
  const auto v = f.one_request_to(Topology::kRouter);
  CHECK(v.header.event_type == env::event_type_id("test.hello"));
  CHECK(key_values(v, env::SectionType::PathParams) ==
        std::vector<std::pair<std::string, std::string>>{{"name", "grpc"}});
}

TEST_CASE("grpc front sends the events of a Connect that subscribed behind its subscription, to the broker",
          "[listener][grpc_front]") {
  Fixture f;
  f.call("/edri.v1.Edri/Connect",
         test::event_message("watch", "", 1) + test::event_message("hello", R"({"name":"after"})", 2));
  CHECK(f.sent_to(Topology::kRouter).empty());
  const auto told = f.sent_to(Topology::kBroker);
  REQUIRE(told.size() == 2);
  env::EnvelopeView subscribe, hello;
  REQUIRE(env::decode(told[0], subscribe) == env::DecodeError::None);
  REQUIRE(env::decode(told[1], hello) == env::DecodeError::None);
  CHECK(subscribe.header.event_type == env::kControlPushSubscribe);
  CHECK(hello.header.kind == static_cast<std::uint8_t>(env::Kind::Request));
  CHECK(hello.header.event_type == env::event_type_id("test.hello"));
}

TEST_CASE("grpc front ends a Call of an unknown command UNIMPLEMENTED, sending nothing", "[listener][grpc_front]") {
  Fixture f;
  const auto& a = f.call("/edri.v1.Edri/Call", test::event_message("no.such.command", "", 1));
  CHECK(a.closed);
  CHECK(a.field("grpc-status") == "12");
  CHECK(a.field("grpc-message").find("unknown command no.such.command") != std::string::npos);
  CHECK(f.nothing_sent());
}
