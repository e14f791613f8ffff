// The TechEmpower suite of benchmarks/techempower/ held to its word:
// schema.sql makes the benchmark's tables in a real Postgres, the FastAPI
// reference passes verify.py against them (its database checks, and its
// read-back of updates through /queries), edri with techempower.so passes
// it too once that plugin is built, and a server that breaks one rule of
// each test type (tests/techempower/broken_server.py) fails every test
// type, each for its own rule. A verifier that passes everything would
// otherwise go unnoticed, and the bench would measure servers it never
// really checked.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "load_generator.hpp"
#include "loopback_port.hpp"
#include "support/http_client.hpp"
#include "support/postgres_server.hpp"
#include "support/server_process.hpp"

using edri::test::PostgresServer;
using nlohmann::json;
using namespace std::chrono_literals;

namespace {

namespace fs = std::filesystem;

constexpr const char* kPython = "/usr/bin/python3";  // Debian's, where fastapi and asyncpg are
const std::string kSuiteDir = EDRI_TECHEMPOWER_DIR;
// The seven test types, by verify.py's names.
const std::vector<std::string> kTests{"json", "plaintext", "db", "query", "cached_query", "fortune", "update"};

// A folder under /tmp for the logs and reports of one test, removed with it.
struct TempDir {
  std::string path;
  TempDir() {
    std::string tmpl = "/tmp/edri-test-tfb.XXXXXX";
    if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
};

// A helper server started by the test (uvicorn, the broken server),
// stopped by its PID: SIGTERM, then SIGKILL if it lingers.
class Child {
 public:
  Child(const std::vector<std::string>& args, std::string log_path)
      : log_path_(std::move(log_path)), pid_(edri::test::spawn_logged(args, log_path_)) {}
  ~Child() {
    ::kill(pid_, SIGTERM);
    if (!exited_within(5s)) {
      ::kill(pid_, SIGKILL);
      exited_within(5s);
    }
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  // Waits until GET `path` answers 200; throws with the log when the
  // process exits first or 30 s pass.
  void wait_serving(std::uint16_t port, const std::string& path) {
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (!edri::bench::probe_http_ok("127.0.0.1", port, path, 0.5)) {
      if (exited_within(0ms)) throw std::runtime_error("the server exited; its log:\n" + log());
      if (std::chrono::steady_clock::now() > deadline)
        throw std::runtime_error("GET " + path + " did not answer 200 in 30 s; the log:\n" + log());
      std::this_thread::sleep_for(20ms);
    }
  }
  std::string log() const { return edri::test::read_file(log_path_); }

 private:
  bool exited_within(std::chrono::milliseconds limit) {
    if (reaped_) return true;
    const auto deadline = std::chrono::steady_clock::now() + limit;
    for (;;) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) != 0) return reaped_ = true;
      if (std::chrono::steady_clock::now() >= deadline) return false;
      std::this_thread::sleep_for(10ms);
    }
  }
  std::string log_path_;
  pid_t pid_;
  bool reaped_ = false;
};

// The FastAPI reference on `port`, on the database at `url`.
std::vector<std::string> fastapi_command(std::uint16_t port, const std::string& url) {
  // env(1) sets the variables for uvicorn alone; --app-dir finds
  // fastapi_app.py without a working folder of its own.
  return {"/usr/bin/env",    "TFB_DATABASE_URL=" + url,
          "TFB_POOL_SIZE=4", "PYTHONDONTWRITEBYTECODE=1",
          kPython,           "-m",
          "uvicorn",         "fastapi_app:app",
          "--app-dir",       kSuiteDir,
          "--host",          "127.0.0.1",
          "--port",          std::to_string(port),
          "--loop",          "uvloop",
          "--http",          "httptools",
          "--log-level",     "warning"};
}

struct Verdict {
  int exit_code = -1;
  std::string output;
  json report;  // verify.py's --json-report
};

