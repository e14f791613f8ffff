// SqliteDatabase: a handler's named SQLite database (edri::Database) in
// one manager (docs/decisions/0032). URLs: sqlite:/abs/file.db,
// sqlite:///abs/file.db, sqlite:relative.db (to the working directory),
// sqlite::memory: (one connection, no reader: the same data for all).
//
// - One writer connection on a thread of its own and `pool_size` reader
//   connections on threads of their own (SqliteThreads), in WAL mode:
//   readers and the writer never wait for each other. The manager's loop
//   only queues work and takes answers.
// - A batch (Database::run) goes to a reader when each of its statements
//   only reads (sqlite3_stmt_readonly, learned per SQL text; a reader
//   that finds a write sends the batch back unrun), else whole to the
//   writer, where its statements run in order.
// - A transaction holds the writer from BEGIN IMMEDIATE to COMMIT or
//   ROLLBACK: its statements run there in order, and the other writes
//   (and transactions) wait behind it, on the loop, bounded by the queue
//   and by their deadlines. Reads still go to the readers and see what
//   was committed before it. A Session destroyed without end() rolls
//   back; a COMMIT after a statement of it failed or was stopped rolls
//   back and answers a failure.
// - Every batch ends by the sooner of the request's deadline and
//   `timeout` (Failure::timeout). A batch stopped (a cancelled wait) or
//   timed out is skipped where it has not begun and interrupted where it
//   runs: the connection's progress handler watches the batch's own flag,
//   so it can never interrupt another batch's statement.
// - Past `max_queued` statements pending in all, work is refused
//   (Failure::unavailable); so is a statement that found the file locked
//   by another process past the busy timeout (the lesser of 5 s and
//   `timeout`).
//
// Answers always come on a later turn of the loop, never inside the call.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <edri/database.hpp>

#include "database/loop_chores.hpp"
#include "database/pg_database.hpp"  // DatabaseOptions
#include "database/sqlite_threads.hpp"
#include "runtime/event_loop.hpp"

namespace edri::database {

class SqliteDatabase final : public edri::Database {
 public:
  // Throws std::invalid_argument for a URL that names no file, or a file
  // in a folder that does not exist (a wrong path stops start-up).
  SqliteDatabase(EventLoop& loop, DatabaseOptions options);
  ~SqliteDatabase() override;
  SqliteDatabase(const SqliteDatabase&) = delete;
  SqliteDatabase& operator=(const SqliteDatabase&) = delete;

  const std::string& name() const override { return options_.name; }
  std::string_view kind() const override { return "sqlite"; }
  std::function<void()> run(std::vector<Statement> statements, Deadline deadline, Done done) override;
  std::function<void()> begin(Deadline deadline, Began began) override;

  // For tests.
  std::size_t statements_pending() const { return pending_; }
  std::size_t waiting_for_writer() const { return write_queue_.size(); }
  std::size_t readers() const { return threads_->readers(); }
  // The file of a sqlite: URL (":memory:" for sqlite::memory:).
  static std::string file_of(const DatabaseOptions& options);

 private:
  class Session;
  struct Batch {
    SqliteWork work = SqliteWork::read;
    Done done;
    Began began;
    Deadline deadline;
    std::size_t statements = 0;
    std::shared_ptr<std::atomic<bool>> stop;  // null: it cannot be stopped (COMMIT, ROLLBACK)
    std::shared_ptr<bool> failed;             // a transaction's statement: its transaction's mark
    bool waiting = false;                     // in write_queue_, its statements in `queued`
    std::vector<Statement> queued;
  };

  std::uint64_t add(SqliteWork work, std::size_t statements, Deadline deadline);
  void route(std::uint64_t id, std::vector<Statement> statements);
  // A write or a BEGIN: to the writer, or behind the transaction holding it.
  void to_writer(std::uint64_t id, SqliteWork work, std::vector<Statement> statements);
  void on_answer(SqliteAnswer a);
  void settle(std::uint64_t id, Batch b, std::vector<Rows> rows);
  void learn(const std::vector<std::pair<std::string, bool>>& learned);
  void stop(std::uint64_t id, bool timed_out);
  // The transaction `holder` lets go of the writer; what waited goes.
  void release(std::uint64_t holder);
  // A transaction's (its id: its BEGIN's).
  std::function<void()> run_in(std::shared_ptr<bool> failed, std::vector<Statement> statements, Deadline deadline,
                               Done done);
  void end(std::uint64_t transaction, bool commit, const std::shared_ptr<bool>& failed, Deadline deadline, Done done);
  bool full(std::size_t statements) const { return pending_ + statements > options_.max_queued; }
  std::function<void()> refuse(Done done, std::size_t statements, const char* why);
  Deadline bounded(Deadline deadline) const;
  std::function<void()> stopper(std::uint64_t id);

  EventLoop& loop_;
  DatabaseOptions options_;
  std::unordered_map<std::uint64_t, Batch> batches_;
  std::deque<std::uint64_t> write_queue_;  // batches waiting for the writer, in order
  std::uint64_t holder_ = 0;               // the transaction holding the writer (0: none)
  std::size_t pending_ = 0;                // statements of batches not answered
  std::uint64_t last_id_ = 0;
  std::unordered_map<std::string, bool> reads_only_;  // SQL text -> it only reads
  Deadlines deadlines_;
  NextTurn next_turn_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
  std::unique_ptr<SqliteThreads> threads_;  // last: stopped first, before what its answers touch
};

}  // namespace edri::database
