// Several instances joined over NATS (../shared/specs/cluster.md), checked
// from outside: a real nats-server on a free loopback port, and two or
// three real edri-server instances with different EDRI_DOMAINS.
#include <signal.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "support/http_client.hpp"
#include "support/nats_server.hpp"
#include "support/server_process.hpp"
#include "support/test_helpers.hpp"
#include "support/tls_client.hpp"
#include "support/ws_client.hpp"

using namespace edri::test;
using nlohmann::json;
using namespace std::chrono_literals;

namespace {

using Env = std::map<std::string, std::string>;

// One instance of the notes app (notes + audit plugins) running `domains`.
struct NotesInstance {
  TempDir dir;
  ServerProcess server;
  NotesInstance(const std::string& nats_url, const std::string& domains, Env env = {})
      : server({plugin_path("notes"), plugin_path("audit")}, with(nats_url, domains, dir, std::move(env))) {}
  static Env with(const std::string& url, const std::string& domains, const TempDir& dir, Env env) {
    env.emplace("EDRI_NATS_URL", url);
    env.emplace("EDRI_DOMAINS", domains);
    env.emplace("EDRI_NOTES_DB", (dir.path / "notes.db").string());
    return env;
  }
  std::uint16_t port() const { return server.port(); }
};

// One instance of the test app (domains test and other).
ServerProcess test_instance(const std::string& nats_url, const std::string& domains, Env env = {}) {
  env.emplace("EDRI_NATS_URL", nats_url);
  env.emplace("EDRI_DOMAINS", domains);
  return ServerProcess({test_plugin_path("test_app")}, env);
}

HttpResponse call(std::uint16_t port, const std::string& method, const std::string& path, const json& body = nullptr,
                  int timeout_ms = 5000) {
  HttpClient c(port, timeout_ms);
  return c.request(method, path, body.is_null() ? std::string() : body.dump(),
                   body.is_null() ? std::string() : "Content-Type: application/json\r\n");
}

json cluster_of(std::uint16_t port) {
  HttpClient c(port);
  return json::parse(c.get("/health").body).at("cluster");
}

// Until every one of `ports` is connected and sees `instances` instances.
bool joined(const std::vector<std::uint16_t>& ports, std::size_t instances) {
  return eventually(
      [&] {
        for (const auto p : ports) {
          const auto c = cluster_of(p);
          if (c["nats"] != "up" || c["instances"].size() != instances) return false;
        }
        return true;
      },
      10s);
}

// A counter of /metrics (0 when absent).
double metric(std::uint16_t port, const std::string& name) {
  HttpClient c(port);
  const auto text = c.get("/metrics").body;
  const auto at = text.find("\n" + name + " ");
  return at == std::string::npos ? 0 : std::stod(text.substr(at + name.size() + 2));
}

}  // namespace

TEST_CASE("a request through one instance is served by another, both ways", "[cluster]") {
  NatsServer nats;
  NotesInstance a(nats.url(), "audit"), b(nats.url(), "notes");
  REQUIRE(joined({a.port(), b.port()}, 2));
  const auto h = cluster_of(a.port());
  CHECK(h["instances"][0]["self"] == true);
  CHECK(h["instances"][0]["domains"] == json::array({"audit"}));
  CHECK(h["instances"][1]["domains"] == json::array({"notes"}));

  // Notes run on B only: A's request crosses, with status, headers, body.
  auto r = call(a.port(), "POST", "/notes", {{"title", "crossed"}, {"body", "from A"}});
  REQUIRE(r.status == 201);
  const auto note = json::parse(r.body);
  CHECK(r.header("location") == "/notes/" + std::to_string(note["id"].get<long>()));
  CHECK(r.header("content-type") == "application/json");
  r = call(b.port(), "GET", "/notes/" + std::to_string(note["id"].get<long>()));
  CHECK(r.status == 200);
  CHECK(json::parse(r.body) == note);
  // A problem crosses as it is.
  r = call(a.port(), "GET", "/notes/999999");
  CHECK(r.status == 404);
  CHECK(r.header("content-type") == "application/problem+json");
  // And the other way: audit runs on A only.
  CHECK(eventually([&] { return json::parse(call(b.port(), "GET", "/audit").body)["created"] == 1; }));
  CHECK(metric(a.port(), "edri_cluster_requests_sent_total") >= 2);
  CHECK(metric(b.port(), "edri_cluster_requests_served_total") >= 2);
  CHECK(metric(a.port(), "edri_cluster_nats_up") == 1);
  // Hellos come once a second: the ones after the first keep the domains.
  std::this_thread::sleep_for(1200ms);
  CHECK(cluster_of(a.port())["instances"][1]["domains"] == json::array({"notes"}));
  CHECK(cluster_of(b.port())["instances"][1]["domains"] == json::array({"audit"}));
}

