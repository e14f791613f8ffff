// Hostile input on NATS (issue 35): whoever can publish on the app's
// subjects, or write to its stream bucket, sends what no instance would.
// Real edri-server instances and a real nats-server; the hostile messages
// go in as a bare NATS client would send them (the protocol's text
// commands). No switch may die of them, the real instances keep serving
// each other, and the log says so in a few lines, not one per message.
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "support/http_client.hpp"
#include "support/nats_server.hpp"
#include "support/server_process.hpp"
#include "support/test_helpers.hpp"

using namespace edri::test;
using nlohmann::json;
using namespace std::chrono_literals;

namespace {

std::string nested(std::size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }

int status_of(std::uint16_t port, const std::string& method, const std::string& path, const json& body = nullptr) {
  HttpClient c(port, 2000);
  return c
      .request(method, path, body.is_null() ? std::string() : body.dump(),
               body.is_null() ? std::string() : "Content-Type: application/json\r\n")
      .status;
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

std::size_t instances_seen(std::uint16_t port) {
  HttpClient c(port);
  return json::parse(c.get("/health").body).at("cluster").at("instances").size();
}

// Two test_app instances, A running "other" and B "test", joined: each
// serves the other's requests (GET /hello/x is B's, GET /other/pid A's).
struct TwoInstances {
  NatsServer nats;
  ServerProcess a{{test_plugin_path("test_app")}, {{"EDRI_NATS_URL", nats.url()}, {"EDRI_DOMAINS", "other"}}};
  ServerProcess b{{test_plugin_path("test_app")}, {{"EDRI_NATS_URL", nats.url()}, {"EDRI_DOMAINS", "test"}}};
  pid_t switch_a = 0, switch_b = 0;
  TwoInstances() {
    REQUIRE(eventually([&] { return instances_seen(a.port()) == 2 && instances_seen(b.port()) == 2; }, 10s));
    switch_a = a.child("switch");
    switch_b = b.child("switch");
    REQUIRE(switch_a > 0);
    REQUIRE(switch_b > 0);
  }
  bool serve_each_other() const {
    return status_of(a.port(), "GET", "/hello/x") == 200 && status_of(b.port(), "GET", "/other/pid") == 200;
  }
  // Neither switch died (the supervisor would have started another).
  bool switches_alive() const { return a.child("switch") == switch_a && b.child("switch") == switch_b; }
};

// Two bench_app instances whose streams cross in JetStream, the bucket open.
struct StreamInstances {
  NatsServer nats;
  ServerProcess a{{plugin_path("bench_app")}, {{"EDRI_NATS_URL", nats.url()}}};
  ServerProcess b{{plugin_path("bench_app")}, {{"EDRI_NATS_URL", nats.url()}}};
  StreamInstances() {
    REQUIRE(eventually([&] { return publish(a.port(), "ready", {{"a", 1}}).status == 200; }, 10s));
    REQUIRE(eventually([&] { return publish(b.port(), "ready", {{"b", 1}}).status == 200; }, 10s));
  }
  static HttpResponse publish(std::uint16_t port, const std::string& name, const json& patch) {
    HttpClient c(port, 5000);
    return c.request("POST", "/stream/" + name, patch.dump(), "Content-Type: application/json\r\n");
  }
  static json read(std::uint16_t port, const std::string& name) {
    HttpClient c(port, 5000);
    const auto r = c.get("/stream/" + name);
    INFO(r.body);
    REQUIRE(r.status == 200);
    return json::parse(r.body);
  }
};

}  // namespace

TEST_CASE("a hello nested 100,000 levels deep is refused, and no switch dies of it", "[cluster][hostile]") {
  TwoInstances two;
  // 200 KB of brackets, bare and as a field of a hello that looks right.
  raw_publish(two.nats.port(),
              {RawNatsMessage{"edri.hello", "", nested(100000)},
               RawNatsMessage{"edri.hello", "", R"({"id":"deep","domains":[],"x":)" + nested(100000) + "}"}});
  CHECK(eventually([&] { return two.a.log().find("a hello from NATS was refused") != std::string::npos; }));
  CHECK(two.serve_each_other());
  CHECK(two.switches_alive());
  CHECK(instances_seen(two.a.port()) == 2);
}

TEST_CASE("10,000 made-up instances in a burst of hellos leave the real ones serving each other",
          "[cluster][hostile]") {
  TwoInstances two;
  std::vector<RawNatsMessage> hellos;
  for (int i = 0; i < 10000; ++i)
    hellos.push_back(RawNatsMessage{
        "edri.hello", "", json{{"id", "fake" + std::to_string(i)}, {"host", "x"}, {"pid", i}, {"domains", {}}}.dump()});
  raw_publish(two.nats.port(), hellos);
  // Served within a few seconds, and from then on while the made-up
  // instances are still remembered (3 s without a hello).
  REQUIRE(eventually([&] { return two.serve_each_other(); }, 3s));
  const auto until = std::chrono::steady_clock::now() + 3s;
  int served = 0;
  while (std::chrono::steady_clock::now() < until) {
    REQUIRE(two.serve_each_other());
    ++served;
  }
  CHECK(served > 5);
  CHECK(two.switches_alive());
  // The made-up ones are forgotten as any silent instance is.
  CHECK(eventually([&] { return instances_seen(two.a.port()) == 2 && instances_seen(two.b.port()) == 2; }));
}

TEST_CASE("garbage from NATS by the thousand is logged a line a second at most, with a count", "[cluster][hostile]") {
  TwoInstances two;
  std::vector<RawNatsMessage> garbage;
  for (int i = 0; i < 2000; ++i) {
    garbage.push_back(RawNatsMessage{"edri.req.test", "edri.rep.nobody.test." + std::to_string(i), "garbage"});
    garbage.push_back(RawNatsMessage{"edri.hello", "", "not a hello"});
  }
  raw_publish(two.nats.port(), garbage);
  // The first of each kind is logged at once, the rest counted and said
  // once the second since has passed.
  CHECK(eventually([&] {
    const auto log = two.b.log();
    return log.find("more malformed requests dropped") != std::string::npos &&
           log.find("more hellos refused") != std::string::npos;
  }));
  const auto log = two.b.log();
  CHECK(count(log, "dropping a malformed request from NATS") <= 2);
  CHECK(count(log, "a hello from NATS was refused") <= 2);
  CHECK(two.serve_each_other());
  CHECK(two.switches_alive());
}

TEST_CASE("a stream value nested 100,000 deep or over EDRI_STREAM_MAX_BYTES in the bucket is skipped",
          "[cluster][hostile][streams]") {
  StreamInstances two;
  const pid_t switch_a = two.a.child("switch"), switch_b = two.b.child("switch");
  REQUIRE(StreamInstances::publish(two.a.port(), "board", {{"x", 1}}).status == 200);
  // A revision of the right shape whose state nests 100,000 levels deep.
  raw_publish(two.nats.port(), "$KV.edri_streams.board",
              R"({"revision":2,"from":1,"ts":0,"patches":[{}],"state":{"deep":)" + nested(100000) + "}}");
  auto r = StreamInstances::publish(two.a.port(), "board", {{"y", 2}});
  INFO(r.body);
  REQUIRE(r.status == 200);
  CHECK(json::parse(r.body)["revision"] == 2);
  // A state of 900 KB, past EDRI_STREAM_MAX_BYTES (256 KiB).
  raw_publish(two.nats.port(), "$KV.edri_streams.board",
              json{{"revision", 3},
                   {"from", 2},
                   {"ts", 0},
                   {"patches", {json::object()}},
                   {"state", {{"big", std::string(900000, 'b')}}}}
                  .dump());
  r = StreamInstances::publish(two.b.port(), "board", {{"z", 3}});
  INFO(r.body);
  REQUIRE(r.status == 200);
  CHECK(json::parse(r.body)["revision"] == 3);
  const json want{{"x", 1}, {"y", 2}, {"z", 3}};
  CHECK(eventually([&] { return StreamInstances::read(two.a.port(), "board")["state"] == want; }));
  CHECK(StreamInstances::read(two.b.port(), "board")["state"] == want);
  CHECK(two.a.child("switch") == switch_a);
  CHECK(two.b.child("switch") == switch_b);
  // The first skipped with a line; the second with one too, or (within a
  // second of the first) counted in the next.
  const auto logged = [&](const std::string& line, const std::string& or_else) {
    return eventually([&] {
      const auto log = two.a.log() + two.b.log();
      return log.find(line) != std::string::npos || (!or_else.empty() && log.find(or_else) != std::string::npos);
    });
  };
  CHECK(logged("was skipped: nesting deeper than", ""));
  CHECK(logged("was skipped: larger than EDRI_STREAM_MAX_BYTES", "more values in the stream bucket were skipped"));
}
