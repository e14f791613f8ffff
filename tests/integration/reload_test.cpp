// Reload (SIGHUP, docs/operations.md): a new generation of processes from
// the config file and the plugins as they are now, while the old one
// finishes what it holds; under wrk, three reloads fail no request. A
// generation keeps the plugin code it started with, also for a process
// restarted after the file changed; a reload that cannot start leaves the
// old generation serving and says why.
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <thread>

#include "support/h2_connection.hpp"
#include "support/http_client.hpp"
#include "support/nats_server.hpp"
#include "support/server_process.hpp"
#include "support/test_helpers.hpp"
#include "support/ws_client.hpp"

using namespace edri::test;
using namespace std::chrono_literals;

namespace {

std::size_t count_of(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// SIGHUP, then the log's word that generation `n` serves (or why not).
bool reload_to(ServerProcess& server, unsigned n) {
  ::kill(server.pid(), SIGHUP);
  return eventually(
      [&] { return server.log().find("generation " + std::to_string(n) + " serves") != std::string::npos; }, 10s);
}

// Bytes from `fd` until it is closed (true) or `ms` pass quiet (false).
bool read_to_close(int fd, std::string& got, int ms) {
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, ms) <= 0) return false;
    char buf[4096];
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return true;
    got.append(buf, static_cast<std::size_t>(n));
  }
}

// Replaces `to` with `from` as a deploy would: a new file renamed over it.
void deploy(const std::filesystem::path& from, const std::filesystem::path& to) {
  const auto next = to.string() + ".next";
  std::filesystem::copy_file(from, next, std::filesystem::copy_options::overwrite_existing);
  std::filesystem::rename(next, to);
}

// test_app deployed in a folder of its own (its assets beside it, as it
// finds them) with a config file, and served from there.
struct DeployedApp {
  TempDir dir;
  std::filesystem::path plugin = dir.path / "app.so";
  std::string config = (dir.path / "edri.toml").string();
  std::unique_ptr<ServerProcess> server;
  explicit DeployedApp(const std::string& settings) {
    std::filesystem::copy_file(test_plugin_path("test_app"), plugin);
    std::filesystem::copy(test_plugin_dir() + "/test_app_assets", dir.path / "test_app_assets",
                          std::filesystem::copy_options::recursive);
    configure(settings);
    server =
        std::make_unique<ServerProcess>(std::vector<std::string>{plugin.string()}, std::map<std::string, std::string>{},
                                        std::vector<std::string>{}, std::vector<std::string>{"--config", config});
  }
  void configure(const std::string& settings) const { std::ofstream(config) << settings; }
};

// The plugin copies of this server's generations in the temp folder.
std::size_t plugin_copies(pid_t server) {
  std::size_t n = 0;
  const std::string prefix = "edri-" + std::to_string(server) + "-plugins-";
  for (const auto& e : std::filesystem::directory_iterator(std::filesystem::temp_directory_path()))
    n += e.path().filename().string().rfind(prefix, 0) == 0;
  return n;
}