TEST_CASE("a note created through B is pushed to a subscriber of A and counted by A's audit", "[cluster]") {
  NatsServer nats;
  NotesInstance a(nats.url(), "audit"), b(nats.url(), "notes");
  REQUIRE(joined({a.port(), b.port()}, 2));
  WsClient ws(a.port());
  CHECK(ws.command({{"command", "notes.subscribe"}}).contains("response"));
  auto r = call(b.port(), "POST", "/notes", {{"title", "on B"}, {"body", ""}});
  REQUIRE(r.status == 201);
  const auto m = ws.read_json();
  CHECK(m["command"] == "notes.changed");
  CHECK(m["event"]["op"] == "created");
  CHECK(m["event"]["note"] == json::parse(r.body));
  // Counted once: audit runs on A only, and B has no audit manager.
  CHECK(eventually([&] { return json::parse(call(a.port(), "GET", "/audit").body)["created"] == 1; }));
  // A WebSocket command on A is served on B, and its push comes back to A
  // (before or after the answer: they cross NATS on two subjects).
  ws.send(json{{"command", "notes.create"}, {"title", "over ws"}, {"body", ""}}.dump());
  auto one = ws.read_json(), two = ws.read_json();
  if (one.contains("event")) std::swap(one, two);
  CHECK(one["response"]["title"] == "over ws");
  CHECK(two["event"]["note"] == one["response"]);
  CHECK(eventually([&] { return json::parse(call(a.port(), "GET", "/audit").body)["created"] == 2; }));
  CHECK(ws.quiet_for(200));
  // The audit stream, published by A's audit, is the same stream on B.
  WsClient on_b(b.port());
  on_b.send(json{{"command", "stream.subscribe"}, {"stream", "audit"}}.dump());
  json audit = json::object();
  while (audit.value("created", 0) != 2) {
    const auto f = on_b.read_json();
    if (f.contains("state")) audit = f["state"];
    if (f.contains("patch")) audit.merge_patch(f["patch"]);
  }
  CHECK(audit["created"] == 2);
}

TEST_CASE("a notification reaches each subscribed domain once per app, replicas on two instances", "[cluster]") {
  NatsServer nats;
  // Audit runs on A and on C: each creation is counted by one of them.
  NotesInstance a(nats.url(), "audit"), b(nats.url(), "notes"), c(nats.url(), "audit");
  REQUIRE(joined({a.port(), b.port(), c.port()}, 3));
  for (int i = 0; i < 10; ++i) REQUIRE(call(b.port(), "POST", "/notes", {{"title", "n"}, {"body", ""}}).status == 201);
  // Each /audit request is served by A's or C's own manager (local first).
  auto count = [](std::uint16_t port) { return json::parse(call(port, "GET", "/audit").body)["created"].get<int>(); };
  CHECK(eventually([&] { return count(a.port()) + count(c.port()) == 10; }));
  CHECK(count(a.port()) + count(c.port()) == 10);
}

