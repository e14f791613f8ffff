// PgConnection (src/database/) against a real Postgres 15 started by the
// test, driven by a real EventLoop run here: typed rows and JSON, 20
// statements pipelined on one connection, errors with their SQLSTATE, SQL
// injection through parameters, the queue's bound, cancellation, the
// server killed under pending statements, and connects that cannot
// succeed, none of which may block the loop.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "database/pg_connection.hpp"
#include "loopback_port.hpp"
#include "runtime/event_loop.hpp"
#include "support/postgres_server.hpp"
#include "transport/unique_fd.hpp"

using edri::EventLoop;
using edri::UniqueFd;
using edri::database::PgConnection;
using edri::database::PgConnectionOptions;
using edri::database::PgParams;
using edri::database::PgResult;
using edri::database::PgSubmission;
using edri::database::PgValueError;
using edri::test::PostgresServer;
using nlohmann::json;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

namespace {

// Runs the loop until `done()` or `limit`; whether it got there.
template <class F>
bool run_until(EventLoop& loop, F done, std::chrono::milliseconds limit = 10s) {
  const auto deadline = Clock::now() + limit;
  while (!done()) {
    if (Clock::now() > deadline) return false;
    loop.poll(10);
  }
  return true;
}

// A connection whose readiness and end the test can see.
struct Watched {
  bool ready = false;
  int downs = 0;
  std::string down_reason;
  std::unique_ptr<PgConnection> conn;

