// SIGTERM stops edri-server gracefully: the port refuses new connections at
// once, idle connections close, requests in flight are answered (up to
// EDRI_SHUTDOWN_TIMEOUT), WebSockets close with 1001, the exit status is 0
// and no shared memory is left.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <future>
#include <thread>

#include "support/http_client.hpp"
#include "support/server_process.hpp"
#include "support/test_helpers.hpp"
#include "support/ws_client.hpp"

using namespace edri::test;
using namespace std::chrono_literals;

namespace {

// True when a TCP connect to the port fails.
bool refuses(std::uint16_t port) {
  try {
    ::close(connect_loopback(port));
    return false;
  } catch (const std::exception&) {
    return true;
  }
}

}  // namespace

TEST_CASE("SIGTERM: no new connections, idle ones close, requests in flight finish, WebSockets get 1001, exit 0",
          "[shutdown][alone]") {
  ServerProcess server({test_plugin_path("test_app")}, {{"EDRI_SHUTDOWN_TIMEOUT", "10"}});
  const auto prefix = server.segment_prefix();
  REQUIRE(shm_segments(prefix).size() == 1);
  HttpClient idle(server.port());
  REQUIRE(idle.get("/hello/idle").status == 200);
  WsClient ws(server.port());
  HttpClient busy(server.port(), 10000);
  busy.send_raw("GET /sleep/1500 HTTP/1.1\r\nHost: x\r\n\r\n");
  std::this_thread::sleep_for(300ms);

  const auto stopped = std::chrono::steady_clock::now();
  auto exit_status = std::async(std::launch::async, [&] { return server.stop(20000); });
  CHECK(eventually([&] { return refuses(server.port()); }, 1000ms));
  CHECK(idle.closed_by_peer(1000));
  CHECK(ws.read_close_code() == 1001);
  // The request in flight is answered, and it is the connection's last.
  const auto r = busy.read_response();
  CHECK(r.status == 200);
  CHECK(r.header("connection") == "close");
  CHECK(busy.closed_by_peer(1000));
  CHECK(std::chrono::steady_clock::now() - stopped > 1s);  // it waited for the handler

  CHECK(exit_status.get() == 0);
  CHECK(std::chrono::steady_clock::now() - stopped < 5s);
  CHECK(shm_segments(prefix).empty());
  for (pid_t p : server.stopped_processes()) CHECK_FALSE(process_alive(p));
}

TEST_CASE("SIGTERM: what is still in flight at EDRI_SHUTDOWN_TIMEOUT is closed, and the server exits 0",
          "[shutdown][alone]") {
  ServerProcess server({test_plugin_path("test_app")}, {{"EDRI_SHUTDOWN_TIMEOUT", "1"}});
  HttpClient busy(server.port(), 10000);
  busy.send_raw("GET /sleep/6000 HTTP/1.1\r\nHost: x\r\n\r\n");
  std::this_thread::sleep_for(300ms);
  const auto stopped = std::chrono::steady_clock::now();
  auto exit_status = std::async(std::launch::async, [&] { return server.stop(20000); });
  CHECK(busy.closed_by_peer(3000));
  CHECK(std::chrono::steady_clock::now() - stopped < 2500ms);
  // The manager is still in the handler when it is told to stop; it stops
  // after it.
  CHECK(exit_status.get() == 0);
  CHECK(server.log().find("EDRI_SHUTDOWN_TIMEOUT: closed 1 connections") != std::string::npos);
}
