// Running as a service (docs/operations.md): systemd's notify protocol
// (READY=1 once the server serves, WATCHDOG=1 while it runs, STOPPING=1
// when it stops) heard on a socket of the test's own, as systemd would
// hear it; a SIGHUP that ends nothing; and the server as an unprivileged
// user, binding a privileged port with the one capability a unit gives it.
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "support/http_client.hpp"
#include "support/server_process.hpp"
#include "support/test_helpers.hpp"

using namespace edri::test;

namespace {

// A datagram socket at a path of its own: NOTIFY_SOCKET.
struct NotifySocket {
  TempDir dir;
  std::string path = (dir.path / "notify").string();
  int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  NotifySocket() {
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    path.copy(a.sun_path, sizeof a.sun_path - 1);
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    timeval t{0, 100'000};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &t, sizeof t);
  }
  ~NotifySocket() { ::close(fd); }
  // The messages that came within `ms`, each whole.
  std::vector<std::string> received(int ms) {
    std::vector<std::string> out;
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    while (std::chrono::steady_clock::now() < end) {
      char buf[512];
      const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n > 0) out.emplace_back(buf, static_cast<std::size_t>(n));
    }
    return out;
  }
};

std::size_t count_starting(const std::vector<std::string>& messages, const std::string& prefix) {
  std::size_t n = 0;
  for (const auto& m : messages) n += m.rfind(prefix, 0) == 0;
  return n;
}

}  // namespace

TEST_CASE("under systemd the server says READY when it serves, pings the watchdog and says STOPPING", "[service]") {
  NotifySocket notify;
  ServerProcess server{{plugin_path("bench_app")}, {{"NOTIFY_SOCKET", notify.path}, {"WATCHDOG_USEC", "200000"}}};
  // ServerProcess returned at the listening line: READY=1 came by then.
  const auto first = notify.received(600);
  REQUIRE(count_starting(first, "READY=1") == 1);
  for (const auto& m : first)
    if (m.rfind("READY=1", 0) == 0)
      CHECK(m.find("STATUS=serving on port " + std::to_string(server.port())) != std::string::npos);
  CHECK(count_starting(first, "WATCHDOG=1") >= 3);  // every 100 ms
  CHECK(http_get(server.port(), "/noop").status == 200);
  CHECK(server.stop() == 0);
  const auto last = notify.received(200);
  CHECK(count_starting(last, "STOPPING=1") == 1);
  CHECK(count_starting(last, "READY=1") == 0);
}

TEST_CASE("SIGHUP to a child ends nothing: a hangup of the whole group is the supervisor's", "[service]") {
  ServerProcess server{{plugin_path("bench_app")}};
  const auto listener = server.child("listener");
  const auto router = server.child("router");
  ::kill(listener, SIGHUP);
  ::kill(router, SIGHUP);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  CHECK(http_get(server.port(), "/noop").status == 200);
  CHECK(server.child("listener") == listener);  // not restarted: it ignored the signal
  CHECK(server.child("router") == router);
  CHECK(server.stop() == 0);
  CHECK(shm_segments(server.segment_prefix()).empty());
}

TEST_CASE("under systemd a reload says RELOADING, then READY once the new generation serves", "[service][reload]") {
  NotifySocket notify;
  ServerProcess server{{plugin_path("bench_app")}, {{"NOTIFY_SOCKET", notify.path}}};
  REQUIRE(count_starting(notify.received(300), "READY=1") == 1);
  ::kill(server.pid(), SIGHUP);
  const auto said = notify.received(3000);
  REQUIRE(said.size() >= 2);
  CHECK(said[0].rfind("RELOADING=1", 0) == 0);
  CHECK(count_starting(said, "READY=1") == 1);
  for (const auto& m : said)
    if (m.rfind("READY=1", 0) == 0) CHECK(m.find("generation 2") != std::string::npos);
  CHECK(server.stop() == 0);
}

TEST_CASE("as an unprivileged user the server binds a port below 1024 with CAP_NET_BIND_SERVICE alone", "[service]") {
  if (::geteuid() != 0) {
    WARN("not root: setpriv cannot change users here");
    return;
  }
  // What a unit's User=, Group= and AmbientCapabilities=CAP_NET_BIND_SERVICE give it.
  const std::vector<std::string> as_nobody = {"/usr/bin/setpriv",
                                              "--reuid=65534",
                                              "--regid=65534",
                                              "--clear-groups",
                                              "--inh-caps=+net_bind_service",
                                              "--ambient-caps=+net_bind_service"};
  ServerProcess server{{plugin_path("bench_app")}, {{"EDRI_PORT", "1023"}}, as_nobody};
  CHECK(server.port() == 1023);
  CHECK(http_get(server.port(), "/noop").status == 200);
  REQUIRE(!server.children().empty());
  for (const auto& c : server.children()) CHECK(status_field(c.pid, "Uid") == 65534);
  CHECK(server.stop() == 0);
  // Without the capability, the bind is refused and start-up says so.
  const std::vector<std::string> bare = {"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"};
  CHECK_THROWS_WITH((ServerProcess{{plugin_path("bench_app")}, {{"EDRI_PORT", "1023"}}, bare}),
                    Catch::Contains("Permission denied"));
}
