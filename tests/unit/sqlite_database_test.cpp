// SqliteDatabase (src/database/) on a real file, driven by a real
// EventLoop run here, its answers coming back from its threads: typed rows,
// parameters of every kind, SQL injection through parameters, failures,
// transactions (committed, rolled back by destruction, a failed statement
// then COMMIT), writes waiting behind a transaction, 8 writers at once,
// deadlines, stops, the queue's bound, and a loop that keeps turning while
// the writer works. Tagged [threads] as well: ThreadSanitizer runs them.
#include <sys/stat.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <functional>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <edri/async.hpp>
#include <edri/database.hpp>

#include "database/open_database.hpp"
#include "database/sqlite_database.hpp"
#include "runtime/event_loop.hpp"
#include "support/test_helpers.hpp"

using edri::Database;
using edri::EventLoop;
using edri::Rows;
using edri::SqlParams;
using edri::Statement;
using edri::database::DatabaseOptions;
using edri::database::SqliteDatabase;
using edri::test::TempDir;
using nlohmann::json;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

namespace {

constexpr auto kNever = Database::Deadline::max();
// A statement that runs until it is stopped.
const std::string kEndless = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c";

template <class F>
bool run_until(EventLoop& loop, F done, std::chrono::milliseconds limit = 20s) {
  const auto deadline = Clock::now() + limit;
  while (!done()) {
    if (Clock::now() > deadline) return false;
    loop.poll(10);
  }
  return true;
}

struct Fixture {
  TempDir dir;
  EventLoop loop;
  std::string file = (dir.path / "test.db").string();
  std::unique_ptr<SqliteDatabase> db;

  explicit Fixture(DatabaseOptions o = {}) { open(std::move(o)); }
  void open(DatabaseOptions o = {}) {
    db.reset();
    o.name = "test";
    if (o.url.empty()) o.url = "sqlite:" + file;
    db = std::make_unique<SqliteDatabase>(loop, std::move(o));
  }

  // A batch, waited for; its answer must come on a later turn.
  std::vector<Rows> all(std::vector<Statement> statements, Database::Deadline deadline = kNever) {
    std::optional<std::vector<Rows>> out;
    bool inside = true;
    db->run(std::move(statements), deadline, [&](std::vector<Rows> r) {
      CHECK_FALSE(inside);
      out = std::move(r);
    });
    inside = false;
    REQUIRE(run_until(loop, [&] { return out.has_value(); }));
    return std::move(*out);
  }
  Rows one(std::string sql, SqlParams params = {}) {
    std::vector<Statement> s;
    s.push_back(Statement{std::move(sql), std::move(params)});
    auto rows = all(std::move(s));
    REQUIRE(rows.size() == 1);
    return std::move(rows[0]);
  }
  std::int64_t count(const std::string& table) { return one("SELECT count(*) FROM " + table).at(0).int64(0); }

  std::shared_ptr<Database::Session> begin() {
    std::shared_ptr<Database::Session> session;
    bool answered = false;
    db->begin(kNever, [&](std::shared_ptr<Database::Session> s, Rows failure) {
      INFO(failure.error());
      session = std::move(s);
      answered = true;
    });
    REQUIRE(run_until(loop, [&] { return answered; }));
    REQUIRE(session);
    return session;
  }
  Rows in(Database::Session& s, std::string sql, SqlParams params = {}) {
    std::vector<Statement> one;
    one.push_back(Statement{std::move(sql), std::move(params)});
    std::optional<std::vector<Rows>> out;
    s.run(std::move(one), kNever, [&](std::vector<Rows> r) { out = std::move(r); });
    REQUIRE(run_until(loop, [&] { return out.has_value(); }));
    return std::move(out->at(0));
  }
  Rows end(Database::Session& s, bool commit) {
    std::optional<std::vector<Rows>> out;
    s.end(commit, kNever, [&](std::vector<Rows> r) { out = std::move(r); });
    REQUIRE(run_until(loop, [&] { return out.has_value(); }));
    return std::move(out->at(0));
  }
};

std::vector<Statement> batch(std::string sql, SqlParams params = {}) {
  std::vector<Statement> s;
  s.push_back(Statement{std::move(sql), std::move(params)});
  return s;
}

}  // namespace