TEST_CASE("manager-to-manager requests cross, and a remote deadline is the asker's", "[cluster]") {
  NatsServer nats;
  auto a = test_instance(nats.url(), "test", {{"EDRI_API_RESPONSE_TIMEOUT", "1"}});
  auto b = test_instance(nats.url(), "other", {{"EDRI_API_RESPONSE_TIMEOUT", "5"}});
  REQUIRE(joined({a.port(), b.port()}, 2));
  // test.ask (on A) asks other.pid, which runs on B.
  auto r = call(a.port(), "GET", "/ask");
  REQUIRE(r.status == 200);
  const auto j = json::parse(r.body);
  CHECK(j["status"] == 200);
  CHECK(j["other"] != j["asked_from"]);
  // test.sleep runs on A, whose own requests have 1 s; asked through B,
  // it carries B's deadline (5 s) and is served past A's 1 s.
  r = call(b.port(), "GET", "/sleep/1500", nullptr, 10000);
  CHECK(r.status == 200);
}

TEST_CASE("a manager answers another instance straight to its switch and the router is told", "[cluster]") {
  NatsServer nats;
  auto a = test_instance(nats.url(), "other");
  auto b = test_instance(nats.url(), "test");
  REQUIRE(joined({a.port(), b.port()}, 2));
  for (int i = 0; i < 30; ++i) REQUIRE(call(a.port(), "GET", "/hello/n" + std::to_string(i)).status == 200);
  // B's router heard that all 30 were answered: with the manager killed,
  // none counts as taken and unanswered.
  REQUIRE(::kill(b.child("manager test"), SIGKILL) == 0);
  // Named by its domain, as ps and /health name it.
  const std::string died = "manager test died: 0 requests it had taken answered 503";
  CHECK(eventually([&] { return b.log().find("requests it had taken answered 503") != std::string::npos; }));
  CHECK(b.log().find(died) != std::string::npos);
  CHECK(eventually([&] { return call(a.port(), "GET", "/hello/again").status == 200; }));
}

TEST_CASE("what is left of the asker's deadline crosses with the request", "[cluster][alone]") {
  NatsServer nats;
  auto a = test_instance(nats.url(), "other", {{"EDRI_API_RESPONSE_TIMEOUT", "1"}});
  auto b = test_instance(nats.url(), "test", {{"EDRI_API_RESPONSE_TIMEOUT", "30"}});
  REQUIRE(joined({a.port(), b.port()}, 2));
  const auto t0 = std::chrono::steady_clock::now();
  const auto r = call(a.port(), "GET", "/sleep/3000", nullptr, 10000);
  const auto took = std::chrono::steady_clock::now() - t0;
  CHECK(r.status == 504);
  CHECK(took >= 900ms);
  CHECK(took < 2500ms);
  // The switch counts it on its own deadline, which may fire just after
  // the broker's 504 went out.
  CHECK(eventually([&] { return metric(a.port(), "edri_cluster_requests_expired_total") >= 1; }));
  // B's late answer is dropped; once its handler is free it serves again.
  std::this_thread::sleep_for(2500ms);
  CHECK(call(a.port(), "GET", "/hello/x").status == 200);
}

TEST_CASE("bodies cross whole, through the blob area on both sides, or are refused with a clear error", "[cluster]") {
  NatsServer nats;
  Env small{{"EDRI_BLOB_THRESHOLD", "4096"}, {"EDRI_NATS_MAX_MESSAGE", "300000"}};
  auto a = test_instance(nats.url(), "other", small);
  auto b = test_instance(nats.url(), "test", small);
  REQUIRE(joined({a.port(), b.port()}, 2));
  std::string big(200000, 'x');
  for (std::size_t i = 0; i < big.size(); i += 7) big[i] = static_cast<char>('a' + i % 26);
  HttpClient c(a.port());
  auto r = c.request("POST", "/echo", big, "Content-Type: application/octet-stream\r\n");
  CHECK(r.status == 200);
  CHECK(r.body == big);
  r = c.get("/bytes/250000");
  CHECK(r.status == 200);
  CHECK(r.body.size() == 250000);
  // Past EDRI_NATS_MAX_MESSAGE: a request is 413, an answer 502.
  r = c.request("POST", "/echo", std::string(400000, 'y'), "Content-Type: application/octet-stream\r\n");
  CHECK(r.status == 413);
  CHECK(r.body.find("EDRI_NATS_MAX_MESSAGE") != std::string::npos);
  r = c.get("/bytes/400000");
  CHECK(r.status == 502);
  CHECK(r.body.find("EDRI_NATS_MAX_MESSAGE") != std::string::npos);
  CHECK(c.get("/hello/after").status == 200);
}