// verify.py against 127.0.0.1:port with `options`, bounded in time.
Verdict verify(std::uint16_t port, const std::string& options, const TempDir& dir) {
  const std::string report = dir.path + "/report.json";
  fs::remove(report);
  const std::string command = "timeout 120 " + std::string(kPython) + " " + kSuiteDir +
                              "/verify.py http://127.0.0.1:" + std::to_string(port) + " --json-report " + report + " " +
                              options + " 2>&1";
  Verdict v;
  FILE* p = ::popen(command.c_str(), "r");
  REQUIRE(p);
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) v.output.append(buf, n);
  const int status = ::pclose(p);
  v.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream in(report);
  if (in) v.report = json::parse(in, nullptr, false);
  return v;
}

std::string schema() { return edri::test::read_file(kSuiteDir + "/schema.sql"); }

}  // namespace

TEST_CASE("TechEmpower: schema.sql makes the benchmark's World and Fortune tables", "[postgres][techempower]") {
  PostgresServer pg;
  pg.execute(schema());
  const auto world = pg.rows(
      "SELECT count(*), count(DISTINCT id), min(id), max(id), min(randomnumber) >= 1, max(randomnumber) <= 10000, "
      "count(DISTINCT randomnumber) > 5000 FROM world");
  REQUIRE(world.size() == 1);
  CHECK(world[0][0] == "10000");
  CHECK(world[0][1] == "10000");
  CHECK(world[0][2] == "1");
  CHECK(world[0][3] == "10000");
  CHECK(world[0][4] == "t");  // randomNumber within 1..10000
  CHECK(world[0][5] == "t");
  CHECK(world[0][6] == "t");  // drawn, not one number for all

  const auto fortunes = pg.rows("SELECT id, message FROM fortune ORDER BY id");
  REQUIRE(fortunes.size() == 12);
  CHECK(*fortunes[10][1] == "<script>alert(\"This should not be displayed in a browser alert box.\");</script>");
  CHECK(*fortunes[11][1] == "フレームワークのベンチマーク");
  CHECK(*fortunes[1][1] == "A computer scientist is someone who fixes things that aren't broken.");

  // Loaded again, it resets the tables instead of failing on them.
  pg.execute("UPDATE world SET randomnumber = 0");
  pg.execute(schema());
  CHECK(pg.rows("SELECT count(*) FROM world WHERE randomnumber = 0")[0][0] == "0");
}

TEST_CASE("TechEmpower: the FastAPI reference passes verify.py, with the database and without it",
          "[postgres][techempower]") {
  PostgresServer pg;
  pg.execute(schema());
  TempDir dir;
  const std::uint16_t port = edri::bench::free_loopback_port();
  Child app(fastapi_command(port, pg.url()), dir.path + "/uvicorn.log");
  app.wait_serving(port, "/json");

  // Every test type, its rows compared with the tables.
  const Verdict full = verify(port, "--database-url " + pg.url(), dir);
  INFO(full.output << app.log());
  CHECK(full.exit_code == 0);
  REQUIRE(full.report.is_object());
  CHECK(full.report["passed"] == true);
  for (const auto& test : kTests) CHECK(full.report["tests"][test]["status"] == "pass");

  // Updates read back through /queries, as against a server whose
  // database the verifier cannot reach.
  const Verdict read_back = verify(port, "--only update --no-date-wait", dir);
  INFO(read_back.output);
  CHECK(read_back.exit_code == 0);
  CHECK(read_back.report["tests"]["update"]["status"] == "pass");
  CHECK(read_back.report["tests"]["json"]["status"] == "skipped");
}

