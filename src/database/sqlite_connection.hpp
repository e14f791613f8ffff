// SqliteConnection: one SQLite connection of a SqliteDatabase, used by
// one of its threads at a time, never by the manager's loop
// (docs/decisions/0032).
//
// - The writer's creates the file and sets WAL mode, synchronous=FULL (a
//   commit is on disk before it is answered) and foreign keys; a reader's
//   is query_only, a safety net under the routing that sends it reads only.
// - Each SQL text is prepared once (SQLITE_PREPARE_PERSISTENT) and kept,
//   up to `statement_cache` texts, the least recently used dropped first.
// - Parameters bind by their SqlValue kind; `$N` and `?N` name the Nth
//   value, a bare `?` the next one.
// - A column's type is the one all its values share (INTEGER: integer,
//   FLOAT: real; a declared BOOLEAN of 0s and 1s: boolean, a declared JSON
//   of text: json); mixed or TEXT or BLOB values are text.
// - While a job runs, the flag it watches (watch()) stops it: a progress
//   handler interrupts the statement running and the busy handler stops
//   waiting. Nothing else touches the connection from another thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <list>
#include <optional>
#include <string>
#include <unordered_map>

#include <edri/database.hpp>

// SQLite's own types, forward-declared so that users of this header need
// not see sqlite3.h.
struct sqlite3;
struct sqlite3_stmt;

namespace edri::database {

struct SqliteConnectionOptions {
  std::string path;  // a file, or ":memory:"
  bool writer = false;
  std::size_t statement_cache = 256;
  // How long a statement waits for a lock another process holds before it
  // fails with SQLITE_BUSY (Failure::unavailable).
  std::chrono::milliseconds busy_timeout{5000};
  // Set when the whole database closes: whatever runs stops.
  const std::atomic<bool>* closing = nullptr;
};

class SqliteConnection {
 public:
  // Opens it; on failure usable() is false and error() says why.
  explicit SqliteConnection(SqliteConnectionOptions options);
  ~SqliteConnection();
  SqliteConnection(const SqliteConnection&) = delete;
  SqliteConnection& operator=(const SqliteConnection&) = delete;

  // Open, or opened again now if it was not.
  bool usable();
  const std::string& error() const { return error_; }

  // Whether `sql` only reads (sqlite3_stmt_readonly); nullopt when it does
  // not prepare (running it then says why).
  std::optional<bool> reads_only(const std::string& sql);
  // Runs one statement: its rows, or why it failed (Failure::statement
  // with the extended result code as text; SQLITE_BUSY: unavailable).
  Rows execute(const Statement& statement);
  bool in_transaction() const;
  // ROLLBACK of an open transaction; nothing when none is.
  void rollback();
  // The flag the statements run from now on watch (null: none).
  void watch(const std::atomic<bool>* stop) { stop_ = stop; }

 private:
  // A prepared statement, cached (reset after use) or not (finalized);
  // without one, what to answer instead (a failure, or nothing to run).
  struct Prepared {
    sqlite3_stmt* stmt = nullptr;
    bool cached = false;
    Rows answer;
  };
  struct Cached {
    sqlite3_stmt* stmt;
    std::list<std::string>::iterator use;  // in lru_
  };

  void open();
  void close();
  bool exec(const char* sql);
  Prepared prepare(const std::string& sql);
  // Whether what follows a statement's end is no statement.
  bool only_comments(const char* tail);
  void done_with(Prepared& p);
  void cache(const std::string& sql, sqlite3_stmt* stmt);
  std::optional<Rows> bind(sqlite3_stmt* stmt, const SqlParams& params);
  static int bind_one(sqlite3_stmt* stmt, int index, const SqlValue& value);
  Rows run(sqlite3_stmt* stmt);
  Rows failure(int rc) const;
  bool stopped() const;
  static int on_progress(void* self);
  static int on_busy(void* self, int count);

  SqliteConnectionOptions options_;
  sqlite3* db_ = nullptr;
  std::string error_;
  std::unordered_map<std::string, Cached> cache_;
  std::list<std::string> lru_;  // SQL texts, most recently used first
  const std::atomic<bool>* stop_ = nullptr;
};

}  // namespace edri::database
