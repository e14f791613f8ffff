// The access log (EDRI_ACCESS_LOG, docs/operations.md): a line for every
// HTTP/1.1 and HTTP/2 request, WebSocket command and gRPC call, in JSON or
// nginx's combined format, reopened on SIGUSR1 for rotation, and never a
// stall: a log that cannot be written drops lines and counts them.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "support/grpc_scenario.hpp"
#include "support/http_client.hpp"
#include "support/server_process.hpp"
#include "support/test_helpers.hpp"
#include "support/ws_client.hpp"

using namespace edri::test;
using nlohmann::json;

namespace {

// The file's lines once it has `n` (the writer batches for up to 50 ms).
std::vector<std::string> wait_for_lines(const std::filesystem::path& file, std::size_t n) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  auto lines = file_lines(file);
  while (lines.size() < n && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    lines = file_lines(file);
  }
  return lines;
}

// The one entry whose protocol and target are these.
json entry(const std::vector<json>& entries, const std::string& protocol, const std::string& target) {
  json found;
  int n = 0;
  for (const auto& e : entries)
    if (e["protocol"] == protocol && e["target"] == target) {
      found = e;
      ++n;
    }
  INFO(protocol << " " << target);
  CHECK(n == 1);
  return found;
}

std::uint64_t metric(std::uint16_t port, const std::string& name) {
  const double v = metric_value(http_get(port, "/metrics").body, name + " ");
  return v < 0 ? UINT64_MAX : static_cast<std::uint64_t>(v);
}

constexpr const char* kTrace = "4bf92f3577b34da6a3ce929d0e0e4736";

// The test app, logging in `format` to access.log in a folder of its own.
struct LoggedServer {
  explicit LoggedServer(const std::string& format)
      : server({test_plugin_path("test_app")}, {{"EDRI_ACCESS_LOG", format}, {"EDRI_ACCESS_LOG_PATH", file.string()}}) {
  }
  TempDir dir;
  std::filesystem::path file = dir.path / "access.log";
  ServerProcess server;
};

}  // namespace

