// Answers against a fake sink: an answer envelope becomes one respond() with
// the handler's header lines, the slot's middleware lines and what
// response-side middleware adds, and is counted in the route's row; a
// streamed answer the sink will not carry stops its producer (a cancel to
// the broker); a lost blob, a malformed stream head and an unreadable file
// are problems; a stale answer changes nothing; a WebSocket command's
// answer is not counted.
#include <catch2/catch.hpp>
#include <cstring>
#include <string>
#include <vector>

#include "envelope/control.hpp"
#include "listener/answers.hpp"
#include "runtime/asio.hpp"
#include "unit/quiet_tables.hpp"
#include "unit/segment_fixture.hpp"

using namespace edri;
using namespace edri::listener;
namespace env = edri::envelope;

namespace {

// One slot, recording what it was answered with.
struct FakeSink final : AnswerSink {
  SlotInfo info;
  bool answered = false;
  bool carries_streams = true;
  int status = 0;
  std::string content_type, lines, body;
  StreamRef stream{};

  std::string_view protocol() const override { return "fake"; }
  std::uint32_t open(SlotInfo i) override {
    info = std::move(i);
    return 7;
  }
  SlotInfo* slot(std::uint32_t seq) override { return seq == 7 && !answered ? &info : nullptr; }
  void hold_upload(std::uint32_t, std::shared_ptr<http::SpilledBody>) override {}
  void respond(std::uint32_t, const http::ResponseHead& h, std::string_view l, AnswerBody b) override {
    record(h, l);
    if (const auto* bytes = std::get_if<std::string_view>(&b)) body = *bytes;
  }
  bool open_stream(std::uint32_t, http::ResponseHead h, std::string_view l, StreamRef ref) override {
    record(h, l);
    stream = ref;
    return carries_streams;
  }
  bool stream_piece(std::uint32_t, std::string_view, transport::BlobLease, bool, bool) override { return false; }
  EventsCarrier open_events(std::uint32_t, std::string_view) override { return EventsCarrier::Refused; }
  void record(const http::ResponseHead& h, std::string_view l) {
    answered = true;
    status = h.status;
    content_type = h.content_type;
    lines = l;
  }
};

// An answer envelope for slot 7, decoded; its bytes live in `buffer`.
struct AnswerEnvelope {
  std::vector<std::byte> buffer;
  env::EnvelopeView view;
  explicit AnswerEnvelope(const env::EnvelopeWriter& w) : buffer(w.size()) {
    w.write(buffer.data());
    REQUIRE(env::decode(buffer, view) == env::DecodeError::None);
  }
};

env::EnvelopeHeader answer_header(int status) {
  auto h = env::make_header(env::Kind::Response, 0, 99);
  h.origin_stream = 7;
  h.status = static_cast<std::uint16_t>(status);
  return h;
}

// Answers with what it needs around it: a connection table (never asked
// here), channels for what it sends, and metrics in plain memory.
struct Fixture {
  Config config;
  SegmentFixture segment{1 << 16};
  transport::Outbox broker{segment.segment.producer(0), transport::Doorbell(&segment.segment.doorbell(1), -1), 1 << 20};
  transport::Outbox router{segment.segment.producer(1), transport::Doorbell(&segment.segment.doorbell(2), -1), 1 << 20};
  EventSender sender{broker, router, {}, plugin::DirectRoutes{}, 0};
  transport::ListenerMetricsHeader metrics{};
  std::atomic<std::uint64_t> counters[2 * transport::kStatusColumns]{};
  std::atomic<std::uint64_t> latency[2 * transport::kRouteLatencyCells]{};
  std::atomic<std::uint64_t> call_latency[transport::kRouteLatencyCells]{};
  EventLoop loop;
  asio::io_context io;
  bool draining = false;
  testing::QuietTables tables;
  ConnectionContext context = tables.context(config, loop, io, draining);
  ConnectionTable table{context, config, metrics, [] {}};
  Answers answers;
  FakeSink sink;

