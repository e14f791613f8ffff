// PgConnection: one Postgres connection driven by a process's EventLoop,
// never blocking it. libpq is used only through its asynchronous
// interface: the connect is PQconnectStartParams and PQconnectPoll steps
// run on socket readiness (bounded by a timer), then the connection works
// in pipeline mode (libpq 14+): every statement is sent at once, followed
// by its own sync, and the answers come back in order to each statement's
// callback, so that many statements cost one round trip and one failing
// statement does not abort the ones after it. (A WriteBatch groups
// statements under one sync instead: one write, one implicit transaction.)
//
// It is one connection, made once: when it breaks (or never connects),
// every pending statement's callback gets a connection failure, `down` is
// told, and the object is done. Whoever wants another connection (a pool)
// makes a new one.
//
// Callbacks run on the loop, never inside the call that submitted the
// statement. A callback may submit more statements, cancel, or destroy the
// connection.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "database/pg_result.hpp"
#include "runtime/event_loop.hpp"

// libpq's connection and cancel handle, forward-declared as PgResult does
// its result.
struct pg_conn;
struct pg_cancel;

namespace edri::database {

// One parameter in text format ("42", "t", "2024-01-01"), or NULL. The
// server parses it as the type the statement gives its placeholder, so a
// value is always data, never SQL.
using PgParam = std::optional<std::string>;
using PgParams = std::vector<PgParam>;

// A statement's number on its connection (1, 2, ...), to cancel it by.
using PgStatementId = std::uint64_t;

struct PgConnectionOptions {
  // A postgresql:// URL or a "key=value ..." string, as libpq reads them.
  // Give the host as an address or a socket directory: libpq resolves a
  // host name with getaddrinfo, which blocks.
  std::string conninfo;
  // Statements accepted and not yet answered, sent or waiting for the
  // connect; past it, a submission is refused at once (queue_full).
  std::size_t max_pending = 1024;
  // Bound on the whole connect: TCP, startup and authentication. (libpq's
  // own connect_timeout applies only to its blocking connect.)
  std::chrono::milliseconds connect_timeout{5000};
  // Sent as libpq's `options` ("-c statement_timeout=30000"): settings of
  // the server session, which the URL's own `options` would otherwise give.
  std::string server_options;
};

// What a submission did: accepted (an id to cancel by) or refused at once,
// in which case the callback was not taken and is never called.
struct PgSubmission {
  enum class Refusal {
    none,
    queue_full,  // max_pending statements already wait: the caller sheds (503)
    down,        // the connection broke or never connected
    invalid,     // the statement itself: over 65535 parameters, a NUL byte in one
  };
  PgStatementId id = 0;
  Refusal refusal = Refusal::none;
  std::string message;  // why, when refused
  explicit operator bool() const { return refusal == Refusal::none; }
};

class PgConnection {
 public:
  using Done = std::function<void(PgResult)>;
  enum class State { connecting, ready, down };
  struct Events {
    std::function<void()> ready;                          // connected, pipeline mode on
    std::function<void(const std::string& reason)> down;  // once, after the callbacks of what was pending
  };

  // Starts connecting at once. Statements may be submitted before it is
  // ready: they wait (counted by max_pending) and are sent when it is.
  PgConnection(EventLoop& loop, PgConnectionOptions options, Events events = {});
  // Closes the connection. The callbacks of statements still pending are
  // dropped uncalled: an owner that must answer them does so itself, or
  // waits until pending() is 0.
  ~PgConnection();
  PgConnection(const PgConnection&) = delete;
  PgConnection& operator=(const PgConnection&) = delete;

  // One SQL statement with $1, $2, ... placeholders bound to `params`.
  PgSubmission query(std::string sql, PgParams params, Done done);
  // Prepares `sql` under `name` on this connection (the answer to `done`:
  // ok, or the statement's error), for execute(). A statement prepared on
  // one connection does not exist on another: a pool prepares it on each.
  PgSubmission prepare(std::string name, std::string sql, int n_params, Done done);
  PgSubmission execute(std::string name, PgParams params, Done done);

