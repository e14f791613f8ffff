// EDRI_UNIX_SOCKET: HTTP on a Unix domain socket as well as on the port,
// for a reverse proxy on the same host.
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "support/http_client.hpp"
#include "support/server_process.hpp"
#include "support/test_helpers.hpp"

using namespace edri::test;

namespace {

// One request over the Unix socket at `path`; the raw answer up to its body.
std::string unix_request(const std::string& path, const std::string& request) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(fd >= 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::snprintf(a.sun_path, sizeof a.sun_path, "%s", path.c_str());
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  timeval tv{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  REQUIRE(::send(fd, request.data(), request.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(request.size()));
  std::string out;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return out;
}

bool is_socket(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode);
}

}  // namespace

TEST_CASE("HTTP on EDRI_UNIX_SOCKET and on the port alike", "[unix]") {
  TempDir dir;
  const std::string path = (dir.path / "edri.sock").string();
  {
    // A socket file left by a dead instance is replaced.
    const int stale = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::snprintf(a.sun_path, sizeof a.sun_path, "%s", path.c_str());
    REQUIRE(::bind(stale, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    ::close(stale);
  }
  ServerProcess server({plugin_path("bench_app")}, {{"EDRI_UNIX_SOCKET", path}});
  REQUIRE(is_socket(path));
  const auto answer = unix_request(path, "GET /noop HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  CHECK(answer.rfind("HTTP/1.1 200", 0) == 0);
  CHECK(answer.find(R"({"ok":true})") != std::string::npos);
  const auto echo = unix_request(path,
                                 "POST /echo HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: "
                                 "application/json\r\nContent-Length: 7\r\n\r\n[1,2,3]");
  CHECK(echo.find("[1,2,3]") != std::string::npos);
  CHECK(http_get(server.port(), "/noop").status == 200);
  CHECK(server.stop() == 0);
  CHECK_FALSE(std::filesystem::exists(path));  // removed on exit
}

TEST_CASE("EDRI_UNIX_SOCKET naming something that is not a socket stops start-up", "[unix]") {
  TempDir dir;
  const std::string path = (dir.path / "a-file").string();
  std::ofstream(path) << "keep me";
  const auto r = run_server_to_exit({}, {{"EDRI_PLUGINS", plugin_path("bench_app")}, {"EDRI_UNIX_SOCKET", path}});
  CHECK(r.status == 2);
  CHECK(r.err.find("EDRI_UNIX_SOCKET") != std::string::npos);
  CHECK(std::filesystem::exists(path));
}

TEST_CASE("EDRI_ADMIN_SOCKET: the built-in endpoints answer there alone, in full, and the public port names no pids",
          "[unix][builtin]") {
  {
    // Without it: the public /health tells who runs, not their pids.
    ServerProcess open({test_plugin_path("test_app")});
    const auto health = nlohmann::json::parse(http_get(open.port(), "/health").body);
    REQUIRE(!health["processes"].empty());
    for (const auto& p : health["processes"]) CHECK_FALSE(p.contains("pid"));
  }
  TempDir dir;
  const std::string admin = (dir.path / "admin.sock").string();
  ServerProcess server({test_plugin_path("test_app"), test_plugin_path("gate")},
                       {{"EDRI_ADMIN_SOCKET", admin}, {"EDRI_HEALTH_PATH", "/_status"}, {"EDRI_TEST_GATE", "deny"}});
  REQUIRE(is_socket(admin));
  // Public: the paths are the application's, behind its middleware.
  HttpClient c(server.port());
  for (const char* path : {"/health", "/_status", "/ready", "/metrics"}) CHECK(c.get(path).status == 401);
  // Admin: the built-ins in full, at their configured paths, and nothing else.
  auto get = [&](const std::string& path) {
    return unix_request(admin, "GET " + path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  };
  const auto status = get("/_status");
  CHECK(status.rfind("HTTP/1.1 200", 0) == 0);
  const auto body = nlohmann::json::parse(status.substr(status.find("\r\n\r\n") + 4));
  CHECK(body["processes"][0]["pid"] == server.pid());
  CHECK(get("/ready").rfind("HTTP/1.1 200", 0) == 0);
  CHECK(get("/metrics").find("edri_requests_total") != std::string::npos);
  CHECK(get("/health").rfind("HTTP/1.1 404", 0) == 0);
  CHECK(get("/hello/x").rfind("HTTP/1.1 404", 0) == 0);
  CHECK(server.stop() == 0);
  CHECK_FALSE(std::filesystem::exists(admin));
}
