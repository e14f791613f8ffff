// Many clients at once for a minute: 1,000 keep-alive connections under a
// closed-loop load and 1,000 idle WebSocket connections, held together.
// Nothing fails, memory stays flat after the warm-up and no process grows
// threads. Hidden from the default run ([.soak]); the CI runs it on the
// release build: build/bin/integration_tests "[soak]".
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "load_generator.hpp"
#include "support/http_client.hpp"
#include "support/server_process.hpp"
#include "support/test_helpers.hpp"

using namespace edri::test;
using namespace std::chrono_literals;

namespace {

// A WebSocket opened by hand and then left alone: the descriptor, or -1.
int open_idle_websocket(std::uint16_t port) {
  int fd = -1;
  try {
    fd = connect_loopback(port);
  } catch (const std::exception&) {
    return -1;
  }
  static const std::string kUpgrade =
      "GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
      "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n";
  if (::send(fd, kUpgrade.data(), kUpgrade.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(kUpgrade.size())) {
    ::close(fd);
    return -1;
  }
  std::string head;
  char buf[512];
  pollfd p{fd, POLLIN, 0};
  while (head.find("\r\n\r\n") == std::string::npos && ::poll(&p, 1, 5000) == 1) {
    const auto n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    head.append(buf, static_cast<std::size_t>(n));
  }
  if (head.rfind("HTTP/1.1 101", 0) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Still open: nothing to read, or data but no end of stream.
bool still_open(int fd) {
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, 0) == 0) return true;
  char c;
  return ::recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) > 0;
}

struct Sample {
  long rss_kb = 0;
  std::map<pid_t, int> threads;
};

Sample sample(const ServerProcess& server) {
  Sample s;
  s.rss_kb = rss_kb(server.pid());
  s.threads[server.pid()] = thread_count(server.pid());
  for (const auto& c : server.children()) {
    s.rss_kb += rss_kb(c.pid);
    s.threads[c.pid] = thread_count(c.pid);
  }
  return s;
}

}  // namespace

TEST_CASE("1,000 keep-alive clients under load and 1,000 idle WebSockets for 60 s: no error, no leak, no new threads",
          "[.soak]") {
  rlimit lim{};
  ::getrlimit(RLIMIT_NOFILE, &lim);
  lim.rlim_cur = lim.rlim_max;
  ::setrlimit(RLIMIT_NOFILE, &lim);
  REQUIRE(lim.rlim_cur >= 2200);

  ServerProcess server({plugin_path("bench_app")});
  std::vector<int> sockets;
  for (int i = 0; i < 1000; ++i) {
    const int fd = open_idle_websocket(server.port());
    REQUIRE(fd >= 0);
    sockets.push_back(fd);
  }

  edri::bench::LoadOptions load;
  load.port = server.port();
  load.request.target = "/noop";
  load.expected_body = R"({"ok":true})";
  load.concurrency = 1000;
  load.warmup_seconds = 5;
  load.duration_seconds = 60;
  std::atomic<bool> done{false};
  std::vector<Sample> samples;
  std::thread sampler([&] {
    // Every 5 s from the end of the warm-up (and 10 s more to settle).
    std::this_thread::sleep_for(15s);
    while (!done) {
      samples.push_back(sample(server));
      for (int i = 0; i < 50 && !done; ++i) std::this_thread::sleep_for(100ms);
    }
  });
  const auto result = edri::bench::run_load(load);
  done = true;
  sampler.join();
  const Sample end = sample(server);

  INFO(result.first_error);
  CHECK(result.errors == 0);
  CHECK(result.non_2xx == 0);
  CHECK(result.completed > 60 * 1000);  // at least one answer per client per second
  WARN("requests/s " << result.requests_per_second() << ", p99 " << result.latency.percentile(0.99) / 1e6
                     << " ms, server RSS " << samples.front().rss_kb << " kB after warm-up, " << end.rss_kb
                     << " kB at the end");
  REQUIRE(samples.size() >= 5);
  // Flat: no more than 5 % (and 4 MB) above the first sample after warm-up.
  CHECK(end.rss_kb <= samples.front().rss_kb + std::max(4096L, samples.front().rss_kb / 20));
  CHECK(end.threads == samples.front().threads);
  std::size_t open = 0;
  for (int fd : sockets) open += still_open(fd) ? 1 : 0;
  CHECK(open == sockets.size());
  for (int fd : sockets) ::close(fd);
}