TEST_CASE("access log: one JSON line per HTTP request and WebSocket command and gRPC call", "[access_log]") {
  LoggedServer logged("json");
  const auto& file = logged.file;
  const auto port = logged.server.port();
  HttpClient c(port);
  const std::string traceparent = std::string("traceparent: 00-") + kTrace + "-00f067aa0ba902b7-01\r\n";
  const auto got =
      c.request("GET", "/status/201?q=1", {}, "User-Agent: test \"agent\"\r\nX-Request-Id: req-1\r\n" + traceparent);
  CHECK(got.status == 201);
  const std::string body = R"({"title":"abc"})";
  const auto created = c.request("POST", "/things", body, "Content-Type: application/json\r\n");
  CHECK(created.status == 201);
  CHECK(c.request("POST", "/things", R"({"title":""})", "Content-Type: application/json\r\n").status == 422);
  CHECK(c.get("/no/such").status == 404);
  CHECK(output_of("curl -s -o /dev/null --max-time 10 --http2-prior-knowledge -w '%{http_code}' http://127.0.0.1:" +
                  std::to_string(port) + "/hello/h2") == "200");
  {
    WsClient ws(port);
    CHECK(ws.command({{"command", "status"}, {"code", 202}})["response"] == "status");
    CHECK(ws.command({{"command", "no.such"}})["error"]["status"] == 404);
  }
  const json g = run_scenario(port, "access_log");
  INFO(g.dump());
  CHECK(g["hello"]["code"] == "OK");
  CHECK(g["no_method"]["code"] == "UNIMPLEMENTED");

  const auto lines = wait_for_lines(file, 11);
  std::vector<json> entries;
  for (const auto& l : lines) {
    INFO(l);
    entries.push_back(json::parse(l));  // each line one JSON object
  }
  REQUIRE(entries.size() == 11);
  for (const auto& e : entries) {
    INFO(e.dump());
    CHECK(std::regex_match(e["time"].get<std::string>(),
                           std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)")));  // UTC, ms
    CHECK(e["client"] == "127.0.0.1");
    CHECK(e["duration_ms"].get<double>() >= 0);
  }

  const json first = entry(entries, "http/1.1", "/status/201?q=1");
  CHECK(first["method"] == "GET");
  CHECK(first["route"] == "/status/{code:int}");
  CHECK(first["domain"] == "test");
  CHECK(first["status"] == 201);
  CHECK(first["bytes_out"] == got.body.size());
  CHECK(first["request_id"] == "req-1");
  CHECK(first["trace_id"] == kTrace);
  CHECK(first["user_agent"] == "test \"agent\"");

  // The two POSTs share a target: the accepted one and the refused one.
  std::vector<json> posts;
  for (const auto& e : entries)
    if (e["target"] == "/things") posts.push_back(e);
  REQUIRE(posts.size() == 2);
  CHECK(posts[0]["status"] == 201);
  CHECK(posts[0]["bytes_in"] == body.size());
  CHECK(posts[0]["bytes_out"] == created.body.size());
  CHECK(posts[1]["status"] == 422);  // refused at the edge: logged all the same
  CHECK(posts[0]["request_id"] != posts[1]["request_id"]);
  CHECK(!posts[0].contains("trace_id"));

  const json missing = entry(entries, "http/1.1", "/no/such");
  CHECK(missing["status"] == 404);
  CHECK(!missing.contains("route"));

  const json h2 = entry(entries, "h2", "/hello/h2");
  CHECK(h2["status"] == 200);
  CHECK(h2["route"] == "/hello/{name}");

  // The handshake (101), then each command.
  const json handshake = entry(entries, "http/1.1", "/ws");
  CHECK(handshake["status"] == 101);
  std::vector<json> commands;
  for (const auto& e : entries)
    if (e["protocol"] == "websocket") commands.push_back(e);
  REQUIRE(commands.size() == 2);
  CHECK(commands[0]["method"] == "status");
  CHECK(commands[0]["target"] == "/ws");
  CHECK(commands[0]["status"] == 202);
  CHECK(commands[0]["domain"] == "test");
  CHECK(commands[1]["method"] == "no.such");
  CHECK(commands[1]["status"] == 404);

  json hello;
  for (const auto& e : entries)
    if (e["protocol"] == "grpc" && e.contains("trace_id")) hello = e;
  CHECK(hello["target"] == "/edri.v1.Edri/Call");
  CHECK(hello["status"] == 200);
  CHECK(hello["grpc_status"] == 0);
  CHECK(hello["trace_id"] == "0af7651916cd43dd8448eb211c80319c");
  CHECK(hello["domain"] == "test");
  CHECK(hello["bytes_in"].get<int>() > 0);
  CHECK(hello["bytes_out"].get<int>() > 0);
  const json unimplemented = entry(entries, "grpc", "/edri.v1.Other/Nothing");
  CHECK(unimplemented["grpc_status"] == 12);
  // The handler's 404 travels in the gRPC Event (status 404), the call is OK.
  std::size_t calls = 0;
  for (const auto& e : entries) calls += e["protocol"] == "grpc";
  CHECK(calls == 3);

  CHECK(metric(port, "edri_access_log_lines_total") >= 11);
  CHECK(metric(port, "edri_access_log_dropped_total") == 0);
}

TEST_CASE("access log: nginx's combined format and SIGUSR1 reopens the file for rotation", "[access_log]") {
  LoggedServer logged("combined");
  const auto& file = logged.file;
  auto& server = logged.server;
  const auto port = server.port();
  const auto children = server.children();
  HttpClient c(port);
  CHECK(c.request("GET", "/hello/a", {}, "User-Agent: ua/1\r\nReferer: http://x/\r\n").status == 200);
  CHECK(c.request("GET", "/hello/%22q%22", {}).status == 200);
  auto lines = wait_for_lines(file, 2);
  REQUIRE(lines.size() == 2);
  // nginx's combined, then duration, protocol, route, domain, request id,
  // trace id and gRPC status.
  const std::regex combined(
      R"re(127\.0\.0\.1 - - \[\d\d/[A-Z][a-z]{2}/\d{4}:\d\d:\d\d:\d\d \+0000\] "GET /hello/a HTTP/1\.1" 200 \d+ )re"
      R"re("http://x/" "ua/1" \d+\.\d{6} http/1\.1 "/hello/\{name\}" test [0-9a-f-]{26} - -)re");
  INFO(lines[0]);
  CHECK(std::regex_match(lines[0], combined));
  CHECK(lines[1].find("\"GET /hello/%22q%22 HTTP/1.1\" 200") != std::string::npos);

  // Rotation as logrotate does it: rename, then SIGUSR1 to the server.
  const auto rotated = logged.dir.path / "access.log.1";
  std::filesystem::rename(file, rotated);
  REQUIRE(::kill(server.pid(), SIGUSR1) == 0);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!std::filesystem::exists(file) && std::chrono::steady_clock::now() < deadline) {
    CHECK(c.get("/hello/b").status == 200);  // the reopen comes with a line
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  REQUIRE(std::filesystem::exists(file));
  CHECK(c.get("/hello/after").status == 200);
  const auto has_after = [&] {
    for (const auto& l : file_lines(file))
      if (l.find("/hello/after") != std::string::npos) return true;
    return false;
  };
  while (!has_after() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  CHECK(has_after());
  for (const auto& l : file_lines(rotated)) CHECK(l.find("/hello/after") == std::string::npos);
  CHECK(file_lines(rotated).size() >= 2);
  // No process restarted: the signal is the listeners', nobody else's.
  CHECK(server.children().size() == children.size());
  for (const auto& p : children) CHECK(::kill(p.pid, 0) == 0);
}

TEST_CASE("access log: a log that cannot keep up drops counted lines and no request waits on it", "[access_log]") {
  TempDir dir;
  const auto fifo = dir.path / "slow.log";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  // A reader that reads nothing yet: the pipe (64 KiB) fills and the
  // writer thread blocks, as on a disk that stopped.
  const int reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  REQUIRE(reader >= 0);
  std::atomic<bool> drain{false};
  std::thread draining([&] {
    while (!drain.load()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    char buf[65536];
    for (int idle = 0; idle < 200;) {
      const ssize_t n = ::read(reader, buf, sizeof buf);
      if (n == 0) break;  // the listener closed it
      idle = n > 0 ? 0 : idle + 1;
      if (n < 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  });
  {
    ServerProcess server(
        {test_plugin_path("test_app")},
        {{"EDRI_ACCESS_LOG", "json"}, {"EDRI_ACCESS_LOG_PATH", fifo.string()}, {"EDRI_ACCESS_LOG_BUFFER", "4096"}});
    const auto port = server.port();
    HttpClient c(port);
    const int requests = 3000;  // ~200 bytes a line: far past 64 KiB + 4 KiB
    int ok = 0;
    for (int i = 0; i < requests; ++i) ok += c.get("/hello/x" + std::to_string(i)).status == 200;
    CHECK(ok == requests);
    const auto lines = metric(port, "edri_access_log_lines_total");
    const auto dropped = metric(port, "edri_access_log_dropped_total");
    CHECK(dropped > 0);
    CHECK(lines < static_cast<std::uint64_t>(requests));
    // Every request is either queued or counted dropped (/metrics itself
    // is a request too: a line of its own, or a drop).
    CHECK(lines + dropped >= static_cast<std::uint64_t>(requests));
    CHECK(lines + dropped <= static_cast<std::uint64_t>(requests) + 2);
    drain = true;  // so that the listener's writer can finish as it stops
  }
  drain = true;
  draining.join();
  ::close(reader);
}

TEST_CASE("access log: a path that cannot be opened stops start-up with a message", "[access_log]") {
  const auto r = run_server_to_exit({}, {{"EDRI_PLUGINS", test_plugin_path("test_app")},
                                         {"EDRI_ACCESS_LOG", "json"},
                                         {"EDRI_ACCESS_LOG_PATH", "/nonexistent/dir/access.log"}});
  CHECK(r.status == 2);
  CHECK(r.err.find("EDRI_ACCESS_LOG_PATH") != std::string::npos);
  CHECK(r.err.find("/nonexistent/dir/access.log") != std::string::npos);
}

TEST_CASE("access log: a handler's line in the server's log carries the request id the access log shows",
          "[access_log]") {
  TempDir dir;
  const auto file = dir.path / "access.log";
  ServerProcess server(
      {test_plugin_path("test_app")},
      {{"EDRI_ACCESS_LOG", "json"}, {"EDRI_ACCESS_LOG_PATH", file.string()}, {"EDRI_LOG_FORMAT", "json"}});
  HttpClient c(server.port());
  CHECK(c.request("GET", "/log/1", {}, "X-Request-Id: join-1\r\n").status == 200);  // info
  CHECK(c.request("GET", "/log/0", {}, "X-Request-Id: join-0\r\n").status == 200);  // debug: below info
  CHECK(c.get("/log/3").status == 200);                                             // error, its own id
  const auto access = wait_for_lines(file, 3);
  REQUIRE(access.size() == 3);
  CHECK(json::parse(access[0])["request_id"] == "join-1");
  const std::string generated = json::parse(access[2])["request_id"];
  std::vector<json> said;
  std::istringstream log(server.log());
  for (std::string line; std::getline(log, line);)
    if (line.find("handler says") != std::string::npos) said.push_back(json::parse(line));
  REQUIRE(said.size() == 2);
  CHECK(said[0]["process"] == "manager test");
  CHECK(said[0]["level"] == "info");
  CHECK(said[0]["message"] == "handler says \"hello\"");
  CHECK(said[0]["request_id"] == "join-1");
  CHECK(said[1]["level"] == "error");
  CHECK(said[1]["request_id"] == generated);
}
