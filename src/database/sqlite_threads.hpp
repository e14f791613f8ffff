// SqliteThreads: the threads of one SqliteDatabase, each with its own
// connection (one writer, `readers` readers), and the way their answers
// come back to the manager's loop: an eventfd in its epoll set, as the
// worker thread pool does (docs/decisions/0032). The loop only queues
// jobs and takes answers; a thread never calls back into it.
//
// The writer runs its jobs one after another in the order they came: the
// database (SqliteDatabase) decides that order, and what waits while a
// transaction holds the writer. The readers share one queue.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <edri/database.hpp>

#include "database/sqlite_connection.hpp"
#include "runtime/event_loop.hpp"
#include "transport/unique_fd.hpp"

namespace edri::database {

enum class SqliteWork : std::uint8_t {
  read,         // on a reader; a batch holding a statement that writes is sent back, unrun
  write,        // on the writer, outside any transaction
  begin,        // BEGIN IMMEDIATE on the writer
  transaction,  // a transaction's statements, on the writer
  commit,       // COMMIT (ROLLBACK should it fail)
  rollback,     // ROLLBACK, if a transaction is open
};

struct SqliteJob {
  std::uint64_t id = 0;  // its batch's; 0: nobody waits for the answer
  SqliteWork work = SqliteWork::write;
  std::vector<Statement> statements;
  // Set, the statements not begun are skipped and the one running is
  // interrupted. Null: nothing stops it (a COMMIT, a ROLLBACK).
  std::shared_ptr<std::atomic<bool>> stop;
  bool classify = false;  // a read: say which of its SQL texts only read
};

struct SqliteAnswer {
  std::uint64_t id = 0;
  SqliteWork work = SqliteWork::write;
  std::size_t statements = 0;  // how many the job carried
  std::vector<Rows> rows;      // one per statement
  // A read that holds a statement that writes: nothing ran, and its
  // statements come back for the writer.
  bool sent_back = false;
  std::vector<Statement> writes;
  std::vector<std::pair<std::string, bool>> learned;  // SQL text -> whether it only reads
};

class SqliteThreads {
 public:
  using Deliver = std::function<void(SqliteAnswer)>;

  // `deliver` runs on the loop's thread, once per job whose answer came.
  SqliteThreads(EventLoop& loop, const SqliteConnectionOptions& connection, std::size_t readers, Deliver deliver);
  // Stops what runs, drops what waits, joins the threads: no answer after.
  ~SqliteThreads();
  SqliteThreads(const SqliteThreads&) = delete;
  SqliteThreads& operator=(const SqliteThreads&) = delete;

  void to_writer(SqliteJob job);
  // Only where readers() > 0.
  void to_readers(SqliteJob job);
  std::size_t readers() const { return threads_.size() - 1; }

 private:
  void serve(SqliteConnectionOptions connection, std::deque<SqliteJob>& jobs, std::condition_variable& ready);
  void answer(SqliteAnswer a);
  void deliver();  // on the loop's thread

  EventLoop& loop_;
  Deliver deliver_;
  UniqueFd wake_fd_;
  std::atomic<bool> closing_{false};
  std::mutex mutex_;
  std::mutex close_mutex_;  // connections close one at a time (serve())
  std::condition_variable writer_ready_;
  std::condition_variable readers_ready_;
  std::deque<SqliteJob> writer_jobs_;
  std::deque<SqliteJob> reader_jobs_;
  std::deque<SqliteAnswer> answers_;
  std::vector<std::thread> threads_;  // the writer's first
};

}  // namespace edri::database