TEST_CASE("SQLite: parameters of every kind come back as typed rows, NULLs as NULL", "[sqlite][threads]") {
  Fixture f;
  REQUIRE(f.one("CREATE TABLE t(id INTEGER PRIMARY KEY, n INTEGER, r REAL, s TEXT, b BOOLEAN, j JSON)").ok());
  const std::optional<std::string> absent;
  const std::string_view x = "x";
  // $N, ?N and ? all bind by position.
  const Rows a = f.one("INSERT INTO t(n, r, s, b, j) VALUES($1, $2, $3, $4, $5)",
                       {42, 0.5, std::string("h\xc3\xa9llo"), true, R"({"a":[1,2]})"});
  REQUIRE(a.ok());
  CHECK(a.affected_rows() == 1);
  REQUIRE(f.one("INSERT INTO t(n, r, s, b, j) VALUES(?1, ?2, ?3, ?4, ?5)", {nullptr, nullptr, absent, false, nullptr})
              .ok());
  REQUIRE(f.one("INSERT INTO t(n, r, s, b, j) VALUES(?, ?, ?, ?, ?)",
                {std::numeric_limits<std::int64_t>::max(), -1e300, x, std::optional<bool>(false), "[]"})
              .ok());

  const Rows rows = f.one("SELECT id, n, r, s, b, j FROM t ORDER BY id");
  REQUIRE(rows.ok());
  REQUIRE(rows.size() == 3);
  CHECK(rows.affected_rows() == 3);
  CHECK(rows.column_type(rows.column_index("n")) == Rows::ColumnType::integer);
  CHECK(rows.column_type(rows.column_index("r")) == Rows::ColumnType::real);
  CHECK(rows.column_type(rows.column_index("s")) == Rows::ColumnType::text);
  CHECK(rows.column_type(rows.column_index("b")) == Rows::ColumnType::boolean);
  CHECK(rows.column_type(rows.column_index("j")) == Rows::ColumnType::json);
  CHECK(rows[0].int64("n") == 42);
  CHECK(rows[0].float64("r") == 0.5);
  CHECK(rows[0].text("s") == "h\xc3\xa9llo");
  CHECK(rows[0].boolean("b"));
  for (const char* c : {"n", "r", "s", "j"}) CHECK(rows[1].is_null(c));
  CHECK_FALSE(rows[1].boolean("b"));
  CHECK_THROWS_AS(rows[1].int64("n"), edri::SqlValueError);
  CHECK(rows[2].int64("n") == std::numeric_limits<std::int64_t>::max());
  CHECK(rows[2].float64("r") == -1e300);
  CHECK(rows.to_json() == json::parse(R"([{"id":1,"n":42,"r":0.5,"s":"héllo","b":true,"j":{"a":[1,2]}},
                        {"id":2,"n":null,"r":null,"s":null,"b":false,"j":null},
                        {"id":3,"n":9223372036854775807,"r":-1e300,"s":"x","b":false,"j":[]}])"));
}

TEST_CASE("SQLite: numbered placeholders name their value wherever they stand, a column is typed by its values",
          "[sqlite][threads]") {
  Fixture f;
  // SQLite numbers $-names by first appearance: $2 here would be value 1.
  const Rows swapped = f.one("SELECT $2 AS second, $1 AS first, $2 AS again", {1, "two"});
  REQUIRE(swapped.ok());
  CHECK(swapped[0].text("second") == "two");
  CHECK(swapped[0].int64("first") == 1);
  CHECK(swapped[0].text("again") == "two");
  const Rows e = f.one("SELECT 1 + 1 AS two, 1.5 * 2 AS three, NULL AS none, 'a' || 'b' AS ab, 2.0 / 0 AS inf");
  REQUIRE(e.ok());
  CHECK(e.column_type(0) == Rows::ColumnType::integer);
  CHECK(e.column_type(1) == Rows::ColumnType::real);
  CHECK(e.column_type(3) == Rows::ColumnType::text);
  CHECK(e[0].to_json() == json::parse(R"({"two":2,"three":3.0,"none":null,"ab":"ab","inf":null})"));
  // Integers and text in one column: text, so that no value fails to read.
  const Rows mixed = f.one("SELECT 1 AS v UNION ALL SELECT 'x'");
  CHECK(mixed.column_type(0) == Rows::ColumnType::text);
  CHECK(mixed.to_json() == json::parse(R"([{"v":"1"},{"v":"x"}])"));
  // Integers and reals: real.
  CHECK(f.one("SELECT 1 AS v UNION ALL SELECT 2.5").to_json() == json::parse(R"([{"v":1.0},{"v":2.5}])"));
}

