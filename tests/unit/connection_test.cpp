// Connection over a socket pair, in-process, with the listener around it
// replaced by recorders (connection_owner.hpp's tables): requests read,
// pipelined answers given out of order leave in order, a full pipeline stops
// reading until answers go, a malformed request is refused, the preface
// chooses HTTP/2, an upgrade swaps the codec for WebSocket's (frames read
// with the upgrade request included), Server-Sent Events take the whole
// connection, a slow head times out, a refusal lingers, a client that goes
// abandons what it waited for.
#include <sys/socket.h>

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "listener/connection.hpp"
#include "listener/websocket_codec.hpp"
#include "runtime/asio.hpp"
#include "unit/quiet_tables.hpp"
#include "unit/socket_pair.hpp"

using namespace edri::listener;
using edri::http::HttpRequest;

namespace {

// The tables a connection talks to, recording what it says.
struct Recorder final : edri::testing::QuietTables {
  std::vector<std::string> targets;  // of the requests read
  std::vector<std::uint32_t> seqs;   // their slots
  std::vector<int> refused;
  std::vector<std::uint32_t> abandoned;
  std::vector<std::string> messages;  // WebSocket messages read
  std::vector<bool> upgrades;         // what Connection::upgrade said
  Connection* dirty = nullptr;
  int closed_count = 0;

  void request(Connection& c, HttpRequest& req) override {
    targets.push_back(req.target);
    if (req.upgrade) {
      upgrades.push_back(c.upgrade(req, {}));
      if (upgrades.back()) return;
    }
    seqs.push_back(c.open_slot(req.keep_alive, false, false, {}));
  }
  void websocket_message(Connection&, std::string_view text) override { messages.emplace_back(text); }
  void refuse(Connection& c, int status, std::string_view) override {
    refused.push_back(status);
    c.answers().respond(c.open_slot(false, false, false, {}), edri::http::ResponseHead{status, "text/plain", 0, false},
                        {}, std::string_view());
  }
  void wants_flush(Connection& c) override {
    c.dirty = true;
    dirty = &c;
  }
  void answer_abandoned(Connection&, std::uint32_t seq) override { abandoned.push_back(seq); }
  void closed(Connection&) override { ++closed_count; }
};

struct Fixture {
  edri::Config config;
  edri::EventLoop loop;
  boost::asio::io_context io;
  bool draining = false;
  Recorder rec;
  ConnectionContext context = rec.context(config, loop, io, draining);
  edri::testing::SocketPair pair;
  std::unique_ptr<Connection> c;

  explicit Fixture(std::uint32_t max_pipeline = 64) {
    config.max_pipeline = max_pipeline;
    c = std::make_unique<Connection>(context, std::move(pair.server), 1, 1, nullptr);
    c->start();
  }
  void send(std::string_view bytes) const {
    REQUIRE(::send(pair.client.get(), bytes.data(), bytes.size(), 0) == static_cast<ssize_t>(bytes.size()));
  }
  // One turn of the listener's loop: events, WebSocket sessions, then the
  // flush.
  void turn() {
    loop.poll(0);
    io.restart();
    io.poll();
    if (c->dirty) c->flush();
  }
  void answer(std::uint32_t seq, std::string_view body) {
    c->answers().respond(seq, edri::http::ResponseHead{200, "text/plain", body.size()}, {}, body);
  }
};

}  // namespace

TEST_CASE("connection reads pipelined requests and answers them in order", "[listener][connection]") {
  Fixture f;
  f.send("GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\n\r\n");
  f.turn();
  REQUIRE(f.rec.targets == std::vector<std::string>{"/a", "/b"});
  CHECK(f.c->waiting());
  f.answer(f.rec.seqs[1], "second");
  f.turn();
  CHECK(f.pair.read_all().empty());
  f.answer(f.rec.seqs[0], "first");
  f.turn();
  const std::string wire = f.pair.read_all();
  CHECK(wire.find("first") < wire.find("second"));
  CHECK(wire.find("second") != std::string::npos);
  CHECK_FALSE(f.c->waiting());
  CHECK(f.c->answers().protocol() == "http/1.1");
}

TEST_CASE("connection stops reading at a full pipeline and reads on once answers go", "[listener][connection]") {
  Fixture f(2);
  f.send("GET /1 HTTP/1.1\r\nHost: x\r\n\r\nGET /2 HTTP/1.1\r\nHost: x\r\n\r\nGET /3 HTTP/1.1\r\nHost: x\r\n\r\n");
  f.turn();
  REQUIRE(f.rec.targets.size() == 2);
  f.answer(f.rec.seqs[0], "one");
  f.turn();
  CHECK(f.rec.targets == std::vector<std::string>{"/1", "/2", "/3"});
}

TEST_CASE("connection refuses a malformed request and closes after its answer", "[listener][connection]") {
  Fixture f;
  f.send("GET /ok HTTP/1.1\r\nHost: x\r\n\r\nNOT HTTP AT ALL\r\n\r\n");
  f.turn();
  CHECK(f.rec.targets == std::vector<std::string>{"/ok"});
  CHECK(f.rec.refused == std::vector<int>{400});
  f.answer(f.rec.seqs[0], "ok");
  f.turn();
  const std::string wire = f.pair.read_all();
  CHECK(wire.find("HTTP/1.1 200 OK") == 0);
  CHECK(wire.find("HTTP/1.1 400 Bad Request") != std::string::npos);
  // What the client sent after is read and dropped until it closes
  // (lingering close), so that it reads the answer rather than a reset.
  CHECK(f.c->lingering());
  f.pair.client.reset();
  f.turn();
  CHECK(f.c->closed());
  CHECK(f.rec.closed_count == 1);
}