  // While one lives, statements submitted wait in libpq's buffer and leave
  // in one write, followed by one sync, when it ends: the 20 statements of
  // one request, one system call (libpq 15 writes at every sync, so a
  // sync per statement would mean a write per statement). Under one sync
  // they are one segment, which Postgres runs as one implicit transaction
  // (unless a BEGIN is among them): after a failing statement the rest
  // are not run (each answered so), and what ran before it is rolled
  // back. Scoped to one turn of the loop; nests.
  class WriteBatch {
   public:
    explicit WriteBatch(PgConnection& conn);
    ~WriteBatch();
    WriteBatch(const WriteBatch&) = delete;
    WriteBatch& operator=(const WriteBatch&) = delete;

   private:
    PgConnection& conn_;
    std::shared_ptr<bool> alive_;  // the connection's
  };

  // Forgets the statement's callback: it is never called, and the answer
  // is discarded when it comes. The statement still runs on the server
  // (unless it was waiting for the connect, then it is never sent): libpq
  // 15's only cancel, PQcancel, opens a connection and waits for it,
  // blocking the loop, so a runaway statement is bounded by the server's
  // statement_timeout instead. False if no callback of `id` was pending.
  bool cancel(PgStatementId id);

  State state() const { return state_; }
  // Accepted statements not yet done with, cancelled ones included (they
  // still hold a place in the pipeline until their answer comes).
  std::size_t pending() const { return pending_.size(); }
  std::size_t max_pending() const { return options_.max_pending; }
  // The server process serving this connection; 0 unless ready.
  int backend_pid() const;
  // What PQcancel needs to stop the statement the server runs now, from
  // any thread (it blocks: never on the loop); null unless ready.
  std::shared_ptr<pg_cancel> cancel_handle() const { return cancel_handle_; }
  // Whether statement `id` is the one the server runs now or next, with
  // no statement behind it still awaited: a cancel sent to the server now
  // can stop only it, or nothing.
  bool alone_in_flight(PgStatementId id) const;

 private:
  struct Statement {
    enum class Kind { query, prepare, execute };
    Kind kind;
    std::string name;  // prepare's and execute's
    std::string sql;   // query's and prepare's
    int n_params = 0;  // prepare's
    PgParams params;   // query's and execute's
  };
  struct Pending {
    PgStatementId id;
    Done done;                        // empty once cancelled or answered
    std::optional<Statement> unsent;  // while it waits for the connect
    std::optional<PgResult> result;   // its answer, until libpq ends it
    bool synced = true;               // a sync follows it (the last of its segment)
    bool answered = false;            // done called; its sync yet to come
  };

  PgSubmission submit(Statement statement, Done done);
  void start_connect();
  void on_socket(std::uint32_t events);
  void connect_step();
  void on_connected();
  void on_io(std::uint32_t events);
  bool send(const Statement& statement, bool sync);
  void end_batch();
  void flush();
  // Hands each finished answer to its callback; false if a callback
  // destroyed the connection.
  bool deliver_results();
  void watch_socket(std::uint32_t events);
  void stop_watching();
  void fail(std::string reason);
  void on_timer();
  void report_down();
  std::string libpq_error() const;

  EventLoop& loop_;
  PgConnectionOptions options_;
  Events events_;
  pg_conn* conn_ = nullptr;
  State state_ = State::connecting;
  int watched_fd_ = -1;
  std::uint32_t watched_events_ = 0;
  bool was_ready_ = false;
  int write_batches_ = 0;  // WriteBatch objects alive
  bool down_reported_ = false;
  std::string down_reason_;
  PgStatementId last_id_ = 0;
  std::shared_ptr<pg_cancel> cancel_handle_;
  std::deque<Pending> pending_;            // in the order sent, so answers match
  std::vector<const char*> param_values_;  // scratch for libpq's arrays
  // The connect's deadline, and then a failure's report on the next turn.
  EventLoop::Timer timer_;
  // False once destroyed: a callback that destroys the connection is seen.
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace edri::database
