// PgDatabase: a handler's named Postgres database (edri::Database) in one
// manager: a bounded pool of PgConnections on the manager's loop
// (docs/decisions/0032).
//
// - A batch of statements (Database::run) goes whole to the connection
//   with the fewest statements pending, each statement with its own sync:
//   one write and one round trip for all of them, one failing alone.
// - Each connection prepares a statement the first time it sees its SQL
//   text (up to `statement_cache` texts) and executes it by name after.
// - A transaction holds one connection from BEGIN to COMMIT or ROLLBACK;
//   work that finds every connection held waits, bounded.
// - Every batch ends by the sooner of the request's deadline and
//   `timeout` (Failure::timeout); the server bounds a statement by the
//   same `timeout` (statement_timeout). A batch stopped (a cancelled wait)
//   or timed out whose statement the server runs now is cancelled there
//   too (PQcancel, on a thread of its own, since it blocks).
// - A connection that breaks is made again at once, then after 100 ms,
//   doubling to 1.6 s while it keeps failing. Work finding no connection up
//   nor connecting fails at once (Failure::unavailable: a 503).
// - Past `max_queued` statements pending in all, a batch is refused
//   (Failure::unavailable).
//
// Answers always come on a later turn of the loop, never inside the call.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include <edri/database.hpp>

#include "database/loop_chores.hpp"
#include "database/pg_connection.hpp"
#include "runtime/event_loop.hpp"

namespace edri::database {

class CancelThread;

struct DatabaseOptions {
  std::string name;
  std::string url;                                  // postgresql://... (or sqlite:...)
  std::size_t pool_size = 4;                        // connections per manager
  std::size_t max_queued = 4096;                    // statements pending, all connections
  std::chrono::milliseconds timeout{30000};         // a statement, client and server side
  std::chrono::milliseconds connect_timeout{5000};  // one connect
  std::size_t statement_cache = 256;                // prepared SQL texts per connection
};

class PgDatabase final : public edri::Database {
 public:
  PgDatabase(EventLoop& loop, DatabaseOptions options);
  ~PgDatabase() override;
  PgDatabase(const PgDatabase&) = delete;
  PgDatabase& operator=(const PgDatabase&) = delete;

  const std::string& name() const override { return options_.name; }
  std::string_view kind() const override { return "postgresql"; }
  std::function<void()> run(std::vector<Statement> statements, Deadline deadline, Done done) override;
  std::function<void()> begin(Deadline deadline, Began began) override;

  // For /metrics and tests.
  std::size_t connections_ready() const;
  std::size_t statements_pending() const;
  std::size_t waiting() const { return waiters_.size(); }
  std::uint64_t server_cancels() const { return server_cancels_; }

 private:
  class Session;
  // A statement prepared on a connection, and why it failed to, once
  // known (the executes sent behind it answer with that reason).
  struct Prepared {
    std::string name;
    std::shared_ptr<std::optional<Rows>> failed;
  };
  struct Link {
    std::unique_ptr<PgConnection> conn;                  // null while waiting to reconnect
    std::unordered_map<std::string, Prepared> prepared;  // by SQL text
    std::uint64_t generation = 0;                        // a new connection, a new generation
    bool held = false;                                   // by a transaction
    unsigned failures = 0;                               // connects failed in a row
    std::unique_ptr<EventLoop::Timer> reconnect;         // the backoff's
  };
  struct Batch {
    Done done;
    std::vector<Rows> rows;
    std::vector<PgStatementId> ids;  // on its link, in order
    std::size_t left = 0;
    std::size_t link = 0;
    std::uint64_t generation = 0;
    Deadline deadline;
    bool opens_transaction = false;  // its BEGIN's: stopped, it rolls back and lets go
  };
  // Work that found every connection held by a transaction.
  struct Waiter {
    std::uint64_t id = 0;
    std::vector<Statement> statements;  // run(); empty for begin()
    Done done;
    Began began;
    Deadline deadline;
  };

  void open(std::size_t link);
  void on_down(std::size_t link, std::uint64_t generation);
  // The ready connection not held with the fewest statements pending;
  // null when none is ready (work then waits for one that is coming up).
  Link* pick();
  bool any_coming_up() const;
  void submit(Link& link, std::uint64_t id, std::vector<Statement> statements, Deadline deadline, Done done);
  void send(Link& link, std::uint64_t batch, std::size_t index, Statement statement);
  bool prepare(Link& link, const std::string& sql, int n_params);
  void answer(std::uint64_t batch, std::size_t index, Rows rows);
  void stop(std::uint64_t batch, bool timed_out);
  void stop_waiter(std::uint64_t id, bool timed_out);
  void end_unopened(Link& link);
  void cancel_on_server(Link& link, PgStatementId id);
  void start_transaction(Link& link, std::uint64_t id, Deadline deadline, Began began);
  void release(std::size_t link, std::uint64_t generation);
  void serve_waiters();
  Deadline bounded(Deadline deadline) const;
  std::function<void()> stopper(std::uint64_t id);

  EventLoop& loop_;
  DatabaseOptions options_;
  std::vector<Link> links_;
  std::unordered_map<std::uint64_t, Batch> batches_;
  std::deque<Waiter> waiters_;
  std::uint64_t last_id_ = 0;
  std::uint64_t last_statement_name_ = 0;
  std::uint64_t server_cancels_ = 0;
  std::size_t in_flight_ = 0;                           // statements of batches not yet answered (prepares not counted)
  Deadlines deadlines_;                                 // batches' and waiters'
  std::vector<std::unique_ptr<PgConnection>> retired_;  // destroyed on the next turn
  NextTurn next_turn_;
  std::unique_ptr<CancelThread> canceller_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace edri::database