TEST_CASE("SQLite: an SQL injection through a parameter is stored as data", "[sqlite][threads]") {
  Fixture f;
  REQUIRE(f.one("CREATE TABLE users(name TEXT)").ok());
  const std::string evil = "x'); DROP TABLE users; --";
  REQUIRE(f.one("INSERT INTO users(name) VALUES($1)", {evil}).ok());
  REQUIRE(f.one("SELECT name FROM users WHERE name = ?1", {"x' OR '1'='1"}).empty());
  CHECK(f.one("SELECT name FROM users").at(0).text("name") == evil);
  // Nor does a text of two statements run its second.
  const Rows two = f.one("SELECT 1; DROP TABLE users");
  CHECK(two.failure() == Rows::Failure::statement);
  CHECK(f.count("users") == 1);
  // A trailing semicolon or comment is one statement.
  CHECK(f.one("SELECT 1; -- done").ok());
}

TEST_CASE("SQLite: failures say the extended result code, each statement of a batch on its own", "[sqlite][threads]") {
  Fixture f;
  REQUIRE(f.one("CREATE TABLE t(k TEXT PRIMARY KEY)").ok());
  std::vector<Statement> s;
  s.push_back(Statement{"INSERT INTO t VALUES($1)", {"a"}});
  s.push_back(Statement{"INSERT INTO t VALUES($1)", {"a"}});
  s.push_back(Statement{"SELEKT 1", {}});
  s.push_back(Statement{"INSERT INTO t VALUES($1)", {"b"}});
  s.push_back(Statement{"INSERT INTO t VALUES($2)", {"c"}});
  s.push_back(Statement{"SELECT :name", {1}});
  const auto rows = f.all(std::move(s));
  REQUIRE(rows.size() == 6);
  CHECK(rows[0].ok());
  CHECK(rows[1].failure() == Rows::Failure::statement);
  CHECK(rows[1].sqlstate() == "1555");  // SQLITE_CONSTRAINT_PRIMARYKEY
  CHECK(rows[1].error().find("UNIQUE") != std::string::npos);
  CHECK(rows[2].sqlstate() == "1");
  CHECK(rows[2].error().find("syntax error") != std::string::npos);
  CHECK(rows[3].ok());
  CHECK(rows[4].sqlstate() == "25");  // SQLITE_RANGE: it takes two values, one came
  CHECK(rows[5].sqlstate() == "25");
  CHECK(rows[1].problem().status == 500);
  CHECK(f.count("t") == 2);
}

TEST_CASE("SQLite: a batch that writes runs whole on the writer, in order", "[sqlite][threads]") {
  Fixture f;
  std::vector<Statement> s;
  s.push_back(Statement{"SELECT 1", {}});
  s.push_back(Statement{"CREATE TABLE t(v INTEGER)", {}});
  s.push_back(Statement{"INSERT INTO t VALUES(7)", {}});
  s.push_back(Statement{"SELECT v FROM t", {}});
  const auto rows = f.all(std::move(s));
  REQUIRE(rows.size() == 4);
  for (const auto& r : rows) CHECK(r.ok());
  CHECK(rows[3].at(0).int64(0) == 7);
  // Learned: the same batch again goes straight to the writer.
  s.clear();
  s.push_back(Statement{"INSERT INTO t VALUES(8)", {}});
  s.push_back(Statement{"SELECT count(*) FROM t", {}});
  CHECK(f.all(std::move(s))[1].at(0).int64(0) == 2);
}

TEST_CASE("SQLite: a transaction a statement opens is rolled back and refused", "[sqlite][threads]") {
  Fixture f;
  REQUIRE(f.one("CREATE TABLE t(v INTEGER)").ok());
  const Rows begun = f.one("BEGIN");
  CHECK(begun.failure() == Rows::Failure::statement);
  CHECK(begun.error().find("Database::begin") != std::string::npos);
  // The writer is not left inside it: another write commits on its own.
  REQUIRE(f.one("INSERT INTO t VALUES(1)").ok());
  f.open();
  CHECK(f.count("t") == 1);
}