TEST_CASE("NATS down at start: local domains served, remote ones 503 at once, served once NATS comes",
          "[cluster][alone]") {
  NatsServer nats;
  nats.stop();
  NotesInstance a(nats.url(), "audit");
  CHECK(cluster_of(a.port())["nats"] == "down");
  const auto t0 = std::chrono::steady_clock::now();
  auto r = call(a.port(), "GET", "/notes/1");
  CHECK(r.status == 503);
  CHECK(std::chrono::steady_clock::now() - t0 < 500ms);
  CHECK(r.body.find("NATS") != std::string::npos);
  CHECK(metric(a.port(), "edri_cluster_requests_refused_total") >= 1);
  CHECK(metric(a.port(), "edri_cluster_nats_up") == 0);
  CHECK(call(a.port(), "GET", "/audit").status == 200);
  nats.start();
  NotesInstance b(nats.url(), "notes");
  REQUIRE(joined({a.port(), b.port()}, 2));
  CHECK(call(a.port(), "POST", "/notes", {{"title", "t"}, {"body", ""}}).status == 201);
}

TEST_CASE("NATS stopped and restarted under a write load: every 201 is there, nothing hangs", "[cluster][alone]") {
  NatsServer nats;
  NotesInstance a(nats.url(), "audit"), b(nats.url(), "notes");
  REQUIRE(joined({a.port(), b.port()}, 2));
  std::atomic<bool> stop{false};
  std::mutex m;
  std::vector<long> created;
  std::atomic<int> refused{0}, other{0};
  std::vector<std::thread> writers;
  for (int w = 0; w < 3; ++w)
    writers.emplace_back([&] {
      while (!stop) {
        try {
          // Every request is answered well within this (no hang).
          const auto r = call(a.port(), "POST", "/notes", {{"title", "load"}, {"body", ""}}, 8000);
          if (r.status == 201) {
            std::lock_guard lock(m);
            created.push_back(json::parse(r.body)["id"].get<long>());
          } else if (r.status == 503) {
            ++refused;
          } else {
            ++other;
          }
        } catch (const std::exception&) {
          ++other;
        }
      }
    });
  std::this_thread::sleep_for(500ms);
  nats.stop(true);
  std::this_thread::sleep_for(800ms);
  nats.start();
  const auto back = std::chrono::steady_clock::now();
  // Served again within 2 s of NATS coming back.
  std::size_t before;
  {
    std::lock_guard lock(m);
    before = created.size();
  }
  CHECK(eventually(
      [&] {
        std::lock_guard lock(m);
        return created.size() > before + 5;
      },
      4s));
  CHECK(std::chrono::steady_clock::now() - back < 2500ms);
  stop = true;
  for (auto& t : writers) t.join();
  CHECK(refused > 0);
  CHECK(other == 0);
  for (const long id : created) CHECK(call(b.port(), "GET", "/notes/" + std::to_string(id)).status == 200);
  CHECK(metric(a.port(), "edri_cluster_reconnects_total") >= 1);
}

