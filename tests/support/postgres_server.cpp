#include "support/postgres_server.hpp"

#include <fcntl.h>
#include <grp.h>
#include <libpq-fe.h>
#include <pwd.h>
#include <signal.h>
#include <sys/shm.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "loopback_port.hpp"
#include "support/processes.hpp"

extern char** environ;

namespace edri::test {

namespace {

using Clock = std::chrono::steady_clock;

const std::string kBin = "/usr/lib/postgresql/15/bin";

struct ConnDeleter {
  void operator()(PGconn* c) const { PQfinish(c); }
};
struct ResultDeleter {
  void operator()(PGresult* r) const { PQclear(r); }
};
using Conn = std::unique_ptr<PGconn, ConnDeleter>;
using Result = std::unique_ptr<PGresult, ResultDeleter>;

// This environment for the server's tools, less what would point them
// elsewhere (PGDATA, PGHOST...) and in the C locale (--no-locale).
std::vector<std::string> server_environment() {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    const std::string var = *e;
    if (var.rfind("PG", 0) == 0 || var.rfind("LC_", 0) == 0 || var.rfind("LANG", 0) == 0) continue;
    env.push_back(var);
  }
  env.push_back("LC_ALL=C");
  return env;
}

// fork+exec of `args` as uid/gid (when they differ from ours), in `dir`,
// its output appended to `log_path`.
pid_t spawn_as(const std::vector<std::string>& args, uid_t uid, gid_t gid, const std::string& dir,
               const std::string& log_path) {
  // Everything the child needs is made before fork: after it, only
  // async-signal-safe calls.
  std::vector<std::string> env = server_environment();
  std::vector<char*> argv, envp;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  const int log = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log < 0) throw std::runtime_error("cannot open " + log_path);
  const int null_in = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  const bool switch_user = uid != ::geteuid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(log);
    ::close(null_in);
    throw std::runtime_error("fork failed");
  }
  if (pid == 0) {
    ::dup2(null_in, 0);
    ::dup2(log, 1);
    ::dup2(log, 2);
    if (switch_user && (::setgroups(0, nullptr) != 0 || ::setgid(gid) != 0 || ::setuid(uid) != 0)) ::_exit(126);
    if (::chdir(dir.c_str()) != 0) ::_exit(126);
    ::execve(argv[0], argv.data(), envp.data());
    ::_exit(127);
  }
  ::close(log);
  ::close(null_in);
  return pid;
}

// Waits up to `limit` for `pid` to exit; its status, or nullopt.
std::optional<int> wait_for(pid_t pid, std::chrono::milliseconds limit) {
  const auto deadline = Clock::now() + limit;
  for (;;) {
    int status = 0;
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid || r < 0) return status;
    if (Clock::now() > deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

Conn connect(const std::string& url) {
  Conn conn(PQconnectdb(url.c_str()));
  if (PQstatus(conn.get()) != CONNECTION_OK)
    throw std::runtime_error("cannot connect to " + url + ": " + PQerrorMessage(conn.get()));
  return conn;
}

Result run(PGconn* conn, const std::string& sql) {
  Result r(PQexec(conn, sql.c_str()));
  const ExecStatusType status = PQresultStatus(r.get());
  if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK)
    throw std::runtime_error("SQL failed: " + sql + ": " + PQresultErrorMessage(r.get()));
  return r;
}

}  // namespace

PostgresServer::PostgresServer(int max_connections)
    : max_connections_(max_connections), port_(bench::free_loopback_port()) {
  if (!std::filesystem::exists(kBin + "/postgres"))
    throw std::runtime_error(kBin + "/postgres is missing: install postgresql-15 (scripts/setup.sh)");
  uid_ = ::geteuid();
  gid_ = ::getegid();
  if (uid_ == 0) {
    const passwd* pw = ::getpwnam("postgres");
    if (!pw) throw std::runtime_error("no `postgres` user to run Postgres as (postgresql-15 makes it)");
    uid_ = pw->pw_uid;
    gid_ = pw->pw_gid;
  }
  std::string tmpl = "/tmp/edri-test-pg.XXXXXX";
  if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
  dir_ = tmpl;
  try {
    if (::chown(dir_.c_str(), uid_, gid_) != 0) throw std::runtime_error("cannot give " + dir_ + " to Postgres");
    initdb();
    start();
    run(connect(url("postgres")).get(), "CREATE DATABASE edri");
  } catch (...) {
    // The destructor does not run for a constructor that throws.
    stop(std::chrono::seconds(5));
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
    throw;
  }
}

