// Live streams across instances joined over NATS (docs/decisions/0020):
// two real edri-server instances of bench_app and a real nats-server with
// JetStream. One stream has one order of revisions whichever instance
// publishes, and every subscriber of every instance converges on it.
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "support/http_client.hpp"
#include "support/nats_server.hpp"
#include "support/server_process.hpp"
#include "support/stream_holder.hpp"
#include "support/test_helpers.hpp"
#include "support/ws_client.hpp"

using namespace edri::test;
using nlohmann::json;
using namespace std::chrono_literals;

namespace {

ServerProcess bench_instance(const std::string& nats_url) {
  return ServerProcess({plugin_path("bench_app")}, {{"EDRI_NATS_URL", nats_url}});
}

HttpResponse publish(std::uint16_t port, const std::string& name, const json& patch) {
  HttpClient c(port);
  return c.request("POST", "/stream/" + name, patch.dump(), "Content-Type: application/json\r\n");
}

json read_stream(std::uint16_t port, const std::string& name) {
  const auto r = http_get(port, "/stream/" + name);
  INFO(r.body);
  REQUIRE(r.status == 200);
  return json::parse(r.body);
}

// Until both instances have the stream bucket open: a publish is taken.
bool streams_ready(std::uint16_t a, std::uint16_t b) {
  return eventually(
             [&] {
               return publish(a, "ready", {{"a", 1}}).status == 200;
             },
             10s) &&
         eventually(
             [&] {
               return publish(b, "ready", {{"b", 1}}).status == 200;
             },
             10s);
}

// "a7": a field of writer `w`. (Built by append: GCC 12 warns falsely on
// "a" + std::to_string(i).)
std::string field(char w, int i) {
  std::string f(1, w);
  f.append(std::to_string(i));
  return f;
}

// A nats-server with JetStream and two bench_app instances joined by it,
// both with the stream bucket open.
struct Joined {
  NatsServer nats;
  ServerProcess a{bench_instance(nats.url())}, b{bench_instance(nats.url())};
  Joined() { REQUIRE(streams_ready(a.port(), b.port())); }
};

json subscribe(const std::string& name) { return {{"command", "stream.subscribe"}, {"stream", name}}; }

}  // namespace

TEST_CASE("a live stream published through two instances has one order, and every subscriber converges",
          "[cluster][streams]") {
  Joined joined;
  auto& [nats, a, b] = joined;
  WsClient on_a(a.port()), on_b(b.port());
  Holder held_a, held_b;
  on_a.send(subscribe("room:1").dump());
  on_b.send(subscribe("room:1").dump());
  read_until(on_a, held_a, {{"room:1", 0}});
  read_until(on_b, held_b, {{"room:1", 0}});

  // Two writers through A and B, and a burst inside B, all at once.
  constexpr int kEach = 30, kBurst = 150;
  std::vector<std::uint64_t> revisions[2];
  auto writer = [&](int w, std::uint16_t port) {
    for (int i = 0; i < kEach; ++i) {
      const auto r = publish(port, "room:1", {{field(w ? 'b' : 'a', i), i}});
      if (r.status == 200) revisions[w].push_back(json::parse(r.body)["revision"]);
    }
  };
  std::thread through_a(writer, 0, a.port()), through_b(writer, 1, b.port());
  HttpClient burst(b.port());
  const auto r =
      burst.request("POST", "/stream-burst",
                    json{{"streams", {"room:1"}}, {"updates", kBurst}, {"interval_ms", 0}, {"fields", 4}}.dump(),
                    "Content-Type: application/json\r\n");
  through_a.join();
  through_b.join();
  INFO(r.body);
  REQUIRE(r.status == 200);
  REQUIRE(revisions[0].size() == kEach);
  REQUIRE(revisions[1].size() == kEach);

  // Each publish got a revision of its own: none twice, none skipped.
  constexpr std::uint64_t kTotal = 2 * kEach + kBurst;
  std::set<std::uint64_t> all(revisions[0].begin(), revisions[0].end());
  all.insert(revisions[1].begin(), revisions[1].end());
  CHECK(all.size() == 2 * kEach);
  CHECK(*all.rbegin() <= kTotal);
  const auto on_a_now = read_stream(a.port(), "room:1");
  CHECK(on_a_now["revision"] == kTotal);
  for (int i = 0; i < kEach; ++i) {
    CHECK(on_a_now["state"][field('a', i)] == i);
    CHECK(on_a_now["state"][field('b', i)] == i);
  }
  CHECK(read_stream(b.port(), "room:1") == on_a_now);
  // Subscribers on both instances hold exactly that, through contiguous
  // patch frames (Holder fails on any gap).
  read_until(on_a, held_a, {{"room:1", kTotal}});
  read_until(on_b, held_b, {{"room:1", kTotal}});
  CHECK(held_a.views["room:1"].state == on_a_now["state"]);
  CHECK(held_b.views["room:1"].state == on_a_now["state"]);
  // Contiguous from the first snapshot, or (a subscriber further behind
  // than the server keeps, streams.md) from a fresh one: here only where
  // that instance's broker saw revisions come as one state, its watch of
  // the bucket (which keeps the newest revision only) having fallen behind.
  // One fresh snapshot per gap: on a loaded machine the watch falls
  // behind more than once.
  for (auto [held, instance] : {std::pair{&held_a, &a}, std::pair{&held_b, &b}}) {
    const auto log = instance->log();
    int gaps = 0;
    for (auto at = log.find("came as one state"); at != std::string::npos; at = log.find("came as one state", at + 1))
      ++gaps;
    INFO("the broker saw gaps: " << gaps);
    CHECK(held->views["room:1"].snapshots == 1 + gaps);
  }
}