TEST_CASE("TechEmpower: verify.py fails a server that breaks one rule of each test type, for that rule",
          "[techempower]") {
  TempDir dir;
  const std::uint16_t port = edri::bench::free_loopback_port();
  Child broken({kPython, EDRI_TECHEMPOWER_BROKEN_SERVER, std::to_string(port)}, dir.path + "/broken.log");
  broken.wait_serving(port, "/plaintext");

  const Verdict v = verify(port, "--no-date-wait", dir);
  INFO(v.output);
  CHECK(v.exit_code == 1);
  REQUIRE(v.report.is_object());
  CHECK(v.report["passed"] == false);
  // Each test type's failures name the rule the server breaks there.
  const std::map<std::string, std::string> rule{
      {"json", "Content-Type is 'text/plain'"},
      {"plaintext", "no Server header"},
      {"db", "id is \"" /* a string */},
      {"query", "queries=501: expected 500 World objects, got 501"},
      {"cached_query", "count=0: expected 1 World object"},
      {"fortune", "not HTML-escaped"},
      {"update", "the updates were not written"},
  };
  for (const auto& [test, words] : rule) {
    INFO(test);
    const json& result = v.report["tests"][test];
    CHECK(result["status"] == "fail");
    bool named = false;
    for (const auto& failure : result["failures"])
      named = named || failure.get<std::string>().find(words) != std::string::npos;
    CHECK(named);
  }
}

TEST_CASE("TechEmpower: edri with techempower.so passes verify.py", "[postgres][techempower]") {
  const std::string plugin = edri::test::plugin_path("techempower");
  PostgresServer pg;
  pg.execute(schema());
  TempDir dir;
  edri::test::ServerProcess server({plugin},
                                   {{"TFB_DATABASE_URL", pg.url()},
                                    {"EDRI_DATABASE_POOL", "4"},
                                    {"EDRI_TEMPLATE_PATH", fs::path(plugin).parent_path() / "techempower_templates"}});
  // Listening comes before the pool has connected: the first /db waits.
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (!edri::bench::probe_http_ok("127.0.0.1", server.port(), "/db", 0.5) &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(50ms);
  const Verdict v = verify(server.port(), "--database-url " + pg.url(), dir);
  INFO(v.output << server.log());
  CHECK(v.exit_code == 0);
}

TEST_CASE("TechEmpower: concurrent updates through edri lose no write", "[postgres][techempower]") {
  // Eight clients update at once, often the same rows. Afterwards each row
  // an answer named holds one of the numbers answered for it (an update
  // answered but not written would leave another), and a row answered
  // once holds exactly that number.
  const std::string plugin = edri::test::plugin_path("techempower");
  PostgresServer pg;
  pg.execute(schema());
  pg.execute("UPDATE world SET randomnumber = 0");  // a value no update writes
  edri::test::ServerProcess server({plugin}, {{"TFB_DATABASE_URL", pg.url()}, {"EDRI_DATABASE_POOL", "2"}});
  std::map<int, std::vector<int>> answered;  // id -> numbers answered for it
  std::mutex mutex;
  std::vector<std::thread> clients;
  for (int c = 0; c < 8; ++c)
    clients.emplace_back([&] {
      for (int i = 0; i < 40; ++i) {
        const auto r = edri::test::http_get(server.port(), "/updates?queries=20");
        if (r.status != 200) continue;
        std::lock_guard lock(mutex);
        for (const auto& row : json::parse(r.body))
          answered[row["id"].get<int>()].push_back(row["randomNumber"].get<int>());
      }
    });
  for (auto& t : clients) t.join();
  REQUIRE(answered.size() > 1000);
  int mismatched = 0, exact = 0;
  for (const auto& row : pg.rows("SELECT id, randomnumber FROM world WHERE randomnumber <> 0")) {
    const int id = std::stoi(*row[0]);
    const int number = std::stoi(*row[1]);
    const auto it = answered.find(id);
    if (it == answered.end() || std::find(it->second.begin(), it->second.end(), number) == it->second.end())
      ++mismatched;
    else if (it->second.size() == 1)
      ++exact;
  }
  const auto untouched = pg.rows("SELECT count(*) FROM world WHERE randomnumber = 0");
  CHECK(mismatched == 0);
  CHECK(exact > 0);
  // Every row an answer named was written.
  CHECK(std::stoi(*untouched[0][0]) == 10000 - static_cast<int>(answered.size()));
}