PostgresServer::~PostgresServer() {
  stop();
  remove_shared_memory();
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

std::string PostgresServer::url(const std::string& database) const {
  return "postgresql://edri@127.0.0.1:" + std::to_string(port_) + "/" + database;
}

std::string PostgresServer::socket_url(const std::string& database) const {
  // The socket's folder as the host, percent-encoded (a URL's host has no '/').
  std::string host;
  for (char c : dir_) host += c == '/' ? std::string("%2F") : std::string(1, c);
  return "postgresql://edri@" + host + ":" + std::to_string(port_) + "/" + database;
}

void PostgresServer::initdb() {
  const std::string log_path = dir_ + "/initdb.log";
  // trust: the cluster is reachable only from this machine, for the test's
  // lifetime. --no-sync: nothing here needs to survive a power cut.
  const pid_t pid = spawn_as(
      {kBin + "/initdb", "-D", dir_ + "/data", "-U", "edri", "--auth=trust", "-E", "UTF8", "--no-locale", "--no-sync"},
      uid_, gid_, dir_, log_path);
  const auto status = wait_for(pid, std::chrono::seconds(120));
  if (!status) {
    ::kill(pid, SIGKILL);
    wait_for(pid, std::chrono::seconds(5));
    throw std::runtime_error("initdb did not finish in 120 s");
  }
  if (!WIFEXITED(*status) || WEXITSTATUS(*status) != 0)
    throw std::runtime_error("initdb failed; its log:\n" + read_file(log_path));
}

void PostgresServer::start() {
  // Durability off (fsync, full pages, synchronous commit): a test's data
  // dies with it. Dynamic shared memory in the data folder (mmap), not in
  // /dev/shm, where a crashed server would leave it.
  // A port taken by another process since it was picked fails the bind:
  // another port, a few times.
  for (int attempt = 1;; ++attempt) {
    pid_ = spawn_as(
        {kBin + "/postgres", "-D", dir_ + "/data", "-p", std::to_string(port_), "-k", dir_, "-c",
         "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "full_page_writes=off", "-c", "synchronous_commit=off",
         "-c", "dynamic_shared_memory_type=mmap", "-c", "max_connections=" + std::to_string(max_connections_)},
        uid_, gid_, dir_, dir_ + "/postgres.log");
    if (wait_until_accepting()) break;
    const std::string text = log();
    if (attempt == 3 || text.find("Address already in use") == std::string::npos)
      throw std::runtime_error("postgres did not start; its log:\n" + text);
    port_ = bench::free_loopback_port();
  }
  // Its System V segment (line 7: key, id), to remove should it crash.
  std::istringstream pid_file(read_file(dir_ + "/data/postmaster.pid"));
  std::string line;
  for (int i = 0; i < 7 && std::getline(pid_file, line); ++i) {
  }
  unsigned long key = 0;  // written unsigned, read back by shmctl as key_t
  std::istringstream(line) >> key >> shmem_id_;
  shmem_key_ = static_cast<key_t>(key);
}

bool PostgresServer::wait_until_accepting() {
  // Asked on the socket in our own folder: a server of someone else's on
  // the same port cannot answer for ours.
  const std::string port = std::to_string(port_);
  const char* keywords[] = {"host", "port", "dbname", "user", "connect_timeout", nullptr};
  const char* values[] = {dir_.c_str(), port.c_str(), "postgres", "edri", "2", nullptr};
  // Generous: the first start on a loaded 2-core machine.
  const auto deadline = Clock::now() + std::chrono::seconds(60);
  while (PQpingParams(keywords, values, 0) != PQPING_OK) {
    if (wait_for(pid_, std::chrono::milliseconds(0))) {
      pid_ = -1;
      return false;
    }
    if (Clock::now() > deadline) throw std::runtime_error("postgres did not accept connections in 60 s:\n" + log());
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

void PostgresServer::execute(const std::string& sql) const { run(connect(url()).get(), sql); }

std::vector<std::vector<std::optional<std::string>>> PostgresServer::rows(const std::string& sql) const {
  const Conn conn = connect(url());
  const Result r = run(conn.get(), sql);
  std::vector<std::vector<std::optional<std::string>>> out(static_cast<std::size_t>(PQntuples(r.get())));
  for (int row = 0; row < PQntuples(r.get()); ++row)
    for (int col = 0; col < PQnfields(r.get()); ++col)
      out[static_cast<std::size_t>(row)].push_back(
          PQgetisnull(r.get(), row, col) ? std::nullopt : std::optional<std::string>(PQgetvalue(r.get(), row, col)));
  return out;
}

std::vector<pid_t> PostgresServer::children() const {
  std::vector<pid_t> pids;
  for (const ProcessInfo& p : children_of(pid_)) pids.push_back(p.pid);
  return pids;
}

void PostgresServer::kill() {
  if (pid_ <= 0) return;
  backends_ = children();
  ::kill(pid_, SIGKILL);
  wait_for(pid_, std::chrono::seconds(10));
  pid_ = -1;
}

void PostgresServer::stop(std::chrono::milliseconds patience) {
  if (pid_ > 0) {
    backends_ = children();
    // SIGINT, Postgres's fast shutdown: SIGTERM (smart) would wait for
    // every client to leave.
    ::kill(pid_, SIGINT);
    if (!wait_for(pid_, patience)) {
      ::kill(pid_, SIGKILL);
      wait_for(pid_, std::chrono::seconds(10));
    }
    pid_ = -1;
  }
  reap(std::chrono::seconds(5));
}

void PostgresServer::reap(std::chrono::milliseconds patience) {
  // A postmaster that died first leaves its children to init; they exit
  // once they see it gone. None outlives the test.
  const auto deadline = Clock::now() + patience;
  for (pid_t child : backends_) {
    while (process_alive(child) && Clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (process_alive(child)) ::kill(child, SIGKILL);
  }
  backends_.clear();
}

void PostgresServer::remove_shared_memory() const {
  // A server that stopped removed its segment; a killed one did not. Only
  // the one under the key and id this server wrote down, once nobody is
  // attached to it.
  if (shmem_id_ < 0) return;
  shmid_ds info{};
  if (::shmctl(shmem_id_, IPC_STAT, &info) == 0 && info.shm_perm.__key == shmem_key_ && info.shm_nattch == 0)
    ::shmctl(shmem_id_, IPC_RMID, nullptr);
}

std::string PostgresServer::log() const { return read_file(dir_ + "/postgres.log"); }

}  // namespace edri::test
