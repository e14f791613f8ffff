// PostgresServer: a real Postgres 15 cluster (Debian postgresql-15) made
// for one test: initdb in a temporary folder, the postmaster started as a
// child on a free loopback port and on a Unix socket in that folder,
// stopped by PID and the folder removed when it goes.
//
// Postgres refuses to run as root, and the tests run as root (here and in
// CI): initdb and the postmaster then run as the `postgres` user the
// package creates, the folder given to it. As any other user they run as
// that user. The cluster's superuser is `edri`, trusted without a
// password; its database `edri` is made at start.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace edri::test {

class PostgresServer {
 public:
  // Throws (with initdb's or the server's log) when it does not start.
  // `max_connections`: the server's limit of clients (a load of hundreds
  // of connections, as bench techempower's pgbench, needs more).
  explicit PostgresServer(int max_connections = 40);
  ~PostgresServer();
  PostgresServer(const PostgresServer&) = delete;
  PostgresServer& operator=(const PostgresServer&) = delete;

  std::uint16_t port() const { return port_; }
  // The postmaster's pid; -1 once stopped.
  pid_t pid() const { return pid_; }
  const std::string& dir() const { return dir_; }
  // postgresql://edri@127.0.0.1:<port>/<database>
  std::string url(const std::string& database = "edri") const;
  // The same over the Unix socket in dir().
  std::string socket_url(const std::string& database = "edri") const;

  // Runs `sql` (one or more statements) in `edri`, synchronously through
  // libpq; throws with the server's message when it fails.
  void execute(const std::string& sql) const;
  // Rows of a query, each value as text or NULL.
  std::vector<std::vector<std::optional<std::string>>> rows(const std::string& sql) const;

  // A crash: SIGKILL to the postmaster alone, and wait for it. Its backends
  // notice and exit by themselves; the destructor makes sure of it.
  void kill();
  // Starts it again, on the same port where it is free, after kill() or
  // stop(): a database restarted under its clients.
  void restart() {
    reap(std::chrono::seconds(5));
    start();
  }
  // Fast shutdown (SIGINT), SIGKILL after `patience`.
  void stop(std::chrono::milliseconds patience = std::chrono::seconds(10));

 private:
  void initdb();
  void start();
  // False when the postmaster exited instead.
  bool wait_until_accepting();
  std::vector<pid_t> children() const;
  void reap(std::chrono::milliseconds patience);
  void remove_shared_memory() const;
  std::string log() const;

  std::string dir_;  // owned by the server's user
  int max_connections_;
  std::uint16_t port_ = 0;  // loopback
  pid_t pid_ = -1;
  uid_t uid_ = 0;  // the user initdb and the server run as
  gid_t gid_ = 0;
  std::vector<pid_t> backends_;  // the postmaster's children when last stopped
  key_t shmem_key_ = 0;          // its System V segment, from postmaster.pid
  int shmem_id_ = -1;
};

}  // namespace edri::test