  Watched(EventLoop& loop, std::string conninfo, std::size_t max_pending = 1024,
          std::chrono::milliseconds connect_timeout = 5s) {
    PgConnectionOptions options{std::move(conninfo), max_pending, connect_timeout, {}};
    conn = std::make_unique<PgConnection>(loop, std::move(options),
                                          PgConnection::Events{[this] { ready = true; },
                                                               [this](const std::string& reason) {
                                                                 ++downs;
                                                                 down_reason = reason;
                                                               }});
  }
};

// One statement, submitted and waited for.
PgResult run_one(EventLoop& loop, PgConnection& conn, std::string sql, PgParams params = {}) {
  std::optional<PgResult> answer;
  const PgSubmission s = conn.query(std::move(sql), std::move(params), [&](PgResult r) { answer = std::move(r); });
  INFO(s.message);
  REQUIRE(s);
  REQUIRE(run_until(loop, [&] { return answer.has_value(); }));
  return std::move(*answer);
}

// A relay between one client and Postgres that holds every answer back
// until the client has sent `statements` Execute messages (one per
// statement): a client that waits for an answer before it sends the next
// statement never gets one. The connect's own exchange, before the first
// Execute, passes, and so does everything after the last.
class HoldingRelay {
 public:
  HoldingRelay(std::uint16_t upstream, int statements) : upstream_(upstream), executes_wanted_(statements) {
    listener_.reset(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    REQUIRE(::bind(listener_.get(), reinterpret_cast<sockaddr*>(&a), len) == 0);
    REQUIRE(::listen(listener_.get(), 1) == 0);
    REQUIRE(::getsockname(listener_.get(), reinterpret_cast<sockaddr*>(&a), &len) == 0);
    port_ = ntohs(a.sin_port);
    int fds[2];
    REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
    stop_read_.reset(fds[0]);
    stop_write_.reset(fds[1]);
    thread_ = std::thread([this] { run(); });
  }
  ~HoldingRelay() {
    const char bye = 0;
    (void)!::write(stop_write_.get(), &bye, 1);
    thread_.join();
  }
  std::uint16_t port() const { return port_; }
  int executes_seen() const { return executes_seen_; }

 private:
  // Execute of the unnamed portal, all rows: what libpq sends per statement.
  static constexpr char kExecute[] = {'E', 0, 0, 0, 9, 0, 0, 0, 0, 0};

  bool wait_readable(int fd) {
    pollfd p[2] = {{fd, POLLIN, 0}, {stop_read_.get(), POLLIN, 0}};
    return ::poll(p, 2, -1) > 0 && !(p[1].revents & POLLIN);
  }

  void run() {
    if (!wait_readable(listener_.get())) return;
    UniqueFd client(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
    UniqueFd server(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(upstream_);
    if (!client || ::connect(server.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return;
    std::string tail;  // the end of what the client sent, for an Execute split over reads
    char buf[65536];
    for (;;) {
      // Answers wait in the kernel while held: the server's socket is not read.
      const bool holding = executes_seen_ > 0 && executes_seen_ < executes_wanted_;
      pollfd p[3] = {{client.get(), POLLIN, 0},
                     {server.get(), static_cast<short>(holding ? 0 : POLLIN), 0},
                     {stop_read_.get(), POLLIN, 0}};
      if (::poll(p, 3, -1) <= 0 || (p[2].revents & POLLIN)) return;
      if (p[0].revents & (POLLIN | POLLHUP)) {
        const ssize_t n = ::read(client.get(), buf, sizeof buf);
        if (n <= 0 || !send_all(server.get(), buf, static_cast<std::size_t>(n))) return;
        tail.append(buf, static_cast<std::size_t>(n));
        const std::string_view execute(kExecute, sizeof kExecute);
        for (std::size_t at = 0; (at = tail.find(execute, at)) != std::string::npos; at += execute.size())
          ++executes_seen_;
        tail.erase(0, tail.size() > execute.size() - 1 ? tail.size() - (execute.size() - 1) : 0);
      }
      if (p[1].revents & (POLLIN | POLLHUP)) {
        const ssize_t n = ::read(server.get(), buf, sizeof buf);
        if (n <= 0 || !send_all(client.get(), buf, static_cast<std::size_t>(n))) return;
      }
    }
  }

  static bool send_all(int fd, const char* data, std::size_t size) {
    while (size > 0) {
      const ssize_t n = ::send(fd, data, size, MSG_NOSIGNAL);
      if (n <= 0) return false;
      data += n;
      size -= static_cast<std::size_t>(n);
    }
    return true;
  }

  std::uint16_t upstream_;
  int executes_wanted_;
  std::uint16_t port_ = 0;
  std::atomic<int> executes_seen_{0};
  UniqueFd listener_, stop_read_, stop_write_;
  std::thread thread_;
};

}  // namespace

TEST_CASE("Postgres: parameters of several types and NULLs come back as typed rows and as JSON", "[postgres]") {
  PostgresServer server;
  server.execute(
      "CREATE TABLE item (id bigint, name text, price float8, active bool, note text, tags jsonb, "
      "amount numeric)");
  EventLoop loop;
  Watched w(loop, server.url());
  REQUIRE(run_until(loop, [&] { return w.ready; }));
  CHECK(w.conn->backend_pid() > 0);

  const std::string insert = "INSERT INTO item VALUES ($1, $2, $3, $4, $5, $6, $7)";
  // 2^53 + 1: lost by any path through a double.
  PgResult first = run_one(loop, *w.conn, insert,
                           {"9007199254740993", "naïve \"quoted\"", "2.5", "t", std::nullopt, R"({"a": [1, 2]})",
                            "12345678901234567890.125"});
  INFO(first.error());
  REQUIRE(first.ok());
  CHECK(first.affected_rows() == 1);
  REQUIRE(run_one(loop, *w.conn, insert, {"-7", "", "-0.125", "f", "a note", std::nullopt, std::nullopt}).ok());

  PgResult rows = run_one(loop, *w.conn, "SELECT id, name, price, active, note, tags, amount FROM item ORDER BY id");
  REQUIRE(rows.ok());
  CHECK(rows.affected_rows() == 2);
  REQUIRE(rows.size() == 2);
  REQUIRE(rows.columns() == 7);
  CHECK(rows.column_name(0) == "id");
  CHECK(rows.column_index("amount") == 6);
  CHECK(rows.column_index("missing") == -1);

  const auto low = rows[0];
  CHECK(low.int64("id") == -7);
  CHECK(low.text("name").empty());
  CHECK_FALSE(low.is_null("name"));  // '' is not NULL
  CHECK(low.float64("price") == -0.125);
  CHECK_FALSE(low.boolean("active"));
  CHECK(low.text(4) == "a note");
  CHECK(low.is_null("tags"));
  CHECK(low.is_null(6));

  const auto high = rows[1];
  CHECK(high.int64(0) == 9007199254740993);
  CHECK(high.text("name") == "naïve \"quoted\"");
  CHECK(high.float64("price") == 2.5);
  CHECK(high.boolean("active"));
  CHECK(high.is_null("note"));
  CHECK(high.text("amount") == "12345678901234567890.125");
  CHECK_THROWS_AS(high.int64("note"), PgValueError);     // NULL
  CHECK_THROWS_AS(high.int64("name"), PgValueError);     // not a number
  CHECK_THROWS_AS(high.boolean("price"), PgValueError);  // not t/f
  CHECK_THROWS_AS(high.text("nope"), PgValueError);
  CHECK_THROWS_AS(rows[2], PgValueError);

  const json expected = json::parse(R"([
    {"id": -7, "name": "", "price": -0.125, "active": false, "note": "a note", "tags": null, "amount": null},
    {"id": 9007199254740993, "name": "naïve \"quoted\"", "price": 2.5, "active": true, "note": null,
     "tags": {"a": [1, 2]}, "amount": "12345678901234567890.125"}])");
  CHECK(rows.to_json() == expected);
  CHECK(rows.to_json()[1]["id"].get<std::int64_t>() == 9007199254740993);

  // The placeholder's type decides how a text parameter is read.
  PgResult sum = run_one(loop, *w.conn, "SELECT $1::int + 1 AS n, $2::text IS NULL AS was_null", {"41", std::nullopt});
  REQUIRE(sum.ok());
  CHECK(sum[0].int64("n") == 42);
  CHECK(sum[0].boolean("was_null"));
  CHECK(sum.to_json() == json::parse(R"([{"n": 42, "was_null": true}])"));
}

TEST_CASE("Postgres: 20 statements sent at once are answered in order, on one round trip", "[postgres]") {
  PostgresServer server;
  // No answer passes the relay before all 20 statements have: a client
  // that sent one at a time would wait forever.
  HoldingRelay relay(server.port(), 20);
  EventLoop loop;
  Watched w(loop, "postgresql://edri@127.0.0.1:" + std::to_string(relay.port()) + "/edri");
  REQUIRE(run_until(loop, [&] { return w.ready; }));

  std::vector<std::int64_t> answered;
  const auto submit = [&](int i) {
    return w.conn->query("SELECT $1::int AS n, pg_backend_pid() AS pid", {std::to_string(i)}, [&, i](PgResult r) {
      INFO(r.error());
      REQUIRE(r.ok());
      CHECK(r[0].int64("pid") == w.conn->backend_pid());
      CHECK(r[0].int64("n") == i);
      answered.push_back(r[0].int64("n"));
    });
  };
  for (int i = 0; i < 20; ++i) REQUIRE(submit(i));
  CHECK(w.conn->pending() == 20);
  REQUIRE(run_until(loop, [&] { return answered.size() == 20; }));
  CHECK(relay.executes_seen() == 20);
  // And 20 more in one write batch (one write, one sync).
  {
    PgConnection::WriteBatch batch(*w.conn);
    for (int i = 20; i < 40; ++i) REQUIRE(submit(i));
  }
  REQUIRE(run_until(loop, [&] { return answered.size() == 40; }));
  CHECK(relay.executes_seen() == 40);
  for (int i = 0; i < 40; ++i) CHECK(answered[static_cast<std::size_t>(i)] == i);
  CHECK(run_until(loop, [&] { return w.conn->pending() == 0; }));

  // The same over the Unix socket, without the relay.
  EventLoop local_loop;
  Watched local(local_loop, server.socket_url());
  REQUIRE(run_until(local_loop, [&] { return local.ready; }));
  CHECK(run_one(local_loop, *local.conn, "SELECT 7 AS seven")[0].int64(0) == 7);
}

TEST_CASE("Postgres: what the socket cannot take at once is written as it drains, and answers keep their order",
          "[postgres]") {
  PostgresServer server;
  EventLoop loop;
  Watched w(loop, server.url(), /*max_pending=*/3000);
  REQUIRE(run_until(loop, [&] { return w.ready; }));
  // 16 MiB in one parameter: far more than a loopback socket's buffer, so
  // the write waits for the socket more than once.
  std::string big(16 << 20, 'x');
  big.replace(big.size() - 5, 5, "tail!");
  std::optional<PgResult> echoed;
  REQUIRE(w.conn->query("SELECT length($1) AS n, right($1, 5) AS tail, $1 AS whole", {big},
                        [&](PgResult r) { echoed = std::move(r); }));
  // And 2,000 small ones behind it, in the same pipeline.
  std::vector<std::int64_t> order;
  int refused = 0;
  for (int i = 0; i < 2000; ++i)
    if (!w.conn->query("SELECT $1::int", {std::to_string(i)}, [&](PgResult r) { order.push_back(r[0].int64(0)); }))
      ++refused;
  REQUIRE(refused == 0);
  REQUIRE(run_until(
      loop, [&] { return order.size() == 2000; }, 30s));
  REQUIRE(echoed.has_value());
  INFO(echoed->error());
  REQUIRE(echoed->ok());
  CHECK((*echoed)[0].int64("n") == 16 << 20);
  CHECK((*echoed)[0].text("tail") == "tail!");
  CHECK((*echoed)[0].text("whole") == big);
  bool in_order = true;
  for (int i = 0; i < 2000; ++i) in_order = in_order && order[static_cast<std::size_t>(i)] == i;
  CHECK(in_order);
}

TEST_CASE("Postgres: a failing statement answers its SQLSTATE and the next one on the connection runs", "[postgres]") {
  PostgresServer server;
  EventLoop loop;
  Watched w(loop, server.url());
  std::vector<PgResult> answers;
  // Sent before the connect ends, all in one pipeline.
  for (const char* sql : {"SELEC 1", "SELECT 2 AS two", "SELECT * FROM no_such_table", "SELECT 1/0", "SELECT 5", "",
                          "SELECT 1; SELECT 2"})
    REQUIRE(w.conn->query(sql, {}, [&](PgResult r) { answers.push_back(std::move(r)); }));
  REQUIRE(run_until(loop, [&] { return answers.size() == 7; }));

  CHECK_FALSE(answers[0].ok());
  CHECK(answers[0].failure() == PgResult::Failure::statement);
  CHECK(answers[0].sqlstate() == "42601");  // syntax_error
  CHECK(answers[0].error().find("syntax error") != std::string::npos);
  REQUIRE(answers[1].ok());
  CHECK(answers[1][0].int64("two") == 2);
  CHECK(answers[2].sqlstate() == "42P01");  // undefined_table
  CHECK(answers[3].sqlstate() == "22012");  // division_by_zero
  REQUIRE(answers[4].ok());
  CHECK(answers[4][0].int64(0) == 5);
  CHECK(answers[5].ok());  // an empty statement does nothing, successfully
  CHECK(answers[5].empty());
  CHECK(answers[6].sqlstate() == "42601");  // one statement per query: never a second one smuggled in
  CHECK(w.downs == 0);
  CHECK(w.conn->state() == PgConnection::State::ready);
}

TEST_CASE("Postgres: the statements of a write batch share one sync and so one implicit transaction", "[postgres]") {
  PostgresServer server;
  server.execute("CREATE TABLE u (id int PRIMARY KEY)");
  EventLoop loop;
  Watched w(loop, server.url());
  std::vector<PgResult> answers;
  const auto keep = [&](PgResult r) { answers.push_back(std::move(r)); };
  // Before the connect: the batch's sync goes with its last statement.
  {
    PgConnection::WriteBatch batch(*w.conn);
    REQUIRE(w.conn->query("INSERT INTO u VALUES (1)", {}, keep));
    REQUIRE(w.conn->query("INSERT INTO u VALUES (2)", {}, keep));
  }
  REQUIRE(run_until(loop, [&] { return answers.size() == 2; }));
  CHECK(answers[0].affected_rows() == 1);
  CHECK(answers[1].affected_rows() == 1);

  // Ready: a failure in the middle rolls back what came before it and
  // skips what comes after it; the next batch runs.
  answers.clear();
  {
    PgConnection::WriteBatch batch(*w.conn);
    REQUIRE(w.conn->query("INSERT INTO u VALUES (3)", {}, keep));
    REQUIRE(w.conn->query("INSERT INTO u VALUES (1)", {}, keep));  // a duplicate key
    REQUIRE(w.conn->query("INSERT INTO u VALUES (4)", {}, keep));
    // The last of a batch cancelled: its sync still goes.
    const PgSubmission last = w.conn->query("SELECT 1", {}, [](PgResult) { FAIL("cancelled"); });
    CHECK(w.conn->cancel(last.id));
  }
  {
    PgConnection::WriteBatch batch(*w.conn);
    REQUIRE(w.conn->query("SELECT count(*) FROM u", {}, keep));
  }
  REQUIRE(run_until(loop, [&] { return answers.size() == 4; }));
  CHECK(answers[0].ok());                   // inserted, then rolled back with its batch
  CHECK(answers[1].sqlstate() == "23505");  // unique_violation
  CHECK(answers[2].failure() == PgResult::Failure::statement);
  CHECK(answers[2].error().find("not run") != std::string::npos);
  CHECK(answers[3][0].int64(0) == 2);
  CHECK(run_until(loop, [&] { return w.conn->pending() == 0; }));
}

TEST_CASE("Postgres: prepared statements run with their parameters", "[postgres]") {
  PostgresServer server;
  server.execute(
      "CREATE TABLE world (id int PRIMARY KEY, random_number int); "
      "INSERT INTO world SELECT g, g * 10 FROM generate_series(1, 100) g");
  EventLoop loop;
  Watched w(loop, server.url());
  std::optional<PgResult> prepared, unknown;
  std::vector<std::int64_t> numbers;
  REQUIRE(w.conn->prepare("world", "SELECT random_number FROM world WHERE id = $1", 1,
                          [&](PgResult r) { prepared = std::move(r); }));
  for (int id : {3, 99, 100})
    REQUIRE(w.conn->execute("world", {std::to_string(id)}, [&](PgResult r) {
      INFO(r.error());
      REQUIRE(r.ok());
      numbers.push_back(r[0].int64("random_number"));
    }));
  REQUIRE(w.conn->execute("nothing_by_that_name", {}, [&](PgResult r) { unknown = std::move(r); }));
  REQUIRE(run_until(loop, [&] { return unknown.has_value(); }));
  REQUIRE(prepared.has_value());
  CHECK(prepared->ok());
  CHECK(numbers == std::vector<std::int64_t>{30, 990, 1000});
  CHECK(unknown->sqlstate() == "26000");  // invalid_sql_statement_name

  std::optional<PgSubmission> refused;
  refused = w.conn->prepare("bad", "SELECT 1", -1, [](PgResult) {});
  CHECK(refused->refusal == PgSubmission::Refusal::invalid);
}

TEST_CASE("Postgres: an SQL injection through a parameter is stored as data", "[postgres]") {
  PostgresServer server;
  server.execute("CREATE TABLE t (id serial PRIMARY KEY, v text)");
  EventLoop loop;
  Watched w(loop, server.socket_url());
  const std::string attack = "'; DROP TABLE t; --";
  const std::string attack2 = "x'); DELETE FROM t; SELECT ('";
  REQUIRE(run_one(loop, *w.conn, "INSERT INTO t (v) VALUES ($1)", {attack}).affected_rows() == 1);
  std::optional<PgResult> via_prepared;
  REQUIRE(w.conn->prepare("put", "INSERT INTO t (v) VALUES ($1)", 1, [](PgResult r) { REQUIRE(r.ok()); }));
  REQUIRE(w.conn->execute("put", {attack2}, [&](PgResult r) { via_prepared = std::move(r); }));
  REQUIRE(run_until(loop, [&] { return via_prepared.has_value(); }));
  CHECK(via_prepared->affected_rows() == 1);

  PgResult back = run_one(loop, *w.conn, "SELECT v FROM t WHERE v = $1 OR v = $2 ORDER BY id", {attack, attack2});
  REQUIRE(back.size() == 2);
  CHECK(back[0].text("v") == attack);
  CHECK(back[1].text("v") == attack2);
  // The table is still there, with both rows, seen from another connection.
  const auto rows = server.rows("SELECT count(*) FROM t");
  REQUIRE(rows.size() == 1);
  CHECK(rows[0][0] == "2");

  // A NUL byte would cut the value short in libpq: refused, not altered.
  const PgSubmission nul = w.conn->query("INSERT INTO t (v) VALUES ($1)", {std::string("a\0b", 3)},
                                         [](PgResult) { FAIL("a refused statement's callback is never called"); });
  CHECK(nul.refusal == PgSubmission::Refusal::invalid);
  CHECK(nul.message.find("$1") != std::string::npos);
}

TEST_CASE("Postgres: past the bound on pending statements a submission is refused at once", "[postgres]") {
  PostgresServer server;
  EventLoop loop;
  Watched w(loop, server.url(), /*max_pending=*/3);
  REQUIRE(run_until(loop, [&] { return w.ready; }));
  int answered = 0;
  for (int i = 0; i < 3; ++i)
    REQUIRE(w.conn->query("SELECT pg_sleep(0.2)", {}, [&](PgResult r) {
      CHECK(r.ok());
      ++answered;
    }));
  const auto before = Clock::now();
  const PgSubmission refused =
      w.conn->query("SELECT 1", {}, [](PgResult) { FAIL("a refused statement's callback is never called"); });
  CHECK(Clock::now() - before < 50ms);
  CHECK_FALSE(refused);
  CHECK(refused.refusal == PgSubmission::Refusal::queue_full);
  CHECK(refused.id == 0);
  CHECK(refused.message.find("3 statements pending") != std::string::npos);
  CHECK(w.conn->pending() == 3);

  // Room again once they are answered.
  REQUIRE(run_until(loop, [&] { return answered == 3 && w.conn->pending() == 0; }));
  CHECK(run_one(loop, *w.conn, "SELECT 1 AS one")[0].int64("one") == 1);
}

TEST_CASE("Postgres: a cancelled statement's callback is dropped and the connection goes on", "[postgres]") {
  PostgresServer server;
  EventLoop loop;
  Watched w(loop, server.url());
  bool early_called = false;
  // Cancelled while it waits for the connect: never sent.
  const PgSubmission early = w.conn->query("SELECT 1", {}, [&](PgResult) { early_called = true; });
  REQUIRE(early);
  CHECK(w.conn->cancel(early.id));
  CHECK(w.conn->pending() == 0);
  REQUIRE(run_until(loop, [&] { return w.ready; }));

  bool slow_called = false;
  std::optional<PgResult> after;
  const PgSubmission slow = w.conn->query("SELECT pg_sleep(0.2)", {}, [&](PgResult) { slow_called = true; });
  REQUIRE(w.conn->query("SELECT 'after' AS v", {}, [&](PgResult r) { after = std::move(r); }));
  CHECK(w.conn->cancel(slow.id));
  CHECK_FALSE(w.conn->cancel(slow.id));  // already forgotten
  CHECK_FALSE(w.conn->cancel(12345));
  REQUIRE(run_until(loop, [&] { return after.has_value(); }));
  CHECK(after->ok());
  CHECK((*after)[0].text("v") == "after");
  // Answers come in order: the slow one's came first, and was discarded.
  CHECK_FALSE(slow_called);
  CHECK_FALSE(early_called);
}

TEST_CASE("Postgres: a callback may destroy its connection", "[postgres]") {
  PostgresServer server;
  EventLoop loop;
  Watched w(loop, server.url());
  int called = 0;
  for (int i = 0; i < 3; ++i)
    REQUIRE(w.conn->query("SELECT 1", {}, [&](PgResult) {
      ++called;
      w.conn.reset();
    }));
  REQUIRE(run_until(loop, [&] { return called > 0; }));
  // The others' callbacks were dropped with it; the loop runs on.
  for (int i = 0; i < 10; ++i) loop.poll(5);
  CHECK(called == 1);
  CHECK(w.downs == 0);
}

TEST_CASE("Postgres: the server killed under pending statements fails them all at once and says so",
          "[postgres][alone]") {
  PostgresServer server;
  EventLoop loop;
  Watched w(loop, server.url());
  REQUIRE(run_until(loop, [&] { return w.ready; }));
  std::vector<PgResult> failed;
  REQUIRE(w.conn->query("SELECT pg_sleep(30)", {}, [&](PgResult r) { failed.push_back(std::move(r)); }));
  for (int i = 0; i < 5; ++i)
    REQUIRE(w.conn->query("SELECT $1::int", {std::to_string(i)}, [&](PgResult r) { failed.push_back(std::move(r)); }));
  // Until the sleep runs on the server.
  REQUIRE(run_until(loop, [&] {
    return !server.rows("SELECT 1 FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(30)'").empty();
  }));

  const auto killed_at = Clock::now();
  server.kill();
  REQUIRE(run_until(
      loop, [&] { return w.downs == 1; }, 5s));
  const auto took = Clock::now() - killed_at;
  CHECK(took < 3s);
  // Every callback before `down`, each with the connection's failure.
  REQUIRE(failed.size() == 6);
  for (const PgResult& r : failed) {
    CHECK(r.failure() == PgResult::Failure::connection);
    CHECK(r.sqlstate() == "08006");
    CHECK(r.error().find("connection lost") != std::string::npos);
  }
  CHECK(w.down_reason.find("connection lost") != std::string::npos);
  CHECK(w.conn->state() == PgConnection::State::down);
  CHECK(w.conn->pending() == 0);
  CHECK(w.conn->backend_pid() == 0);
  const PgSubmission after = w.conn->query("SELECT 1", {}, [](PgResult) { FAIL("refused"); });
  CHECK(after.refusal == PgSubmission::Refusal::down);
  for (int i = 0; i < 5; ++i) loop.poll(5);
  CHECK(w.downs == 1);
}

TEST_CASE("Postgres: a backend terminated under pending statements answers its error, then fails the rest",
          "[postgres]") {
  PostgresServer server;
  EventLoop loop;
  Watched w(loop, server.url());
  REQUIRE(run_until(loop, [&] { return w.ready; }));
  const int backend = w.conn->backend_pid();
  std::vector<PgResult> answers;
  REQUIRE(w.conn->query("SELECT pg_sleep(30)", {}, [&](PgResult r) { answers.push_back(std::move(r)); }));
  for (int i = 0; i < 3; ++i)
    REQUIRE(w.conn->query("SELECT 1", {}, [&](PgResult r) { answers.push_back(std::move(r)); }));
  REQUIRE(run_until(loop, [&] {
    return !server.rows("SELECT 1 FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(30)'").empty();
  }));
  server.execute("SELECT pg_terminate_backend(" + std::to_string(backend) + ")");
  REQUIRE(run_until(
      loop, [&] { return w.downs == 1; }, 5s));
  REQUIRE(answers.size() == 4);
  // The running statement gets the server's own word for it
  // (admin_shutdown), or the connection's failure if that came first.
  INFO(answers[0].error());
  CHECK((answers[0].sqlstate() == "57P01" || answers[0].sqlstate() == "08006"));
  for (std::size_t i = 1; i < answers.size(); ++i) {
    CHECK(answers[i].failure() == PgResult::Failure::connection);
    CHECK(answers[i].sqlstate() == "08006");
  }
  // The server itself still serves.
  EventLoop fresh_loop;
  Watched fresh(fresh_loop, server.url());
  CHECK(run_one(fresh_loop, *fresh.conn, "SELECT 3")[0].int64(0) == 3);
}

TEST_CASE("Postgres: a connect to a port with nothing listening fails without blocking the loop", "[postgres][alone]") {
  EventLoop loop;
  const std::uint16_t port = edri::bench::free_loopback_port();
  REQUIRE_FALSE(edri::bench::loopback_port_accepts(port));
  const auto before = Clock::now();
  Watched w(loop, "postgresql://edri@127.0.0.1:" + std::to_string(port) + "/edri");
  CHECK(Clock::now() - before < 200ms);
  REQUIRE(run_until(
      loop, [&] { return w.downs == 1; }, 3s));
  CHECK_FALSE(w.ready);
  CHECK(w.down_reason.find("cannot connect") != std::string::npos);
  CHECK(w.down_reason.find("refused") != std::string::npos);
  CHECK(w.conn->query("SELECT 1", {}, [](PgResult) {}).refusal == PgSubmission::Refusal::down);
}

TEST_CASE("Postgres: a server that never answers the connect is given up at the bound, the loop running",
          "[postgres][alone]") {
  // Listens, so the kernel completes the TCP handshake, but never accepts:
  // the startup message is never answered.
  UniqueFd mute(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  REQUIRE(::bind(mute.get(), reinterpret_cast<sockaddr*>(&a), len) == 0);
  REQUIRE(::listen(mute.get(), 4) == 0);
  REQUIRE(::getsockname(mute.get(), reinterpret_cast<sockaddr*>(&a), &len) == 0);

  EventLoop loop;
  int ticks = 0;
  std::function<void()> tick;
  EventLoop::Timer beat(loop, [&] {
    ++ticks;
    tick();
  });
  tick = [&] { beat.expires_after(10ms); };
  tick();

  const auto before = Clock::now();
  Watched w(loop, "postgresql://edri@127.0.0.1:" + std::to_string(ntohs(a.sin_port)) + "/edri", 1024, 400ms);
  std::optional<PgResult> waiting;
  REQUIRE(w.conn->query("SELECT 1", {}, [&](PgResult r) { waiting = std::move(r); }));
  REQUIRE(run_until(
      loop, [&] { return w.downs == 1; }, 5s));
  const auto took = Clock::now() - before;
  CHECK(took >= 400ms);
  CHECK(took < 3s);
  // The loop went on meanwhile: a 10 ms timer kept firing.
  CHECK(ticks >= 10);
  CHECK(w.down_reason.find("no connection within 400 ms") != std::string::npos);
  REQUIRE(waiting.has_value());
  CHECK(waiting->failure() == PgResult::Failure::connection);
  CHECK(waiting->sqlstate() == "08001");
}