TEST_CASE("SQLite: a committed transaction is kept, one dropped without end is rolled back", "[sqlite][threads]") {
  Fixture f;
  REQUIRE(f.one("CREATE TABLE t(v TEXT)").ok());
  {
    auto s = f.begin();
    REQUIRE(f.in(*s, "INSERT INTO t VALUES($1)", {"kept"}).ok());
    // Readers see what was committed before it, and are not held.
    CHECK(f.count("t") == 0);
    REQUIRE(f.end(*s, true).ok());
  }
  {
    auto s = f.begin();
    REQUIRE(f.in(*s, "INSERT INTO t VALUES($1)", {"dropped"}).ok());
  }  // destroyed without end(): ROLLBACK
  // A write queues behind that ROLLBACK on the writer.
  REQUIRE(f.one("INSERT INTO t VALUES('after')").ok());
  const Rows rows = f.one("SELECT v FROM t ORDER BY rowid");
  CHECK(rows.to_json() == json::parse(R"([{"v":"kept"},{"v":"after"}])"));
}

TEST_CASE("SQLite: COMMIT after a failed statement rolls back and says so", "[sqlite][threads]") {
  Fixture f;
  REQUIRE(f.one("CREATE TABLE t(k INTEGER PRIMARY KEY)").ok());
  auto s = f.begin();
  REQUIRE(f.in(*s, "INSERT INTO t VALUES(1)").ok());
  CHECK(f.in(*s, "INSERT INTO t VALUES(1)").failure() == Rows::Failure::statement);
  const Rows commit = f.end(*s, true);
  CHECK(commit.failure() == Rows::Failure::statement);
  CHECK(commit.error().find("rolled back") != std::string::npos);
  REQUIRE(f.one("INSERT INTO t VALUES(2)").ok());
  CHECK(f.one("SELECT k FROM t").to_json() == json::parse(R"([{"k":2}])"));
  // Ended, the session refuses more.
  std::optional<std::vector<Rows>> late;
  s->run(batch("SELECT 1"), kNever, [&](std::vector<Rows> r) { late = std::move(r); });
  REQUIRE(run_until(f.loop, [&] { return late.has_value(); }));
  CHECK(late->at(0).failure() == Rows::Failure::unavailable);
}

TEST_CASE("SQLite: writes wait behind a transaction, bounded by their deadline", "[sqlite][threads]") {
  Fixture f;
  REQUIRE(f.one("CREATE TABLE t(v TEXT)").ok());
  auto s = f.begin();
  std::optional<std::vector<Rows>> waited, timed_out;
  f.db->run(batch("INSERT INTO t VALUES('waited')"), kNever, [&](std::vector<Rows> r) { waited = std::move(r); });
  const auto start = Clock::now();
  f.db->run(batch("INSERT INTO t VALUES('late')"), start + 150ms,
            [&](std::vector<Rows> r) { timed_out = std::move(r); });
  // Each is first sent to a reader, which finds that it writes.
  REQUIRE(run_until(f.loop, [&] { return f.db->waiting_for_writer() == 2; }));
  // Another transaction waits too, behind them.
  std::shared_ptr<Database::Session> second;
  f.db->begin(kNever, [&](std::shared_ptr<Database::Session> b, Rows) { second = std::move(b); });
  CHECK(f.db->waiting_for_writer() == 3);
  REQUIRE(run_until(f.loop, [&] { return timed_out.has_value(); }));
  CHECK(Clock::now() - start >= 150ms);
  CHECK(timed_out->at(0).failure() == Rows::Failure::timeout);
  CHECK_FALSE(waited);
  REQUIRE(f.in(*s, "INSERT INTO t VALUES('first')").ok());
  REQUIRE(f.end(*s, true).ok());
  REQUIRE(run_until(f.loop, [&] { return waited.has_value() && second; }));
  CHECK(waited->at(0).ok());
  REQUIRE(f.in(*second, "INSERT INTO t VALUES('second')").ok());
  REQUIRE(f.end(*second, true).ok());
  CHECK(f.one("SELECT v FROM t ORDER BY rowid").to_json() ==
        json::parse(R"([{"v":"first"},{"v":"waited"},{"v":"second"}])"));
}