TEST_CASE("connection speaks HTTP/2 when it opens with the preface", "[listener][connection]") {
  Fixture f;
  f.send("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
  f.turn();
  CHECK(f.c->http2() != nullptr);
  CHECK(f.c->answers().protocol() == "h2");
  f.turn();
  const std::string wire = f.pair.read_all();
  REQUIRE(wire.size() >= 9);
  CHECK(wire[3] == 0x04);  // the server's SETTINGS frame comes first
}

TEST_CASE("connection answers 408 to a request head that does not arrive in time", "[listener][connection]") {
  Fixture f;
  f.config.header_timeout_s = 0.0;
  f.send("GET /slow HTTP/1.1\r\nHo");
  f.turn();
  f.c->apply_idle_limits(std::chrono::steady_clock::now() + std::chrono::seconds(1));
  CHECK(f.rec.refused == std::vector<int>{408});
  f.turn();
  CHECK(f.pair.read_all().find("HTTP/1.1 408") == 0);
}

TEST_CASE("connection abandons what it waited for when its client goes", "[listener][connection]") {
  Fixture f;
  f.send("GET /a HTTP/1.1\r\nHost: x\r\n\r\n");
  f.turn();
  REQUIRE(f.rec.seqs.size() == 1);
  ::shutdown(f.pair.client.get(), SHUT_WR);
  f.turn();
  CHECK(f.rec.abandoned == std::vector<std::uint32_t>{ConnectionOwner::kEverySlot});
  f.answer(f.rec.seqs[0], "late");  // still written, for a client that only stopped sending
  f.turn();
  CHECK(f.pair.read_all().find("late") != std::string::npos);
  CHECK(f.c->closed());
}

namespace {

const std::string kUpgrade =
    "GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n";

// A client's text frame (masked, with a zero key: the payload as it is).
std::string client_text(std::string_view payload) {
  std::string f{'\x81', static_cast<char>(0x80 | payload.size()), '\0', '\0', '\0', '\0'};
  return f.append(payload);
}

}  // namespace

TEST_CASE("connection swaps to the WebSocket codec, frames read with the upgrade included", "[listener][connection]") {
  Fixture f;
  f.send(kUpgrade + client_text(R"({"command":"a"})"));
  for (int i = 0; i < 4; ++i) f.turn();
  REQUIRE(f.rec.upgrades == std::vector<bool>{true});
  REQUIRE(f.c->websocket() != nullptr);
  CHECK(f.c->http2() == nullptr);
  CHECK(f.c->answers().protocol() == "websocket");
  CHECK(f.pair.read_all().find("HTTP/1.1 101") == 0);
  CHECK(f.rec.messages == std::vector<std::string>{R"({"command":"a"})"});
  // A command's answer goes out as a frame.
  const auto seq = f.c->websocket()->open_command("\"a\"", 0);
  f.c->answers().respond(seq, edri::http::ResponseHead{200, "application/json", 2}, {}, std::string_view("{}"));
  f.turn();
  const std::string frame = f.pair.read_all();
  REQUIRE(frame.size() > 2);
  CHECK(static_cast<unsigned char>(frame[0]) == 0x81);
  CHECK(frame.find(R"({"command":"a")") != std::string::npos);
}

TEST_CASE("connection keeps HTTP/1.1 when an upgrade follows unanswered requests", "[listener][connection]") {
  Fixture f;
  f.send("GET /a HTTP/1.1\r\nHost: x\r\n\r\n" + kUpgrade + "GET /b HTTP/1.1\r\nHost: x\r\n\r\n");
  f.turn();
  CHECK(f.rec.upgrades == std::vector<bool>{false});
  CHECK(f.c->websocket() == nullptr);
  // The upgrade request was answered as plain HTTP; what follows it is the
  // next request.
  CHECK(f.rec.targets == std::vector<std::string>{"/a", "/ws", "/b"});
}

TEST_CASE("connection given to Server-Sent Events drops input and ends with its client", "[listener][connection]") {
  Fixture f;
  f.send("GET /events HTTP/1.1\r\nHost: x\r\n\r\n");
  f.turn();
  REQUIRE(f.rec.seqs.size() == 1);
  CHECK(f.c->start_events(f.rec.seqs[0], {}) == AnswerSink::EventsCarrier::Connection);
  f.send("GET /not-a-request HTTP/1.1\r\nHost: x\r\n\r\n");
  f.turn();
  CHECK(f.rec.targets.size() == 1);  // dropped, not read as a request
  f.c->live_send(0, nullptr, std::make_shared<const std::string>("data: one\n\n"));
  f.turn();
  const std::string wire = f.pair.read_all();
  CHECK(wire.find("text/event-stream") != std::string::npos);
  CHECK(wire.find("data: one") != std::string::npos);
  // No idle limit applies while the client stays.
  f.c->apply_idle_limits(std::chrono::steady_clock::now() + std::chrono::hours(1));
  CHECK_FALSE(f.c->closed());
  f.pair.client.reset();
  f.turn();
  CHECK(f.c->closed());
}