TEST_CASE("an instance killed with SIGKILL: another running its domain takes over", "[cluster]") {
  NatsServer nats;
  // A request NATS handed to B1 just before it died is answered 504 at
  // A's deadline: 3 s here.
  NotesInstance a(nats.url(), "audit", {{"EDRI_API_RESPONSE_TIMEOUT", "3"}});
  // (Each with its own database: the notes example keeps its notes in one
  // SQLite file per instance.)
  auto b1 = std::make_unique<NotesInstance>(nats.url(), "notes");
  NotesInstance b2(nats.url(), "notes");
  REQUIRE(joined({a.port(), b1->port(), b2.port()}, 3));
  for (int i = 0; i < 6; ++i) REQUIRE(call(a.port(), "POST", "/notes", {{"title", "x"}, {"body", ""}}).status == 201);
  // The whole instance at once, as when its host dies.
  std::vector<pid_t> all{b1->server.pid()};
  for (const auto& c : b1->server.children()) all.push_back(c.pid);
  for (const pid_t p : all) ::kill(p, SIGKILL);
  // Every request is answered; within a moment all by B2.
  int ok = 0;
  for (int i = 0; i < 20; ++i) {
    const auto r = call(a.port(), "POST", "/notes", {{"title", "y"}, {"body", ""}}, 8000);
    CHECK((r.status == 201 || r.status == 503 || r.status == 504));
    ok += r.status == 201;
  }
  CHECK(ok >= 18);
  CHECK(eventually([&] { return cluster_of(a.port())["instances"].size() == 2; }));
  b1.reset();  // reaps what is left of it
}

TEST_CASE("two apps with different EDRI_CLUSTER on one NATS never see each other", "[cluster]") {
  NatsServer nats;
  NotesInstance a(nats.url(), "audit", {{"EDRI_CLUSTER", "one"}});
  NotesInstance b(nats.url(), "notes", {{"EDRI_CLUSTER", "two"}});
  REQUIRE(joined({a.port(), b.port()}, 1));
  const auto r = call(a.port(), "GET", "/notes/1");
  CHECK(r.status == 503);
  CHECK(r.body.find("no instance runs domain 'notes'") != std::string::npos);
  CHECK(call(b.port(), "POST", "/notes", {{"title", "t"}, {"body", ""}}).status == 201);
  CHECK(json::parse(call(a.port(), "GET", "/audit").body)["created"] == 0);
}

