#include "database/sqlite_threads.hpp"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <optional>
#include <stdexcept>

#include <spdlog/spdlog.h>

namespace edri::database {

namespace {

bool stopped(const SqliteJob& job) { return job.stop && job.stop->load(std::memory_order_relaxed); }

// Each statement on its own, in order: one failing does not stop the next.
void run_each(SqliteConnection& c, const SqliteJob& job, SqliteAnswer& a) {
  const bool outside = job.work != SqliteWork::transaction;
  a.rows.reserve(job.statements.size());
  for (const Statement& s : job.statements) {
    if (stopped(job)) {
      a.rows.push_back(Rows::failed(Rows::Failure::timeout, "stopped before it ran"));
      continue;
    }
    a.rows.push_back(c.execute(s));
    // A transaction a statement left open would hold this connection (the
    // writer: every other write) for nobody.
    if (outside && c.in_transaction()) {
      c.rollback();
      a.rows.back() =
          Rows::failed(Rows::Failure::statement,
                       "a transaction is begun with Database::begin() or transaction(), not by a statement", "1");
    }
  }
}

// A read batch is run by a reader only if none of it writes: a batch is
// one connection's, in order, as on Postgres.
bool holds_a_write(SqliteConnection& c, SqliteJob& job, SqliteAnswer& a) {
  bool writes = false;
  for (const Statement& s : job.statements) {
    const auto reads = c.reads_only(s.sql);
    if (job.classify && reads) a.learned.emplace_back(s.sql, *reads);
    writes = writes || (reads && !*reads);
  }
  if (writes) {
    a.sent_back = true;
    a.writes = std::move(job.statements);
  }
  return writes;
}

void begin(SqliteConnection& c, const SqliteJob& job, SqliteAnswer& a) {
  // None is open between transactions; one that were would be nobody's.
  c.rollback();
  if (stopped(job)) return a.rows.push_back(Rows::failed(Rows::Failure::timeout, "stopped before it ran"));
  // IMMEDIATE: the write lock now, not at the first write, where another
  // process holding it would fail the transaction half done.
  a.rows.push_back(c.execute(Statement{"BEGIN IMMEDIATE", {}}));
}

void commit(SqliteConnection& c, SqliteAnswer& a) {
  if (!c.in_transaction()) {
    a.rows.push_back(Rows::failed(Rows::Failure::statement, "no transaction is open to commit", "1"));
    return;
  }
  a.rows.push_back(c.execute(Statement{"COMMIT", {}}));
  c.rollback();  // a COMMIT that failed leaves it open
}

SqliteAnswer perform(SqliteConnection& c, SqliteJob& job) {
  SqliteAnswer a;
  a.id = job.id;
  a.work = job.work;
  a.statements = job.statements.size();
  c.watch(job.stop.get());
  switch (job.work) {
    case SqliteWork::read:
      if (!holds_a_write(c, job, a)) run_each(c, job, a);
      break;
    case SqliteWork::write:
    case SqliteWork::transaction: run_each(c, job, a); break;
    case SqliteWork::begin: begin(c, job, a); break;
    case SqliteWork::commit: commit(c, a); break;
    case SqliteWork::rollback:
      c.rollback();
      a.rows.emplace_back();
      break;
  }
  c.watch(nullptr);
  return a;
}

}  // namespace

SqliteThreads::SqliteThreads(EventLoop& loop, const SqliteConnectionOptions& connection, std::size_t readers,
                             Deliver deliver)
    : loop_(loop), deliver_(std::move(deliver)), wake_fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
  if (!wake_fd_) throw std::runtime_error("eventfd for a SQLite database failed");
  loop_.watch(wake_fd_.get(), EPOLLIN, [this](std::uint32_t) { this->deliver(); });
  SqliteConnectionOptions o = connection;
  o.closing = &closing_;
  o.writer = true;
  threads_.emplace_back([this, o] { serve(o, writer_jobs_, writer_ready_); });
  o.writer = false;
  for (std::size_t i = 0; i < readers; ++i)
    threads_.emplace_back([this, o] { serve(o, reader_jobs_, readers_ready_); });
}

SqliteThreads::~SqliteThreads() {
  {
    std::lock_guard lock(mutex_);
    closing_ = true;
  }
  writer_ready_.notify_all();
  readers_ready_.notify_all();
  for (auto& t : threads_) t.join();
  loop_.unwatch(wake_fd_.get());
}

void SqliteThreads::to_writer(SqliteJob job) {
  {
    std::lock_guard lock(mutex_);
    writer_jobs_.push_back(std::move(job));
  }
  writer_ready_.notify_one();
}

void SqliteThreads::to_readers(SqliteJob job) {
  {
    std::lock_guard lock(mutex_);
    reader_jobs_.push_back(std::move(job));
  }
  readers_ready_.notify_one();
}

void SqliteThreads::serve(SqliteConnectionOptions connection, std::deque<SqliteJob>& jobs,
                          std::condition_variable& ready) {
  // Opened here, not on the loop: opening reads the file (and may recover
  // its journal).
  std::optional<SqliteConnection> c(std::in_place, std::move(connection));
  if (!c->usable()) spdlog::warn("database: {}", c->error());
  for (;;) {
    SqliteJob job;
    {
      std::unique_lock lock(mutex_);
      ready.wait(lock, [&] { return closing_ || !jobs.empty(); });
      if (closing_) break;
      job = std::move(jobs.front());
      jobs.pop_front();
    }
    answer(perform(*c, job));
  }
  // Closed one at a time: SQLite removes the WAL file only when the last
  // connection closes alone. Two closing at once each see the other open
  // and both leave it.
  std::lock_guard one_at_a_time(close_mutex_);
  c.reset();
}

void SqliteThreads::answer(SqliteAnswer a) {
  bool wake;
  {
    std::lock_guard lock(mutex_);
    wake = answers_.empty();  // the loop takes them all at once
    answers_.push_back(std::move(a));
  }
  if (!wake) return;
  const std::uint64_t one = 1;
  [[maybe_unused]] auto n = ::write(wake_fd_.get(), &one, sizeof one);
}

void SqliteThreads::deliver() {
  std::uint64_t count;
  [[maybe_unused]] auto n = ::read(wake_fd_.get(), &count, sizeof count);
  std::deque<SqliteAnswer> ready;
  {
    std::lock_guard lock(mutex_);
    ready.swap(answers_);
  }
  for (auto& a : ready) deliver_(std::move(a));
}

}  // namespace edri::database