TEST_CASE("SQLite: 8 writers of 200 rows each, with reads between, lose nothing", "[sqlite][threads]") {
  Fixture f;
  REQUIRE(f.one("CREATE TABLE t(writer INTEGER, i INTEGER, PRIMARY KEY(writer, i))").ok());
  constexpr int kWriters = 8, kRows = 200;
  int acknowledged = 0, failures = 0, reads = 0, stale = 0, finished = 0;
  // Each writer sends its next row when the last one is answered, every
  // 20th in a transaction of its own, and a read after each: the read
  // sees at least every row acknowledged before it was sent.
  struct Writer {
    Fixture& f;
    int id;
    int& acknowledged;
    int& failures;
    int& reads;
    int& stale;
    int& finished;
    int i = 0;
    void next() {
      if (i == kRows) return void(++finished);
      Statement row{"INSERT INTO t(writer, i) VALUES($1, $2)", {id, i}};
      if (i % 20 != 0) {
        std::vector<Statement> s;
        s.push_back(std::move(row));
        f.db->run(std::move(s), kNever, [this](std::vector<Rows> r) { after(r.at(0)); });
        return;
      }
      f.db->begin(kNever, [this, row](std::shared_ptr<Database::Session> s, Rows failure) {
        if (!s) return after(failure);
        std::vector<Statement> one{row};
        s->run(std::move(one), kNever, [this, s](std::vector<Rows> r) {
          if (!r.at(0).ok()) ++failures;
          s->end(true, kNever, [this](std::vector<Rows> c) { after(c.at(0)); });
        });
      });
    }
    void after(const Rows& r) {
      if (!r.ok()) ++failures;
      ++acknowledged;
      ++i;
      const int floor = acknowledged;
      f.db->run(batch("SELECT count(*) FROM t"), kNever, [this, floor](std::vector<Rows> r) {
        ++reads;
        if (!r.at(0).ok() || r[0].at(0).int64(0) < floor) ++stale;
      });
      next();
    }
  };
  std::vector<std::unique_ptr<Writer>> writers;
  for (int w = 0; w < kWriters; ++w)
    writers.push_back(std::make_unique<Writer>(Writer{f, w, acknowledged, failures, reads, stale, finished}));
  for (auto& w : writers) w->next();
  REQUIRE(run_until(
      f.loop, [&] { return finished == kWriters && reads == kWriters * kRows; }, 60s));
  CHECK(failures == 0);
  CHECK(stale == 0);
  CHECK(f.count("t") == kWriters * kRows);
  CHECK(f.one("SELECT count(DISTINCT writer * 1000 + i) FROM t").at(0).int64(0) == kWriters * kRows);
  CHECK(f.db->statements_pending() == 0);
}

TEST_CASE("SQLite: the loop keeps turning while a long write runs, and reads are answered meanwhile",
          "[sqlite][threads]") {
  Fixture f;
  REQUIRE(f.one("CREATE TABLE big(x INTEGER)").ok());
  auto s = f.begin();
  std::optional<std::vector<Rows>> write, read;
  const auto start = Clock::now();
  s->run(batch("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 3000000) "
               "INSERT INTO big SELECT x FROM c"),
         kNever, [&](std::vector<Rows> r) { write = std::move(r); });
  f.db->run(batch("SELECT count(*) FROM big"), kNever, [&](std::vector<Rows> r) { read = std::move(r); });
  // A timer every 2 ms: the longest gap between two of its turns.
  auto last = Clock::now();
  Clock::duration longest{};
  int ticks = 0;
  std::function<void()> on_tick;
  EventLoop::Timer timer(f.loop, [&] { on_tick(); });
  on_tick = [&] {
    const auto now = Clock::now();
    longest = std::max(longest, now - last);
    last = now;
    ++ticks;
    timer.expires_after(2ms);
  };
  timer.expires_after(2ms);
  bool read_first = false;
  REQUIRE(run_until(f.loop, [&] {
    if (read && !write) read_first = true;
    return write.has_value();
  }));
  const auto took = Clock::now() - start;
  timer.cancel();
  REQUIRE(write->at(0).ok());
  CHECK(write->at(0).affected_rows() == 3000000);
  INFO("the write took " << std::chrono::duration_cast<std::chrono::milliseconds>(took).count() << " ms; " << ticks
                         << " ticks, the longest gap "
                         << std::chrono::duration_cast<std::chrono::milliseconds>(longest).count() << " ms");
  CHECK(took >= 200ms);  // long enough to measure anything
  // A loop blocked by the write would show one gap as long as the write.
  // The bound is relative (a fifth of it, 100 ms at least): under ASan on
  // two busy cores a turn was once 102 ms late, which is not a block.
  CHECK(longest < std::max<Clock::duration>(100ms, took / 5));
  CHECK(read_first);
  CHECK(read->at(0).at(0).int64(0) == 0);  // what was committed before
  REQUIRE(f.end(*s, true).ok());
  CHECK(f.count("big") == 3000000);
}

