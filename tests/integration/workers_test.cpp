// Using more than one core: worker threads in a manager (a bounded queue,
// failures as answers), CPU work in several managers, and round trips
// through the router between managers.
#include <algorithm>
#include <catch2/catch.hpp>
#include <csignal>
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

// Sends GET `path` on three connections at once; the statuses, sorted. A 503
// must say when to retry.
std::vector<int> sorted_statuses_of_three(std::uint16_t port, const std::string& path) {
  std::vector<std::unique_ptr<HttpClient>> clients;
  for (int i = 0; i < 3; ++i) {
    clients.push_back(std::make_unique<HttpClient>(port, 20000));
    clients.back()->send_raw(get_request(path));
  }
  std::vector<int> statuses;
  for (auto& c : clients) {
    const auto r = c->read_response();
    statuses.push_back(r.status);
    if (r.status == 503) CHECK(r.header("retry-after") == "1");
  }
  std::sort(statuses.begin(), statuses.end());
  return statuses;
}

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

TEST_CASE("a full worker queue answers 503 at once: queued jobs still run", "[workers]") {
  ServerProcess server({plugin_path("bench_app")},
                       {{"BENCH_WORKER", "thread"}, {"BENCH_MAXW", "1"}, {"EDRI_WORKER_QUEUE", "1"}});
  // One running, one waiting, one refused.
  CHECK(sorted_statuses_of_three(server.port(), "/cpu/800") == std::vector<int>{200, 200, 503});
  CHECK(http_get(server.port(), "/cpu/1").status == 200);
}

TEST_CASE("a worker job that throws is a 500: the manager carries on", "[workers]") {
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

// --- Worker processes: tasks registered by name, run in processes of their own.

namespace {

std::vector<pid_t> workers_of(pid_t manager) {
  std::vector<pid_t> out;
  for (const auto& c : children_of(manager))
    if (c.cmdline.find("edri-server: worker ") == 0) out.push_back(c.pid);
  std::sort(out.begin(), out.end());
  return out;
}

pid_t task_pid(std::uint16_t port) {
  const auto r = http_get(port, "/task/pid");
  if (r.status != 200) return -1;
  return static_cast<pid_t>(std::stol(json::parse(r.body)["output"].get<std::string>()));
}

}  // namespace

TEST_CASE("tasks run in worker processes the manager started: inputs and outputs travel intact", "[workers]") {
  ServerProcess server({test_plugin_path("task_app")});
  const pid_t manager = server.child("manager jobs");
  REQUIRE(manager > 0);
  // Registry::worker_processes(2): two, named after their manager.
  REQUIRE(eventually([&] { return workers_of(manager).size() == 2; }));
  bool titled = false;
  for (const auto& c : children_of(manager))
    titled = titled || c.cmdline.find("edri-server: worker 1 of manager jobs") == 0;
  CHECK(titled);
  const auto workers = workers_of(manager);
  const auto r = http_get(server.port(), "/task/pid");
  REQUIRE(r.status == 200);
  const auto j = json::parse(r.body);
  CHECK(j["manager"] == manager);  // `then` runs in the manager...
  const auto worker = static_cast<pid_t>(std::stol(j["output"].get<std::string>()));
  CHECK(std::find(workers.begin(), workers.end(), worker) != workers.end());  // ...the task in a worker
  // Bytes through the rings both ways: a body of every byte value but NUL
  // and a large one.
  std::string body;
  for (int i = 1; i < 256; ++i) body.push_back(static_cast<char>(i));
  HttpClient c(server.port());
  auto e = c.request("POST", "/echo-task", body);
  CHECK(e.status == 200);
  CHECK(e.body == body);
  const std::string large(300000, 'q');
  e = c.request("POST", "/echo-task", large);
  CHECK(e.status == 200);
  CHECK(e.body == large);
  // A plugin's metric written by a task counts, as a handler's would.
  CHECK(metric_value(http_get(server.port(), "/metrics").body, "task_echoes_total{process=\"worker\"}") == 2);
}

TEST_CASE("a task's failures are answers: it threw, it is unknown, its input or output is too large", "[workers]") {
  ServerProcess server({test_plugin_path("task_app")});
  auto r = http_get(server.port(), "/task/throw");
  CHECK(r.status == 500);
  CHECK(json::parse(r.body)["detail"] == "task failed: task exploded");
  r = http_get(server.port(), "/task/nope");
  CHECK(r.status == 500);
  CHECK(json::parse(r.body)["detail"].get<std::string>().find("no task named nope") != std::string::npos);
  r = http_get(server.port(), "/huge-input");
  CHECK(r.status == 500);
  CHECK(json::parse(r.body)["detail"].get<std::string>().find("larger than a worker takes") != std::string::npos);
  r = http_get(server.port(), "/task/big?input=3000000");
  CHECK(r.status == 500);
  CHECK(json::parse(r.body)["detail"].get<std::string>().find("larger than a channel record") != std::string::npos);
  // The workers took none of it badly.
  const auto workers = workers_of(server.child("manager jobs"));
  CHECK(workers.size() == 2);
  CHECK(http_get(server.port(), "/task/echo?input=still+here").status == 200);
  CHECK(workers_of(server.child("manager jobs")) == workers);
}

TEST_CASE("a killed worker process: its task fails with 503 at once and a new worker takes its place", "[workers]") {
  ServerProcess server({test_plugin_path("task_app")}, {{"EDRI_WORKER_PROCESSES", "1"}});
  const pid_t manager = server.child("manager jobs");
  REQUIRE(eventually([&] { return workers_of(manager).size() == 1; }));
  const pid_t first = workers_of(manager).front();
  HttpClient slow(server.port(), 20000);
  slow.send_raw(get_request("/task/sleep?input=15000"));
  // Wait until the worker holds the task (it sleeps in nanosleep), then kill it.
  REQUIRE(eventually([&] {
    std::ifstream f("/proc/" + std::to_string(first) + "/wchan");
    std::string w;
    f >> w;
    return w.find("nanosleep") != std::string::npos;
  }));
  const auto t0 = std::chrono::steady_clock::now();
  ::kill(first, SIGKILL);
  const auto r = slow.read_response();
  CHECK(r.status == 503);
  CHECK(r.header("retry-after") == "1");
  CHECK(json::parse(r.body)["detail"].get<std::string>().find("SIGKILL") != std::string::npos);
  // Answered when the worker died, not when the task would have ended.
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(10));
  // Replaced: a new worker of the same manager runs the next task.
  REQUIRE(eventually([&] { return workers_of(manager).size() == 1 && workers_of(manager).front() != first; }));
  const pid_t second = task_pid(server.port());
  CHECK(second == workers_of(manager).front());
  CHECK(server.child("manager jobs") == manager);  // the manager itself never went down
  // A task that kills its own worker fails the same way, once.
  const auto crash = http_get(server.port(), "/task/crash");
  CHECK(crash.status == 503);
  CHECK(json::parse(crash.body)["detail"].get<std::string>().find("SIGABRT") != std::string::npos);
  CHECK(eventually([&] { return task_pid(server.port()) > 0; }));
  CHECK(task_pid(server.port()) != second);
}

