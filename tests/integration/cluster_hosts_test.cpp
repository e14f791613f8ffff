// Instances on hosts of their own: each edri instance in a network
// namespace of its own, reaching nats-server over a veth link, as hosts do
// over a network (tests/support/network_host.hpp). Loopback cannot show
// what this does: a host cut off from NATS without either side closing a
// connection, as when a cable is pulled, and joined again.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <functional>
#include <map>
#include <string>

#include "support/http_client.hpp"
#include "support/nats_server.hpp"
#include "support/network_host.hpp"
#include "support/server_process.hpp"
#include "support/test_helpers.hpp"

using namespace edri::test;
using nlohmann::json;
using namespace std::chrono_literals;

namespace {

// The notes app (notes + audit) on `host`, running `domains`.
struct NotesOnHost {
  const NetworkHost& host;
  TempDir dir;
  ServerProcess server;
  NotesOnHost(const NetworkHost& h, const std::string& nats_url, const std::string& domains)
      : host(h),
        server({plugin_path("notes"), plugin_path("audit")},
               {{"EDRI_HOST", h.address()},
                {"EDRI_NATS_URL", nats_url},
                {"EDRI_DOMAINS", domains},
                {"EDRI_API_RESPONSE_TIMEOUT", "3"},
                {"EDRI_NOTES_DB", (dir.path / "notes.db").string()}},
               h.runner()) {}

  HttpResponse call(const std::string& method, const std::string& path, const json& body = nullptr) const {
    HttpClient c(host.address(), server.port(), 8000);
    return c.request(method, path, body.is_null() ? std::string() : body.dump(),
                     body.is_null() ? std::string() : "Content-Type: application/json\r\n");
  }
  json cluster() const { return json::parse(call("GET", "/health").body).at("cluster"); }
  bool sees(const char* nats, std::size_t instances) const {
    const auto c = cluster();
    return c["nats"] == nats && c["instances"].size() == instances;
  }
};

// The status of `call`, and whether it came at once (well before the 3 s
// deadline), not at the deadline.
bool refused_at_once(const std::function<HttpResponse()>& call) {
  const auto t0 = std::chrono::steady_clock::now();
  const auto r = call();
  return r.status == 503 && std::chrono::steady_clock::now() - t0 < 1s;
}

}  // namespace

TEST_CASE("instances on hosts of their own: requests cross, a host cut off from NATS is refused at once, then back",
          "[cluster][hosts]") {
  if (!NetworkHost::available()) {
    WARN("network namespaces need root and iproute2: the instances-on-hosts test did not run here");
    return;
  }
  NetworkHost host_a(0), host_b(1);
  // NATS on this (the root) side, listening on host A's link only; host B
  // reaches it through its own link.
  NatsServer nats({}, true, host_a.peer());
  NotesOnHost a(host_a, nats.url(), "audit"), b(host_b, nats.url(), "notes");
  REQUIRE(eventually([&] { return a.sees("up", 2) && b.sees("up", 2); }, 10s));

  // Notes run on host B only: a note created through A crosses hosts.
  auto r = a.call("POST", "/notes", {{"title", "across hosts"}, {"body", ""}});
  REQUIRE(r.status == 201);
  CHECK(eventually([&] { return json::parse(b.call("GET", "/audit").body)["created"] == 1; }));

  // Host B's packets to NATS vanish; no connection is closed.
  host_b.cut_off(host_a.peer());
  // A stops hearing B's hellos: notes are refused at once, not at the deadline.
  REQUIRE(eventually([&] { return a.sees("up", 1); }, 10s));
  CHECK(refused_at_once([&] { return a.call("POST", "/notes", {{"title", "x"}, {"body", ""}}); }));
  // B's client misses its pings and calls NATS down: audit is refused at
  // once there, and B's own notes are served.
  REQUIRE(eventually([&] { return b.cluster()["nats"] == "down"; }, 15s));
  CHECK(refused_at_once([&] { return b.call("GET", "/audit"); }));
  CHECK(b.call("GET", "/notes").status == 200);

  // Joined again: both are served again, every request answered by its deadline.
  host_b.reconnect(host_a.peer());
  REQUIRE(eventually([&] { return a.sees("up", 2) && b.cluster()["nats"] == "up"; }, 10s));
  CHECK(eventually([&] { return a.call("POST", "/notes", {{"title", "back"}, {"body", ""}}).status == 201; }, 10s));
  CHECK(eventually([&] { return b.call("GET", "/audit").status == 200; }, 10s));
}