TEST_CASE("SQLite: a statement past its deadline times out, stopped where it runs", "[sqlite][threads]") {
  DatabaseOptions o;
  o.pool_size = 1;  // one reader: the next read needs it free
  Fixture f(o);
  REQUIRE(f.one("CREATE TABLE t(v INTEGER)").ok());
  for (const bool writer : {false, true}) {
    INFO((writer ? "on the writer" : "on a reader"));
    std::vector<Statement> endless = batch(writer ? "INSERT INTO t " + kEndless : kEndless);
    const auto start = Clock::now();
    const auto rows = f.all(std::move(endless), start + 200ms);
    const auto took = Clock::now() - start;
    CHECK(rows.at(0).failure() == Rows::Failure::timeout);
    CHECK(rows[0].problem().status == 504);
    CHECK(took >= 200ms);
    CHECK(took < 2s);
    // Interrupted, it frees its connection at once.
    const auto next = Clock::now();
    CHECK(f.count("t") == 0);
    CHECK(f.one("INSERT INTO t VALUES(1)").ok());
    CHECK(f.one("DELETE FROM t").ok());
    CHECK(Clock::now() - next < 1s);
  }
  // The database's own timeout bounds what has no deadline.
  o.timeout = 150ms;
  f.open(o);
  const auto start = Clock::now();
  CHECK(f.one(kEndless).failure() == Rows::Failure::timeout);
  CHECK(Clock::now() - start < 2s);
}

TEST_CASE("SQLite: a stopped statement is never answered and frees its connection", "[sqlite][threads]") {
  DatabaseOptions o;
  o.pool_size = 1;
  Fixture f(o);
  bool answered = false;
  auto stop = f.db->run(batch(kEndless), kNever, [&](std::vector<Rows>) { answered = true; });
  run_until(
      f.loop, [] { return false; }, 100ms);
  stop();
  const auto start = Clock::now();
  CHECK(f.one("SELECT 1").ok());
  CHECK(Clock::now() - start < 1s);
  run_until(
      f.loop, [] { return false; }, 100ms);
  CHECK_FALSE(answered);
  CHECK(f.db->statements_pending() == 0);
  // A BEGIN stopped before it is answered lets go of the writer.
  bool began = false;
  auto stop_begin = f.db->begin(kNever, [&](std::shared_ptr<Database::Session>, Rows) { began = true; });
  stop_begin();
  REQUIRE(f.one("CREATE TABLE t(v INTEGER)").ok());
  CHECK_FALSE(began);
}

TEST_CASE("SQLite: past the queue's bound work is refused at once, on a later turn", "[sqlite][threads]") {
  DatabaseOptions o;
  o.max_queued = 2;
  Fixture f(o);
  REQUIRE(f.one("CREATE TABLE t(v INTEGER)").ok());
  std::vector<Statement> three;
  for (int i = 0; i < 3; ++i) three.push_back(Statement{"SELECT 1", {}});
  const auto refused = f.all(std::move(three));
  REQUIRE(refused.size() == 3);
  CHECK(refused[0].failure() == Rows::Failure::unavailable);
  CHECK(refused[0].problem().status == 503);
  // Two writes waiting behind a transaction fill it.
  auto s = f.begin();
  int answered = 0;
  for (int i = 0; i < 2; ++i)
    f.db->run(batch("INSERT INTO t VALUES(1)"), kNever, [&](std::vector<Rows> r) { answered += r[0].ok(); });
  CHECK(f.db->statements_pending() == 2);
  CHECK(f.one("INSERT INTO t VALUES(2)").failure() == Rows::Failure::unavailable);
  bool began_refused = false;
  f.db->begin(kNever, [&](std::shared_ptr<Database::Session> b, Rows failure) {
    began_refused = !b && failure.failure() == Rows::Failure::unavailable;
  });
  REQUIRE(run_until(f.loop, [&] { return began_refused; }));
  s.reset();  // rolled back: the two writes go
  REQUIRE(run_until(f.loop, [&] { return answered == 2; }));
  CHECK(f.count("t") == 2);
}

