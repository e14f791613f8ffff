// Using more than one core: worker threads in a manager (a bounded queue,
// failures as answers), CPU work in several managers, and round trips
// through the router between managers.
#include <algorithm>
#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/http_client.hpp"
#include "support/server_process.hpp"
#include "support/test_helpers.hpp"

using namespace edri::test;
using nlohmann::json;

namespace {

std::string get_request(const std::string& path) { return "GET " + path + " HTTP/1.1\r\nHost: x\r\n\r\n"; }

}  // namespace

TEST_CASE("CPU work on worker threads: the manager keeps answering meanwhile", "[workers]") {
  ServerProcess server({plugin_path("bench_app")}, {{"BENCH_WORKER", "thread"}, {"BENCH_MAXW", "2"}});
  const pid_t manager = server.child("manager bench");
  CHECK(thread_count(manager) == 1);  // no pool until the first job
  HttpClient slow(server.port(), 20000);
  slow.send_raw(get_request("/cpu/1500"));
  // The handler has handed its job over: the same manager answers at once.
  HttpClient fast(server.port());
  CHECK(fast.get("/noop").status == 200);
  CHECK(fast.get("/cpu/1").status == 200);
  CHECK(thread_count(manager) == 3);  // the loop and BENCH_MAXW=2 workers
  const auto r = slow.read_response();
  CHECK(r.status == 200);
  CHECK(r.body == R"({"ok":true})");
}

TEST_CASE("a full worker queue answers 503 at once; queued jobs still run", "[workers]") {
  ServerProcess server({plugin_path("bench_app")},
                       {{"BENCH_WORKER", "thread"}, {"BENCH_MAXW", "1"}, {"EDRI_WORKER_QUEUE", "1"}});
  std::vector<std::unique_ptr<HttpClient>> clients;
  for (int i = 0; i < 3; ++i) {
    clients.push_back(std::make_unique<HttpClient>(server.port(), 20000));
    clients.back()->send_raw(get_request("/cpu/800"));
  }
  std::vector<int> statuses;
  for (auto& c : clients) {
    const auto r = c->read_response();
    statuses.push_back(r.status);
    if (r.status == 503) CHECK(r.header("retry-after") == "1");
  }
  std::sort(statuses.begin(), statuses.end());
  // One running, one waiting, one refused.
  CHECK(statuses == std::vector<int>{200, 200, 503});
  CHECK(http_get(server.port(), "/cpu/1").status == 200);
}

TEST_CASE("a worker job that throws is a 500; the manager carries on", "[workers]") {
  ServerProcess server({test_plugin_path("test_app")});
  auto r = http_get(server.port(), "/thread/throw");
  CHECK(r.status == 500);
  CHECK(json::parse(r.body)["detail"].get<std::string>().find("job failed") != std::string::npos);
  r = http_get(server.port(), "/thread/tid");
  REQUIRE(r.status == 200);
  const auto j = json::parse(r.body);
  CHECK(j["worker"] != j["manager"]);
  CHECK(j["manager"] == server.child("manager test"));
}

TEST_CASE("/busy runs in each of BENCH_MANAGERS manager processes", "[workers]") {
  ServerProcess server({plugin_path("bench_app")}, {{"BENCH_MANAGERS", "3"}});
  // Manager 0 is the bench manager; the others are processes of their own.
  CHECK(server.child("manager busy1") > 0);
  CHECK(server.child("manager busy2") > 0);
  for (int k = 0; k < 3; ++k) CHECK(http_get(server.port(), "/busy/" + std::to_string(k) + "/2").status == 200);
  CHECK(http_get(server.port(), "/busy/3/2").status == 404);
}

TEST_CASE("/route/{n} makes n round trips through the router", "[workers]") {
  for (const std::string window : {"1", "64"}) {
    ServerProcess server({plugin_path("bench_app")}, {{"BENCH_ROUTE_WINDOW", window}});
    INFO("window " << window);
    const auto r = http_get(server.port(), "/route/5000");
    REQUIRE(r.status == 200);
    const auto j = json::parse(r.body);
    CHECK(j["round_trips"] == 5000);
    CHECK(j["per_second"].get<double>() > 0);
    CHECK(json::parse(http_get(server.port(), "/route/0").body)["round_trips"] == 0);
  }
}
