// Connection over a socket pair, in-process, with the listener around it
// replaced by recorders (connection_owner.hpp's tables): requests read,
// pipelined answers given out of order leave in order, a full pipeline stops
// reading until answers go, a malformed request is refused, the preface
// chooses HTTP/2, a slow head times out, a refusal lingers, a client that goes abandons what it
// waited for.
#include <sys/socket.h>

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "listener/connection.hpp"
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
  Connection* dirty = nullptr;
  int closed_count = 0;

  void request(Connection& c, HttpRequest& req) override {
    targets.push_back(req.target);
    seqs.push_back(c.open_slot(req.keep_alive, false, false, {}));
  }
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
  // One turn of the listener's loop: events, then the flush.
  void turn() {
    loop.poll(0);
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