// wrk's report, the counts the reload tests check given in the INFO.
std::string wrk_report(pid_t wrk, const std::string& out) {
  int status = 0;
  ::waitpid(wrk, &status, 0);
  std::ifstream f(out);
  std::string report((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::filesystem::remove(out);
  return report;
}

long wrk_requests(const std::string& report) {
  std::smatch m;
  return std::regex_search(report, m, std::regex(R"(([0-9]+) requests in)")) ? std::stol(m[1]) : -1;
}

}  // namespace

TEST_CASE("three reloads under wrk fail no request and leave one generation", "[reload]") {
  ServerProcess server{{plugin_path("bench_app")}};
  const std::string out =
      (std::filesystem::temp_directory_path() / ("edri-reload-wrk-" + std::to_string(::getpid()))).string();
  const pid_t wrk = spawn_logged(
      {"/usr/bin/wrk", "-t2", "-c32", "-d6s", "http://127.0.0.1:" + std::to_string(server.port()) + "/noop"}, out);
  std::this_thread::sleep_for(1s);
  for (unsigned n = 2; n <= 4; ++n) {
    CHECK(reload_to(server, n));
    std::this_thread::sleep_for(1200ms);
  }
  const auto report = wrk_report(wrk, out);
  INFO(report);
  CHECK(wrk_requests(report) > 1000);
  CHECK(report.find("Non-2xx") == std::string::npos);
  CHECK(report.find("Socket errors") == std::string::npos);
  // The old generations finished and went, their memory and copies too.
  CHECK(eventually([&] { return count_of(server.log(), "finished and stopped") == 3; }, 10s));
  CHECK(shm_segments(server.segment_prefix()).size() == 1);
  CHECK(plugin_copies(server.pid()) == 1);
  CHECK(http_get(server.port(), "/noop").status == 200);
  CHECK(server.stop() == 0);
  CHECK(shm_segments(server.segment_prefix()).empty());
  CHECK(plugin_copies(server.pid()) == 0);
}

TEST_CASE("a generation keeps its plugin code and a reload takes the file and the config as they are now", "[reload]") {
  DeployedApp app("max_body_size = 4096\n");
  auto& server = *app.server;
  const auto& plugin = app.plugin;
  CHECK(http_get(server.port(), "/hello/one").status == 200);

  // A deploy writes the new plugin; a manager that dies now comes back
  // with the code its generation started with, not the new file's.
  deploy(plugin_path("bench_app"), plugin);
  const pid_t manager = server.child("manager test");
  REQUIRE(manager > 0);
  ::kill(manager, SIGKILL);
  CHECK(eventually([&] { return server.child("manager test") > 0 && server.child("manager test") != manager; }));
  CHECK(eventually([&] { return http_get(server.port(), "/hello/two").status == 200; }));
  CHECK(http_get(server.port(), "/noop").status == 404);

  // The reload serves the new file's routes and the file's new limit.
  app.configure("max_body_size = 64\n");
  REQUIRE(reload_to(server, 2));
  // A connection made as the old listeners take the signal may still be
  // theirs: asked until the new generation answers.
  CHECK(eventually([&] { return http_get(server.port(), "/noop").status == 200; }));
  CHECK(http_get(server.port(), "/hello/three").status == 404);
  HttpClient big(server.port());
  CHECK(big.request("POST", "/echo", std::string(100, 'x')).status == 413);
  CHECK(server.stop() == 0);
}

TEST_CASE("a reload that cannot start leaves the old generation serving and says why", "[reload]") {
  DeployedApp app("max_pipeline = 8\n");
  auto& server = *app.server;
  const auto& plugin = app.plugin;

  app.configure("max_pipelin = 8\n");  // a typo
  ::kill(server.pid(), SIGHUP);
  CHECK(
      eventually([&] { return server.log().find("reload failed, generation 1 keeps serving") != std::string::npos; }));
  CHECK(server.log().find("did you mean max_pipeline?") != std::string::npos);
  CHECK(http_get(server.port(), "/hello/still").status == 200);

  app.configure("max_pipeline = 8\n");
  deploy(test_plugin_path("wrong_abi"), plugin);
  ::kill(server.pid(), SIGHUP);
  CHECK(eventually([&] { return count_of(server.log(), "reload failed, generation 1 keeps serving") == 2; }));
  CHECK(server.log().find("plugin ABI version") != std::string::npos);
  CHECK(http_get(server.port(), "/hello/still").status == 200);

  app.configure("unix_socket = \"" + (app.dir.path / "s.sock").string() + "\"\n");  // bound once
  deploy(test_plugin_path("test_app"), plugin);
  ::kill(server.pid(), SIGHUP);
  CHECK(eventually([&] { return count_of(server.log(), "reload failed, generation 1 keeps serving") == 3; }));
  CHECK(server.log().find("cannot change on reload") != std::string::npos);
  CHECK(http_get(server.port(), "/hello/still").status == 200);
  CHECK(shm_segments(server.segment_prefix()).size() == 1);
  CHECK(server.stop() == 0);
}

TEST_CASE("with EDRI_RELOAD_ON_CHANGE a plugin file written anew reloads, and a broken one does not", "[reload]") {
  DeployedApp app("reload_on_change = \"on\"\n");
  auto& server = *app.server;
  CHECK(http_get(server.port(), "/hello/one").status == 200);

  // A deploy's rename over the file (IN_MOVED_TO): the new file's routes.
  deploy(plugin_path("bench_app"), app.plugin);
  CHECK(eventually([&] { return http_get(server.port(), "/noop").status == 200; }, 15s));
  CHECK(server.log().find(app.plugin.string() + " changed: reloading") != std::string::npos);
  CHECK(eventually([&] { return server.log().find("generation 2 serves") != std::string::npos; }));

  // A file that does not load leaves the code before it serving.
  std::filesystem::copy_file(test_plugin_path("wrong_abi"), app.plugin,
                             std::filesystem::copy_options::overwrite_existing);
  CHECK(eventually([&] { return server.log().find("reload failed, generation 2 keeps serving") != std::string::npos; },
                   15s));
  CHECK(http_get(server.port(), "/noop").status == 200);

  // Written in place, as a linker writes (IN_CLOSE_WRITE): loaded again.
  std::filesystem::copy_file(test_plugin_path("test_app"), app.plugin,
                             std::filesystem::copy_options::overwrite_existing);
  CHECK(eventually([&] { return http_get(server.port(), "/hello/two").status == 200; }, 15s));
  CHECK(server.stop() == 0);
}

TEST_CASE("a reload keeps WebSockets and event streams for EDRI_RELOAD_GRACE, then closes them", "[reload]") {
  ServerProcess server{{plugin_path("bench_app")}, {{"EDRI_RELOAD_GRACE", "2"}}};
  WsClient ws(server.port());
  CHECK(ws.command({{"command", "noop"}}).contains("response"));
  const int sse = connect_loopback(server.port());
  const std::string get = "GET /sse/graced HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n";
  REQUIRE(::send(sse, get.data(), get.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(get.size()));
  std::string events;
  CHECK_FALSE(read_to_close(sse, events, 500));  // open, its head sent
  CHECK(events.rfind("HTTP/1.1 200", 0) == 0);
  // The same over HTTP/2, with a gRPC streaming call beside it.
  H2Connection h2(server.port());
  const auto sse2 = h2.client.request("GET", "/sse/graced2", {}, {{"accept", "text/event-stream"}});
  const auto connect = h2.client.request_left_open("POST", "/edri.v1.Edri/Connect", {},
                                                   {{"content-type", "application/grpc"}, {"te", "trailers"}});
  REQUIRE(h2.run_until([&] { return h2.client.answers[sse2].status == 200; }));

  REQUIRE(reload_to(server, 2));
  REQUIRE(eventually([&] { return server.log().find("replaced by a reload") != std::string::npos; }));
  // Draining, the old generation still answers on it; new connections
  // meet the new generation.
  CHECK(ws.command({{"command", "noop"}}).contains("response"));
  CHECK(http_get(server.port(), "/noop").status == 200);
  // HTTP/2: GOAWAY (no new stream), its streams kept through the grace.
  REQUIRE(h2.run_until([&] { return h2.client.goaway; }));
  h2.run_until([] { return false; }, 500);
  CHECK_FALSE(h2.finished(sse2));
  CHECK_FALSE(h2.finished(connect));
  // Then 1001, and the event streams end; the gRPC call ends UNAVAILABLE.
  CHECK(ws.read_close_code() == 1001);
  CHECK(read_to_close(sse, events, 5000));
  ::close(sse);
  CHECK(h2.run_until([&] { return h2.finished(sse2) && h2.finished(connect); }));
  CHECK(h2.client.answers[sse2].error_code == 0);
  CHECK(h2.client.answers[connect].field("grpc-status") == "14");
  CHECK(server.log().find("EDRI_RELOAD_GRACE is over") != std::string::npos);
  CHECK(eventually([&] { return count_of(server.log(), "finished and stopped") == 1; }, 10s));
  CHECK(server.stop() == 0);
}

TEST_CASE("plugin copies that a killed supervisor left are removed by the next start", "[reload]") {
  TempDir tmp;
  // A supervisor killed by SIGKILL leaves its copies: its pid is no process now.
  const auto stale = tmp.path / "edri-2147483000-plugins-AbCdEf";
  std::filesystem::create_directories(stale);
  std::ofstream(stale / "0-test_app.so") << "left behind";
  // One of a supervisor still running (this test's own pid stands for it).
  const auto live = tmp.path / ("edri-" + std::to_string(::getpid()) + "-plugins-GhIjKl");
  std::filesystem::create_directories(live);
  ServerProcess server({test_plugin_path("test_app")}, {{"TMPDIR", tmp.path.string()}});
  CHECK_FALSE(std::filesystem::exists(stale));
  CHECK(std::filesystem::exists(live));
  CHECK(server.log().find("removed the plugin copies in " + stale.string() + " left by a dead instance") !=
        std::string::npos);
  std::size_t own = 0;
  for (const auto& e : std::filesystem::directory_iterator(tmp.path))
    own += e.path().filename().string().rfind("edri-" + std::to_string(server.pid()) + "-plugins-", 0) == 0;
  CHECK(own == 1);
  CHECK(server.stop() == 0);
}

TEST_CASE("instances joined over NATS reload in turn under wrk and fail no request", "[reload][cluster]") {
  // A runs domain test, B domain other: /other/pid through A crosses to B.
  NatsServer nats;
  TempDir files;
  auto instance = [&](const std::string& domains) {
    return std::make_unique<ServerProcess>(
        std::vector<std::string>{test_plugin_path("test_app")},
        std::map<std::string, std::string>{
            {"EDRI_NATS_URL", nats.url()}, {"EDRI_DOMAINS", domains}, {"TEST_APP_FILES", files.path.string()}});
  };
  auto a = instance("test"), b = instance("other");
  const auto instances = [](const ServerProcess& s) {
    HttpClient c(s.port());
    return nlohmann::json::parse(c.get("/health").body)["cluster"]["instances"].size();
  };
  REQUIRE(eventually([&] { return instances(*a) == 2 && instances(*b) == 2; }, 10s));
  // B's first generation is serving a slow request of A's when it is replaced.
  auto slow = std::async(std::launch::async, [&] { return HttpClient(a->port(), 10000).get("/ask-sleep/1500"); });
  REQUIRE(eventually([&] { return std::filesystem::exists(files.path / "sleeping-1500"); }));

  const std::string out =
      (std::filesystem::temp_directory_path() / ("edri-reload-nats-" + std::to_string(::getpid()))).string();
  const pid_t wrk = spawn_logged(
      {"/usr/bin/wrk", "-t2", "-c16", "-d6s", "http://127.0.0.1:" + std::to_string(a->port()) + "/other/pid"}, out);
  std::this_thread::sleep_for(500ms);
  CHECK(reload_to(*b, 2));
  std::this_thread::sleep_for(1200ms);
  CHECK(reload_to(*a, 2));
  std::this_thread::sleep_for(1200ms);
  CHECK(reload_to(*b, 3));
  const auto report = wrk_report(wrk, out);
  INFO(report);
  CHECK(wrk_requests(report) > 1000);
  CHECK(report.find("Non-2xx") == std::string::npos);
  CHECK(report.find("Socket errors") == std::string::npos);

  const auto answered = slow.get();
  CHECK(answered.status == 200);
  CHECK(nlohmann::json::parse(answered.body)["status"] == 200);
  // Each replaced switch handed its domain over and its generation went;
  // the one left of each instance serves, and says hello, alone.
  CHECK(b->log().find("domain other handed over: NATS sends its requests to the other instances") != std::string::npos);
  CHECK(eventually([&] { return count_of(b->log(), "finished and stopped") == 2; }, 10s));
  CHECK(eventually([&] { return count_of(a->log(), "finished and stopped") == 1; }, 10s));
  CHECK(eventually([&] { return instances(*a) == 2 && instances(*b) == 2; }, 10s));
  HttpClient c(a->port());
  const auto pid = nlohmann::json::parse(c.get("/other/pid").body)["pid"].get<pid_t>();
  CHECK(pid == b->child("manager other"));
  CHECK(shm_segments(b->segment_prefix()).size() == 1);
  CHECK(b->stop() == 0);
  CHECK(a->stop() == 0);
}

TEST_CASE("while a reload drains an instance joined over NATS, the others list its old generation as draining",
          "[reload][cluster]") {
  NatsServer nats;
  auto instance = [&](const std::string& domains) {
    return std::make_unique<ServerProcess>(
        std::vector<std::string>{test_plugin_path("test_app")},
        std::map<std::string, std::string>{
            {"EDRI_NATS_URL", nats.url()}, {"EDRI_DOMAINS", domains}, {"EDRI_RELOAD_GRACE", "3"}});
  };
  auto a = instance("test"), b = instance("other");
  const auto listed = [](const ServerProcess& s) {
    HttpClient c(s.port());
    return nlohmann::json::parse(c.get("/health").body)["cluster"]["instances"];
  };
  const auto draining = [](const nlohmann::json& instances) {
    std::size_t n = 0;
    for (const auto& i : instances) n += i.value("draining", false);
    return n;
  };
  REQUIRE(eventually([&] { return listed(*a).size() == 2 && listed(*b).size() == 2; }, 10s));
  // A WebSocket keeps B's first generation draining for EDRI_RELOAD_GRACE.
  WsClient ws(b->port());
  CHECK(ws.command({{"command", "publish"}, {"n", 0}}).contains("response"));
  REQUIRE(reload_to(*b, 2));
  nlohmann::json seen;
  CHECK(eventually(
      [&] {
        seen = listed(*a);
        return seen.size() == 3 && draining(seen) == 1;
      },
      5s));
  INFO(seen.dump());
  for (const auto& i : seen)
    if (i.value("draining", false)) CHECK(i["domains"] == nlohmann::json::array({"other"}));
  // B lists its old generation as A does; itself, the new one, serves.
  CHECK(eventually([&] { return draining(listed(*b)) == 1 && !listed(*b)[0].value("draining", false); }, 5s));
  // Past the grace the old generation goes, with a goodbye.
  CHECK(eventually([&] { return listed(*a).size() == 2 && draining(listed(*a)) == 0; }, 10s));
  CHECK(b->stop() == 0);
  CHECK(a->stop() == 0);
}