TEST_CASE("SQLite: URLs, a folder that does not exist, memory, and the file after", "[sqlite][threads]") {
  TempDir dir;
  EventLoop loop;
  DatabaseOptions o;
  o.name = "test";
  o.url = "sqlite:" + (dir.path / "no" / "such.db").string();
  CHECK_THROWS_AS(SqliteDatabase(loop, o), std::invalid_argument);
  o.url = "sqlite:";
  CHECK_THROWS_AS(SqliteDatabase(loop, o), std::invalid_argument);
  o.url = "sqlite:///" + (dir.path / "a.db").string();
  CHECK(SqliteDatabase::file_of(o) == "/" + (dir.path / "a.db").string());
  o.url = "mysql://x";
  CHECK_THROWS_AS(edri::database::open_database(loop, o), std::invalid_argument);

  SECTION("sqlite::memory: is one connection, which reads wait for too") {
    Fixture f(DatabaseOptions{"", "sqlite::memory:"});
    CHECK(f.db->readers() == 0);
    REQUIRE(f.one("CREATE TABLE t(v INTEGER)").ok());
    auto s = f.begin();
    REQUIRE(f.in(*s, "INSERT INTO t VALUES(1)").ok());
    std::optional<std::vector<Rows>> read;
    f.db->run(batch("SELECT count(*) FROM t"), kNever, [&](std::vector<Rows> r) { read = std::move(r); });
    run_until(
        f.loop, [] { return false; }, 50ms);
    CHECK_FALSE(read);
    REQUIRE(f.end(*s, true).ok());
    REQUIRE(run_until(f.loop, [&] { return read.has_value(); }));
    CHECK(read->at(0).at(0).int64(0) == 1);
  }
  SECTION("the data stays in the file, the WAL goes with the last connection") {
    const std::string file = (dir.path / "kept.db").string();
    o.url = "sqlite:" + file;
    {
      auto db = edri::database::open_database(loop, o);
      CHECK(db->kind() == "sqlite");
      bool done = false;
      std::vector<Statement> s;
      s.push_back(Statement{"CREATE TABLE t(v TEXT)", {}});
      s.push_back(Statement{"INSERT INTO t VALUES('kept')", {}});
      db->run(std::move(s), kNever, [&](std::vector<Rows> r) { done = r.at(1).ok(); });
      REQUIRE(run_until(loop, [&] { return done; }));
      CHECK(std::filesystem::exists(file + "-wal"));
    }
    CHECK(std::filesystem::exists(file));
    CHECK_FALSE(std::filesystem::exists(file + "-wal"));
    Fixture again(DatabaseOptions{"", "sqlite:" + file});
    CHECK(again.one("SELECT v FROM t").at(0).text(0) == "kept");
  }
}

namespace {

// A handler's coroutine, run as the manager runs one.
struct Driven {
  edri::Async<edri::Response>::Handle frame;
  std::shared_ptr<edri::detail::Flow> flow = std::make_shared<edri::detail::Flow>();
  explicit Driven(edri::Async<edri::Response> a) : frame(a.release()) {
    frame.promise().flow = flow;
    flow->waiting = frame;
    flow->resume();
  }
  ~Driven() { frame.destroy(); }
};

edri::Async<edri::Response> add_one(Database& db, bool throw_before_commit) {
  // Made first, awaited by name (GCC 12 and temporaries in a co_await).
  const std::string insert = "INSERT INTO t VALUES($1)";
  const std::string count = "SELECT count(*) AS n FROM t";
  edri::Transaction tx = co_await db.transaction();
  SqlParams one{1};
  co_await tx.query(insert, std::move(one));
  if (throw_before_commit) throw std::runtime_error("before the commit");
  co_await tx.commit();
  const Rows rows = co_await db.query(count);
  co_return edri::Response::json(rows.to_json());
}

}  // namespace

TEST_CASE("SQLite: a coroutine's transaction commits, or rolls back when the coroutine throws", "[sqlite][threads]") {
  Fixture f;
  REQUIRE(f.one("CREATE TABLE t(v INTEGER)").ok());
  {
    Driven d(add_one(*f.db, false));
    REQUIRE(run_until(f.loop, [&] { return d.flow->finished; }));
    CHECK(std::get<std::string>(d.frame.promise().take().body) == R"([{"n":1}])");
  }
  {
    Driven d(add_one(*f.db, true));
    REQUIRE(run_until(f.loop, [&] { return d.flow->finished; }));
    CHECK_THROWS_WITH(d.frame.promise().take(), "before the commit");
  }
  REQUIRE(f.one("INSERT INTO t VALUES(2)").ok());
  CHECK(f.count("t") == 2);
}