TEST_CASE("a broker restarted on one instance learns every stream again, followed or not", "[cluster][streams]") {
  Joined joined;
  auto& [nats, a, b] = joined;
  for (int i = 1; i <= 5; ++i) REQUIRE(publish(a.port(), "quiet", {{"n", i}}).status == 200);
  // Nobody on B follows "quiet": only JetStream can tell B's next broker.
  const pid_t victim = b.child("broker");
  REQUIRE(victim > 0);
  ::kill(victim, SIGKILL);
  REQUIRE(eventually([&] {
    const pid_t now = b.child("broker");
    return now > 0 && now != victim;
  }));
  WsClient ws(b.port());
  Holder held;
  ws.send(subscribe("quiet").dump());
  REQUIRE(eventually([&] {
    held.apply(ws.read_json());
    if (held.views["quiet"].revision == 5) return true;
    // A snapshot from before the replay: subscribe again.
    ws.send(json{{"command", "stream.unsubscribe"}, {"stream", "quiet"}}.dump());
    ws.send(subscribe("quiet").dump());
    return false;
  }));
  CHECK(held.views["quiet"].state == json{{"n", 5}});
  REQUIRE(publish(a.port(), "quiet", {{"n", 6}}).status == 200);
  read_until(ws, held, {{"quiet", 6}});
  CHECK(held.views["quiet"].state == json{{"n", 6}});
}

TEST_CASE("without JetStream on the NATS server a publish is answered 503 at once, naming it",
          "[cluster][streams][alone]") {
  NatsServer nats({}, false);
  auto a = bench_instance(nats.url());
  // Requests that cross nothing are untouched.
  CHECK(http_get(a.port(), "/noop").status == 200);
  HttpResponse r;
  REQUIRE(eventually([&] {
    r = publish(a.port(), "s", {{"x", 1}});
    return r.body.find("nats-server -js") != std::string::npos;
  }));
  CHECK(r.status == 503);
  CHECK(r.header("content-type") == "application/problem+json");
  const auto started = std::chrono::steady_clock::now();
  CHECK(http_get(a.port(), "/stream/s").status == 503);
  CHECK(std::chrono::steady_clock::now() - started < 1500ms);
}

TEST_CASE("a value in the bucket that is not edri's is skipped, and the next publish writes over it",
          "[cluster][streams]") {
  Joined joined;
  auto& [nats, a, b] = joined;
  const pid_t switch_a = a.child("switch");
  REQUIRE(publish(a.port(), "board", {{"x", 1}}).status == 200);
  // Written by someone else with access to the bucket: not JSON, then
  // JSON of the wrong shape (strings where numbers belong).
  raw_publish(nats.port(), "$KV.edri_streams.board", "not json");
  raw_publish(nats.port(), "$KV.edri_streams.board", R"({"revision":"9","from":1,"ts":0,"patches":[{}],"state":{}})");
  raw_publish(nats.port(), "$KV.edri_streams.board", R"({"revision":9,"from":"x","ts":0,"patches":[],"state":{}})");
  auto r = publish(b.port(), "board", {{"y", 2}});
  INFO(r.body);
  REQUIRE(r.status == 200);
  CHECK(json::parse(r.body)["revision"] == 2);
  CHECK(eventually([&] { return read_stream(a.port(), "board")["revision"] == 2; }));
  CHECK(read_stream(a.port(), "board")["state"] == json{{"x", 1}, {"y", 2}});
  CHECK(a.child("switch") == switch_a);  // nothing died of it
}