  explicit Fixture(std::vector<MiddlewareDecl> middlewares = {})
      : answers(config, table, sender, nullptr, std::move(middlewares),
                Answers::Metrics{metrics, counters, 1, latency, call_latency}) {
    SlotInfo info;
    info.route = 0;
    info.headers = "X-Middleware: in\r\n";
    (void)sink.open(std::move(info));
  }
  std::uint64_t count(int status) { return counters[transport::status_column(status)].load(); }
  // The control codes of what was sent to the broker.
  std::vector<std::uint64_t> sent_to_broker() {
    std::vector<std::uint64_t> codes;
    auto consumer = segment.segment.consumer(0);
    consumer.drain([&](std::span<const std::byte> r, std::uint32_t) {
      env::EnvelopeView v;
      if (env::decode(r, v) == env::DecodeError::None) codes.push_back(v.header.event_type);
    });
    return codes;
  }
};

MiddlewareDecl adds_status_header() {
  MiddlewareDecl mw;
  mw.name = "status header";
  mw.on_response = [](int status, ResponseHeaders& h) { h.add("X-Status", std::to_string(status)); };
  return mw;
}

}  // namespace

TEST_CASE("answers give a handler's answer once, with every header line, and count it", "[listener][answers]") {
  Fixture f({adds_status_header()});
  env::EnvelopeWriter w(answer_header(201));
  w.text(env::SectionType::ContentType, "application/json");
  w.text(env::SectionType::Body, R"({"id":1})");
  const std::vector<std::pair<std::string, std::string>> headers{{"X-Handler", "yes"}};
  w.key_values(env::SectionType::Headers, headers, env::StringPairKey{}, env::StringPairValue{});
  AnswerEnvelope e(w);
  f.answers.deliver(f.sink, e.view, {}, false);
  CHECK(f.sink.status == 201);
  CHECK(f.sink.content_type == "application/json");
  CHECK(f.sink.body == R"({"id":1})");
  CHECK(f.sink.lines == "X-Handler: yes\r\nX-Middleware: in\r\nX-Status: 201\r\n");
  CHECK(f.count(201) == 1);
  CHECK(f.latency[transport::kLatencyBuckets + 1].load() == 1);  // route 0's count
  f.answers.deliver(f.sink, e.view, {}, false);                  // stale: the slot was answered
  CHECK(f.count(201) == 1);
}

TEST_CASE("answers stop a stream's producer when the sink will not carry it", "[listener][answers]") {
  Fixture f;
  f.sink.carries_streams = false;
  env::EnvelopeWriter w(answer_header(200));
  w.text(env::SectionType::ContentType, "text/plain");
  const env::StreamHead sh{3, 0, 65536, -1};
  w.raw(env::SectionType::Stream, std::as_bytes(std::span(&sh, 1)));
  AnswerEnvelope e(w);
  f.answers.deliver(f.sink, e.view, {}, false);
  CHECK(f.sink.stream.manager_slot == 3);
  CHECK(f.sink.stream.id == 99);
  CHECK(f.sent_to_broker() == std::vector<std::uint64_t>{env::kControlStreamCancel});
}

TEST_CASE("answers make a lost blob, a malformed stream head and an unreadable file problems", "[listener][answers]") {
  SECTION("lost blob") {
    Fixture f;
    AnswerEnvelope e(env::EnvelopeWriter(answer_header(200)));
    f.answers.deliver(f.sink, e.view, {}, true);
    CHECK(f.sink.status == 502);
  }
  SECTION("malformed stream head") {
    Fixture f;
    env::EnvelopeWriter w(answer_header(200));
    w.text(env::SectionType::Stream, "short");
    AnswerEnvelope e(w);
    f.answers.deliver(f.sink, e.view, {}, false);
    CHECK(f.sink.status == 502);
  }
  SECTION("unreadable file") {
    Fixture f;
    env::EnvelopeWriter w(answer_header(200));
    w.text(env::SectionType::File, "/nonexistent/edri-answers-test");
    AnswerEnvelope e(w);
    f.answers.deliver(f.sink, e.view, {}, false);
    CHECK(f.sink.status == 500);
  }
}

TEST_CASE("answers do not count a WebSocket command's answer", "[listener][answers]") {
  Fixture f;
  f.sink.info.route = SlotInfo::kUncounted;
  f.answers.problem(f.sink, 7, 404, "no such command");
  CHECK(f.sink.status == 404);
  CHECK(f.sink.content_type == "application/problem+json");
  CHECK(f.count(404) == 0);
  for (std::size_t row = 0; row < 2; ++row)
    CHECK(f.latency[row * transport::kRouteLatencyCells + transport::kLatencyBuckets + 1].load() == 0);
}