TEST_CASE("a full worker process queue answers 503 at once: queued tasks still run", "[workers]") {
  ServerProcess server({test_plugin_path("task_app")}, {{"EDRI_WORKER_PROCESSES", "1"}, {"EDRI_WORKER_QUEUE", "1"}});
  // One running, one waiting, one refused.
  CHECK(sorted_statuses_of_three(server.port(), "/task/sleep?input=800") == std::vector<int>{200, 200, 503});
  CHECK(http_get(server.port(), "/task/pid").status == 200);
}

TEST_CASE("worker processes that cannot start: tasks fail with 503, never hang", "[workers]") {
  ServerProcess server({test_plugin_path("task_app")}, {{"TASK_APP_BREAK_WORKERS", "1"}});
  // The listener and manager load the plugin; only the workers refuse it.
  HttpClient c(server.port(), 20000);
  const auto r = c.get("/task/pid");
  INFO(r.body);
  CHECK(r.status == 503);
  CHECK(json::parse(r.body)["detail"].get<std::string>().find("no worker process") != std::string::npos);
  CHECK(c.get("/manager/pid").status == 200);  // the manager serves what needs no worker
  CHECK(server.log().find("refuses to load in a worker") != std::string::npos);
}

TEST_CASE("workers go with their manager: killed, it takes them along: stopped, it stops them", "[workers]") {
  ServerProcess server({test_plugin_path("task_app")});
  const pid_t manager = server.child("manager jobs");
  REQUIRE(eventually([&] { return workers_of(manager).size() == 2; }));
  const auto old_workers = workers_of(manager);
  ::kill(manager, SIGKILL);
  for (pid_t w : old_workers) CHECK(eventually([&] { return !process_alive(w); }));
  // The supervisor restarts the manager, and it starts new workers.
  REQUIRE(eventually([&] { return server.child("manager jobs") > 0 && server.child("manager jobs") != manager; },
                     std::chrono::milliseconds(10000)));
  const pid_t restarted = server.child("manager jobs");
  REQUIRE(eventually([&] { return workers_of(restarted).size() == 2; }));
  CHECK(eventually([&] { return http_get(server.port(), "/task/pid").status == 200; }));
  // A graceful stop: the manager stops and reaps its workers before it exits.
  const auto workers = workers_of(restarted);
  ::kill(server.pid(), SIGTERM);
  for (pid_t w : workers) CHECK(eventually([&] { return !process_alive(w); }, std::chrono::milliseconds(10000)));
  CHECK(server.stop() == 0);
}

TEST_CASE("BENCH_WORKER=process: /cpu runs in BENCH_MAXW worker processes", "[workers]") {
  ServerProcess server({plugin_path("bench_app")}, {{"BENCH_WORKER", "process"}, {"BENCH_MAXW", "2"}});
  const pid_t manager = server.child("manager bench");
  REQUIRE(eventually([&] { return workers_of(manager).size() == 2; }));
  HttpClient slow(server.port(), 20000);
  slow.send_raw(get_request("/cpu/1000"));
  // The manager is free meanwhile, and the other worker takes the next task.
  HttpClient fast(server.port());
  CHECK(fast.get("/noop").status == 200);
  CHECK(fast.get("/cpu/1").status == 200);
  const auto r = slow.read_response();
  CHECK(r.status == 200);
  CHECK(r.body == R"({"ok":true})");
  CHECK(thread_count(manager) == 1);  // no threads: the work ran elsewhere
}