TEST_CASE("NATS credentials and TLS come from EDRI_NATS_* settings", "[cluster]") {
  SECTION("user and password") {
    NatsServer nats({"--user", "edri", "--pass", "s3cret"});
    NotesInstance a(nats.url(), "audit", {{"EDRI_NATS_USER", "edri"}, {"EDRI_NATS_PASSWORD", "s3cret"}});
    NotesInstance b(nats.url(), "notes", {{"EDRI_NATS_USER", "edri"}, {"EDRI_NATS_PASSWORD", "wrong"}});
    CHECK(eventually([&] { return cluster_of(a.port())["nats"] == "up"; }));
    CHECK(cluster_of(b.port())["nats"] == "down");
    CHECK(call(b.port(), "GET", "/audit").status == 503);
    const auto shown = run_server_to_exit({"--print-config"}, {{"EDRI_NATS_PASSWORD", "s3cret"}});
    CHECK(shown.out.find("EDRI_NATS_PASSWORD=(set)") != std::string::npos);
    CHECK(shown.out.find("s3cret") == std::string::npos);
  }
  SECTION("token") {
    NatsServer nats({"--auth", "t0ken"});
    NotesInstance a(nats.url(), "audit", {{"EDRI_NATS_TOKEN", "t0ken"}});
    NotesInstance b(nats.url(), "notes", {{"EDRI_NATS_TOKEN", "t0ken"}});
    REQUIRE(joined({a.port(), b.port()}, 2));
    CHECK(call(a.port(), "GET", "/notes/1").status == 404);
  }
  SECTION("TLS, the server's certificate checked against EDRI_NATS_CA") {
    SelfSignedCertificate cert;
    NatsServer nats({"--tls", "--tlscert", cert.certificate, "--tlskey", cert.key});
    NotesInstance a(nats.url("tls"), "audit", {{"EDRI_NATS_CA", cert.certificate}});
    NotesInstance b(nats.url(), "notes", {{"EDRI_NATS_TLS", "1"}, {"EDRI_NATS_CA", cert.certificate}});
    REQUIRE(joined({a.port(), b.port()}, 2));
    CHECK(call(a.port(), "GET", "/notes/1").status == 404);
    // A CA that did not sign the server's certificate: never connected.
    SelfSignedCertificate other;
    NotesInstance c(nats.url("tls"), "notes", {{"EDRI_NATS_CA", other.certificate}});
    CHECK(cluster_of(c.port())["nats"] == "down");
    CHECK_FALSE(eventually([&] { return cluster_of(c.port())["nats"] == "up"; }, 1500ms));
  }
  SECTION("TLS with a client certificate, for a server that verifies clients") {
    SelfSignedCertificate cert;
    NatsServer nats(
        {"--tlsverify", "--tlscert", cert.certificate, "--tlskey", cert.key, "--tlscacert", cert.certificate});
    const Env tls{{"EDRI_NATS_TLS", "1"},
                  {"EDRI_NATS_CA", cert.certificate},
                  {"EDRI_NATS_CERTIFICATE", cert.certificate},
                  {"EDRI_NATS_KEY", cert.key}};
    NotesInstance a(nats.url(), "audit", tls), b(nats.url(), "notes", tls);
    REQUIRE(joined({a.port(), b.port()}, 2));
    CHECK(call(b.port(), "GET", "/audit").status == 200);
    // Without one, the server refuses the connection.
    NotesInstance c(nats.url(), "notes", {{"EDRI_NATS_TLS", "1"}, {"EDRI_NATS_CA", cert.certificate}});
    CHECK_FALSE(eventually([&] { return cluster_of(c.port())["nats"] == "up"; }, 1500ms));
  }
}

TEST_CASE("cluster settings that cannot work stop start-up, naming them", "[cluster]") {
  const auto plugins = plugin_path("notes") + ":" + plugin_path("audit");
  auto r = run_server_to_exit({}, {{"EDRI_PLUGINS", plugins}, {"EDRI_DOMAINS", "notes"}});
  CHECK(r.status != 0);
  CHECK(r.err.find("EDRI_DOMAINS is set but EDRI_NATS_URL is not") != std::string::npos);
  r = run_server_to_exit(
      {}, {{"EDRI_PLUGINS", plugins}, {"EDRI_NATS_URL", "nats://127.0.0.1:1"}, {"EDRI_DOMAINS", "notes,nosuch"}});
  CHECK(r.status != 0);
  CHECK(r.err.find("EDRI_DOMAINS names 'nosuch'") != std::string::npos);
  r = run_server_to_exit({}, {{"EDRI_PLUGINS", plugins}, {"EDRI_CLUSTER", "a.b"}});
  CHECK(r.status != 0);
  CHECK(r.err.find("EDRI_CLUSTER") != std::string::npos);
  // What the NATS client refuses, before any process starts.
  r = run_server_to_exit({}, {{"EDRI_PLUGINS", plugins}, {"EDRI_NATS_URL", "nats://127.0.0.1:notaport"}});
  CHECK(r.status != 0);
  CHECK(r.err.find("EDRI_NATS_URL") != std::string::npos);
  TempDir dir;
  dir.write("junk.pem", "not a certificate");
  r = run_server_to_exit({}, {{"EDRI_PLUGINS", plugins},
                              {"EDRI_NATS_URL", "nats://127.0.0.1:4222"},
                              {"EDRI_NATS_CA", (dir.path / "junk.pem").string()}});
  CHECK(r.status != 0);
  CHECK(r.err.find("EDRI_NATS_CA") != std::string::npos);
}
