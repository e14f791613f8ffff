// Databases from handlers (include/edri/database.hpp, decision 0032)
// through the real server and a real Postgres started for each test:
// rows and parameters of every kind, batches, injection through every
// place a client's value comes from, transactions committed and rolled
// back (a throw, a failed statement, a cancelled request), timeouts, a
// client gone, a bounded queue, Postgres restarted under load, a
// connection limit reached, and the start-up errors of a declaration.
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "support/http_client.hpp"
#include "support/postgres_server.hpp"
#include "support/server_process.hpp"
#include "support/test_helpers.hpp"

using namespace edri::test;
using nlohmann::json;
using namespace std::chrono_literals;

namespace {

void make_schema(const PostgresServer& pg) {
  pg.execute(
      "CREATE TABLE items(id int PRIMARY KEY, name text, score float8, flag bool, tags jsonb);"
      "INSERT INTO items VALUES (1, 'one', 1.5, true, '[\"a\"]'), (2, 'two', NULL, false, NULL), "
      "(3, 'three', -2, NULL, '{\"k\":1}');"
      "CREATE TABLE log(id serial PRIMARY KEY, line text NOT NULL);");
}

std::map<std::string, std::string> env_for(const PostgresServer& pg, std::map<std::string, std::string> more = {}) {
  more["EDRI_DATABASES"] = "main=" + pg.url();
  return more;
}

// A POST on a fresh connection, with one extra header.
HttpResponse post(std::uint16_t port, const std::string& path, const std::string& body,
                  const std::string& header = "X-Value: h") {
  HttpClient c(port);
  c.send_raw("POST " + path + " HTTP/1.1\r\nHost: t\r\n" + header +
             "\r\nContent-Type: text/plain\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
  return c.read_response();
}

std::int64_t logged(std::uint16_t port) { return json::parse(http_get(port, "/db/log").body)["n"].get<std::int64_t>(); }

// Statements the server runs now whose text contains `what`.
int running(const PostgresServer& pg, const std::string& what) {
  return std::stoi(*pg.rows("SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND query LIKE '%" + what +
                            "%' AND pid <> pg_backend_pid()")[0][0]);
}

// Connections of clients other than this one.
int connections(const PostgresServer& pg) {
  return std::stoi(
      *pg.rows("SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> "
               "pg_backend_pid()")[0][0]);
}

}  // namespace

TEST_CASE("a handler reads rows and binds parameters of every kind, NULLs included", "[database][postgres]") {
  PostgresServer pg;
  make_schema(pg);
  ServerProcess server({test_plugin_path("database")}, env_for(pg));
  auto r = http_get(server.port(), "/db/items/1");
  REQUIRE(r.status == 200);
  CHECK(json::parse(r.body) == json::parse(R"({"id":1,"name":"one","score":1.5,"flag":true,"tags":["a"]})"));
  r = http_get(server.port(), "/db/items/2");
  CHECK(json::parse(r.body) == json::parse(R"({"id":2,"name":"two","score":null,"flag":false,"tags":null})"));
  CHECK(http_get(server.port(), "/db/items/9").status == 404);
  r = http_get(server.port(), "/db/types");
  REQUIRE(r.status == 200);
  const auto j = json::parse(r.body);
  CHECK(j["i"] == 9007199254740993);  // exact: not through a double
  CHECK(j["f"] == 0.25);
  CHECK(j["b"] == true);
  CHECK(j["t"] == "text ✓");
  CHECK(j["n"].is_null());
  CHECK(j["j"] == json::parse(R"({"a":[1,2]})"));
  CHECK(j["d"] == "1.50");  // numeric stays text: a double would round it
  // The callback interface.
  r = http_get(server.port(), "/db/callback/3");
  CHECK(r.status == 200);
  CHECK(json::parse(r.body)["name"] == "three");
  // A refused statement: 500 naming its SQLSTATE, not the schema.
  r = http_get(server.port(), "/db/broken");
  CHECK(r.status == 500);
  CHECK(r.body.find("42703") != std::string::npos);
  CHECK(r.body.find("no_such_column") == std::string::npos);
}

TEST_CASE("twenty statements of one request go together, and a value is never SQL", "[database][postgres]") {
  PostgresServer pg;
  make_schema(pg);
  ServerProcess server({test_plugin_path("database")}, env_for(pg, {{"EDRI_DATABASE_POOL", "1"}}));
  auto r = http_get(server.port(), "/db/many?n=20");
  INFO(r.body);
  REQUIRE(r.status == 200);
  const auto rows = json::parse(r.body);
  REQUIRE(rows.size() == 20);
  for (std::size_t i = 0; i < 20; ++i) CHECK(rows[i]["id"] == int(i % 3 + 1));
  // Injection through the path, the query, a header and the body: each
  // comes back as the text it was, and the table is still there.
  const std::string attack = "x'); DROP TABLE items; --";
  r = post(server.port(),
           "/db/echo/x%27%29%3B%20DROP%20TABLE%20items%3B%20--?q=x%27%29%3B%20DROP%20TABLE%20items%3B%20--", attack,
           "X-Value: " + attack);
  REQUIRE(r.status == 200);
  for (const auto& row : json::parse(r.body)) {
    CHECK(row["v"] == attack);
    CHECK(row["items"] == 3);
  }
  CHECK(std::stoi(*pg.rows("SELECT count(*) FROM items")[0][0]) == 3);
}

TEST_CASE("a transaction commits, and rolls back on a throw, a failed statement and a cancelled request",
          "[database][postgres]") {
  PostgresServer pg;
  make_schema(pg);
  // Two connections: a transaction left holding one would starve the
  // checks that follow.
  ServerProcess server({test_plugin_path("database")}, env_for(pg, {{"EDRI_DATABASE_POOL", "2"}}));
  CHECK(post(server.port(), "/db/log/commit", "").status == 200);
  CHECK(logged(server.port()) == 1);
  auto r = post(server.port(), "/db/log/throw", "");
  CHECK(r.status == 500);
  CHECK(logged(server.port()) == 1);
  r = post(server.port(), "/db/log/fail", "");
  CHECK(r.status == 500);
  CHECK(r.body.find("22012") != std::string::npos);  // division by zero
  CHECK(logged(server.port()) == 1);
  // The client goes away while the handler waits inside its transaction.
  for (int i = 0; i < 3; ++i) {
    const int fd = connect_loopback(server.port());
    const std::string head = "POST /db/log/wait HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n";
    REQUIRE(::send(fd, head.data(), head.size(), MSG_NOSIGNAL) == ssize_t(head.size()));
    std::this_thread::sleep_for(300ms);
    ::close(fd);
    CHECK(eventually([&] { return json::parse(http_get(server.port(), "/db/log").body)["cancelled"] == i + 1; }, 3s));
  }
  CHECK(logged(server.port()) == 1);
  CHECK(std::stoi(*pg.rows("SELECT count(*) FROM log")[0][0]) == 1);
  // Every connection was given back: more transactions than connections.
  for (int i = 0; i < 4; ++i) CHECK(post(server.port(), "/db/log/commit", "").status == 200);
  CHECK(logged(server.port()) == 5);
  CHECK(std::stoi(*pg.rows("SELECT count(*) FROM pg_stat_activity WHERE state LIKE 'idle in transaction%'")[0][0]) ==
        0);
}

TEST_CASE("a statement past its timeout, or whose client went away, is stopped in the server too",
          "[database][postgres]") {
  PostgresServer pg;
  make_schema(pg);
  ServerProcess server({test_plugin_path("database")}, env_for(pg, {{"EDRI_DATABASE_TIMEOUT", "1"}}));
  const auto t0 = std::chrono::steady_clock::now();
  const auto r = http_get(server.port(), "/db/sleep/4000");
  const auto took = std::chrono::steady_clock::now() - t0;
  CHECK(r.status == 504);
  CHECK(took < 2500ms);
  CHECK(eventually([&] { return running(pg, "pg_sleep") == 0; }, 1s));
  CHECK(http_get(server.port(), "/db/items/1").status == 200);
}

TEST_CASE("a statement whose client went away is cancelled in the server", "[database][postgres]") {
  PostgresServer pg;
  make_schema(pg);
  ServerProcess server({test_plugin_path("database")}, env_for(pg));
  const int fd = connect_loopback(server.port());
  const std::string head = "GET /db/sleep/20000 HTTP/1.1\r\nHost: t\r\n\r\n";
  REQUIRE(::send(fd, head.data(), head.size(), MSG_NOSIGNAL) == ssize_t(head.size()));
  REQUIRE(eventually([&] { return running(pg, "pg_sleep") == 1; }, 3s));
  ::close(fd);
  // Statement timeout 30 s: only a cancel stops it this soon.
  CHECK(eventually([&] { return running(pg, "pg_sleep") == 0; }, 2s));
  CHECK(json::parse(http_get(server.port(), "/db/log").body)["cancelled"] == 1);
}

TEST_CASE("past EDRI_DATABASE_QUEUE a statement is refused with 503 at once", "[database][postgres]") {
  PostgresServer pg;
  make_schema(pg);
  ServerProcess server({test_plugin_path("database")}, env_for(pg, {{"EDRI_DATABASE_QUEUE", "2"}}));
  // The pool connected: the two statements go to two connections, not
  // both to the first one ready.
  REQUIRE(eventually([&] { return connections(pg) == 4; }, 3s));
  std::vector<std::thread> slow;
  std::atomic<int> ok{0};
  for (int i = 0; i < 2; ++i) slow.emplace_back([&] { ok += http_get(server.port(), "/db/sleep/800").status == 200; });
  CHECK(eventually([&] { return running(pg, "pg_sleep") == 2; }, 3s));
  const auto r = http_get(server.port(), "/db/items/1");
  CHECK(r.status == 503);
  CHECK(r.header("retry-after") == "1");
  for (auto& t : slow) t.join();
  CHECK(ok == 2);
  CHECK(http_get(server.port(), "/db/items/1").status == 200);
}

TEST_CASE("Postgres restarted under load: 503 at once while it is down, then served again", "[database][postgres]") {
  PostgresServer pg;
  make_schema(pg);
  ServerProcess server({test_plugin_path("database")}, env_for(pg, {{"EDRI_DATABASE_POOL", "2"}}));
  std::atomic<bool> stop{false};
  std::atomic<int> ok{0}, unavailable{0}, other{0};
  std::atomic<long> slowest_ms{0};
  std::mutex mutex;
  std::string odd;  // the last answer neither 200 nor 503
  std::vector<std::thread> load;
  for (int i = 0; i < 4; ++i)
    load.emplace_back([&] {
      while (!stop) {
        const auto t0 = std::chrono::steady_clock::now();
        const auto got = http_get(server.port(), "/db/items/1");
        const int status = got.status;
        if (status != 200 && status != 503) {
          std::lock_guard lock(mutex);
          odd = std::to_string(status) + " " + got.body;
        }
        const long ms =
            std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
        if (ms > slowest_ms) slowest_ms = ms;
        (status == 200 ? ok : status == 503 ? unavailable : other)++;
      }
    });
  std::this_thread::sleep_for(300ms);
  pg.execute("CHECKPOINT");  // the schema outlives the crash (fsync is off)
  pg.kill();
  std::this_thread::sleep_for(700ms);
  const int ok_before_restart = ok;
  pg.restart();
  // Served again within the pool's backoff (at most 2 s).
  const bool back = eventually([&] { return http_get(server.port(), "/db/items/1").status == 200; }, 5s);
  std::this_thread::sleep_for(300ms);
  stop = true;
  for (auto& t : load) t.join();
  INFO(odd);
  INFO(server.log());
  CHECK(back);
  CHECK(ok > ok_before_restart);
  CHECK(unavailable > 0);
  CHECK(other == 0);
  CHECK(slowest_ms < 1500);  // nothing waited for a dead server
  CHECK(server.child("manager db") > 0);
}

TEST_CASE("a connection limit reached leaves the pool serving with fewer", "[database][postgres]") {
  PostgresServer pg;
  make_schema(pg);
  pg.execute("CREATE ROLE few LOGIN CONNECTION LIMIT 2; GRANT SELECT ON items TO few;");
  std::string url = pg.url();
  url.replace(url.find("edri@"), 5, "few@");
  ServerProcess server({test_plugin_path("database")},
                       {{"EDRI_DATABASES", "main=" + url}, {"EDRI_DATABASE_POOL", "4"}});
  for (int i = 0; i < 20; ++i) CHECK(http_get(server.port(), "/db/items/1").status == 200);
  CHECK(std::stoi(*pg.rows("SELECT count(*) FROM pg_stat_activity WHERE usename = 'few'")[0][0]) == 2);
  CHECK(server.log().find("too many connections for role") != std::string::npos);
}

TEST_CASE("a database declaration without a URL, or a URL for no declared database, stops start-up", "[database]") {
  auto r = run_server_to_exit({}, {{"EDRI_PLUGINS", test_plugin_path("database")}});
  CHECK(r.status == 3);
  CHECK(r.err.find("declares the database main with no URL") != std::string::npos);
  r = run_server_to_exit({}, {{"EDRI_PLUGINS", test_plugin_path("database")},
                              {"EDRI_DATABASES", "main=postgresql://127.0.0.1:1/x other=sqlite:/tmp/x.db"}});
  CHECK(r.status == 3);
  CHECK(r.err.find("names the database other, which no plugin declares") != std::string::npos);
  r = run_server_to_exit({}, {{"EDRI_PLUGINS", test_plugin_path("database")}, {"EDRI_DATABASES", "main=mysql://x"}});
  CHECK(r.status == 3);
  CHECK(r.err.find("postgresql:// or sqlite:") != std::string::npos);
  r = run_server_to_exit({}, {{"EDRI_PLUGINS", test_plugin_path("database")}, {"EDRI_DATABASES", "main"}});
  CHECK(r.status == 2);
  CHECK(r.err.find("is not name=url") != std::string::npos);
}
