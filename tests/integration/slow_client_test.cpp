// Clients that stop reading: the listener stops taking their requests once
// their unsent output passes EDRI_OUTPUT_BUFFER, closes them after
// EDRI_WRITE_TIMEOUT, and serves everyone else meanwhile.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <nlohmann/json.hpp>
#include <string>

#include "support/http_client.hpp"
#include "support/server_process.hpp"
#include "support/test_helpers.hpp"
#include "support/ws_client.hpp"
#include "support/ws_frames.hpp"

using namespace edri::test;
using nlohmann::json;

namespace {

int counted(std::uint16_t port) { return json::parse(http_get(port, "/counted").body)["counted"].get<int>(); }

// Reads until the server ends the stream or `limit` passes; the bytes read,
// and whether the stream ended.
std::pair<std::size_t, bool> drain(int fd, std::chrono::milliseconds limit) {
  std::size_t total = 0;
  char buf[65536];
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 200) <= 0) continue;
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return {total, true};
    total += static_cast<std::size_t>(n);
  }
  return {total, false};
}

}  // namespace

TEST_CASE("a client that stops reading makes no more work, is closed after EDRI_WRITE_TIMEOUT, delays nobody",
          "[slow]") {
  ServerProcess server({test_plugin_path("test_app")},
                       {{"EDRI_WRITE_TIMEOUT", "2"}, {"EDRI_MAX_PIPELINE", "8"}, {"EDRI_OUTPUT_BUFFER", "262144"}});
  const int fd = connect_small_window(server.port());
  // 400 pipelined requests for 100 kB each: 40 MB the client will not read.
  constexpr int kRequests = 400;
  constexpr std::size_t kBytes = 100000;
  std::string burst;
  for (int i = 0; i < kRequests; ++i)
    burst += "GET /counted/" + std::to_string(kBytes) + " HTTP/1.1\r\nHost: x\r\n\r\n";
  REQUIRE(::send(fd, burst.data(), burst.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(burst.size()));

  // The handler runs until the unsent output passes the bound, then no more.
  // Settled: the count has not moved for half a second (slow builds too).
  int last = -1;
  auto since = std::chrono::steady_clock::now();
  REQUIRE(eventually(
      [&] {
        const int now = counted(server.port());
        if (now != last) {
          last = now;
          since = std::chrono::steady_clock::now();
        }
        return last > 0 && std::chrono::steady_clock::now() - since > std::chrono::milliseconds(500);
      },
      std::chrono::milliseconds(15000)));
  CHECK(last < kRequests / 2);  // unbounded, all 400 would run (40 MB queued)
  // Others are served as usual meanwhile.
  HttpClient other(server.port());
  CHECK(other.get("/hello/there").status == 200);

  // Closed once it has taken nothing for EDRI_WRITE_TIMEOUT (a sweep a second).
  CHECK(eventually([&] { return server.log().find("took no output for 2 s") != std::string::npos; },
                   std::chrono::milliseconds(8000)));
  const auto [bytes, ended] = drain(fd, std::chrono::milliseconds(10000));
  CHECK(ended);  // the server ended the stream; it did not wait for the client
  CHECK(bytes < static_cast<std::size_t>(kRequests) * kBytes);
  ::close(fd);
  CHECK(counted(server.port()) == last);  // nothing of it ran after the pause
  CHECK(other.get("/hello/again").status == 200);
}

TEST_CASE("a slow client that keeps reading is not closed, however long the transfer", "[slow]") {
  ServerProcess server({test_plugin_path("test_app")}, {{"EDRI_WRITE_TIMEOUT", "1"}});
  const int fd = connect_small_window(server.port());
  const std::string req = "GET /counted/600000 HTTP/1.1\r\nHost: x\r\n\r\n";
  REQUIRE(::send(fd, req.data(), req.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(req.size()));
  // Read 600 kB slowly, over more than the write timeout: 4 kB every 15 ms.
  std::size_t total = 0;
  char buf[4096];
  const auto start = std::chrono::steady_clock::now();
  while (total < 600000 && std::chrono::steady_clock::now() - start < std::chrono::seconds(30)) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 2000) <= 0) break;
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    total += static_cast<std::size_t>(n);
    ::usleep(15000);
  }
  CHECK(total > 600000);  // the whole response, headers included
  CHECK(std::chrono::steady_clock::now() - start > std::chrono::milliseconds(1500));
  CHECK(server.log().find("took no output") == std::string::npos);
  ::close(fd);
}

TEST_CASE("a WebSocket subscriber that stops reading is closed at its bound: the others get every push", "[slow]") {
  // The bound: 8 x EDRI_OUTPUT_BUFFER = 4 MiB here.
  ServerProcess server({test_plugin_path("test_app")}, {{"EDRI_OUTPUT_BUFFER", "524288"}});
  const pid_t listener = server.child("listener");
  // The stalled subscriber: subscribes, reads its answer, then nothing.
  const int fd = connect_small_window(server.port());
  const std::string up = ws_upgrade_request("/ws");
  REQUIRE(::send(fd, up.data(), up.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(up.size()));
  const std::string sub = ws_client_frame(1, R"({"command":"watch"})");
  REQUIRE(::send(fd, sub.data(), sub.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(sub.size()));
  std::string seen;
  char buf[4096];
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (seen.find(R"("command":"watch")") == std::string::npos && std::chrono::steady_clock::now() < until) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 200) <= 0) continue;
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    seen.append(buf, static_cast<std::size_t>(n));
  }
  REQUIRE(seen.find(R"("command":"watch")") != std::string::npos);
  WsClient reader(server.port(), "/ws", {}, 20000);
  REQUIRE(reader.command({{"command", "watch"}})["command"] == "watch");
  [[maybe_unused]] const long before = rss_kb(listener);

  // 80 pushes of 100 kB, in batches of 10 the reader takes before the
  // next: 8 MB the stalled one will never read.
  int in_order = 0;
  for (int batch = 0; batch < 8; ++batch) {
    REQUIRE(http_get(server.port(), "/other/publish-big/10/100000").status == 200);
    for (int i = 1; i <= 10; ++i)
      if (reader.read_json()["event"]["i"] == i) ++in_order;
  }
  CHECK(in_order == 80);
  CHECK(eventually([&] { return server.log().find("does not read its messages") != std::string::npos; }));
  if (!servers_under_asan()) CHECK(rss_kb(listener) - before < 16 * 1024);
  const auto [bytes, ended] = drain(fd, std::chrono::milliseconds(10000));
  CHECK(ended);
  CHECK(bytes < 8u << 20);
  ::close(fd);
}
