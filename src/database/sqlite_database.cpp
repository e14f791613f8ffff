#include "database/sqlite_database.hpp"

#include <algorithm>
#include <filesystem>
#include <stdexcept>

namespace edri::database {

using std::chrono::milliseconds;

namespace {

constexpr const char* kQueueFull = "the database's queue is full (EDRI_DATABASE_QUEUE)";

}  // namespace

// A transaction's hold on the writer, from BEGIN until end().
class SqliteDatabase::Session final : public edri::Database::Session {
 public:
  Session(SqliteDatabase& db, std::uint64_t id) : db_(&db), alive_(db.alive_), id_(id) {}
  ~Session() override {
    if (!ended_) end(false, Deadline::max(), {});
  }

  std::function<void()> run(std::vector<Statement> statements, Deadline deadline, Done done) override {
    if (!*alive_) return [] {};
    if (ended_) return db_->refuse(std::move(done), statements.size(), "the transaction has ended");
    return db_->run_in(failed_, std::move(statements), deadline, std::move(done));
  }

  void end(bool commit, Deadline deadline, Done done) override {
    const bool was_ended = std::exchange(ended_, true);
    if (!*alive_) return;
    if (was_ended) {
      if (done) db_->refuse(std::move(done), 1, "the transaction has ended");
      return;
    }
    db_->end(id_, commit, failed_, deadline, std::move(done));
  }

 private:
  SqliteDatabase* db_;
  std::shared_ptr<bool> alive_;
  std::uint64_t id_;
  std::shared_ptr<bool> failed_ = std::make_shared<bool>(false);
  bool ended_ = false;
};

SqliteDatabase::SqliteDatabase(EventLoop& loop, DatabaseOptions options)
    : loop_(loop),
      options_(std::move(options)),
      deadlines_(loop, [this](std::uint64_t id) { stop(id, true); }),
      next_turn_(loop) {
  SqliteConnectionOptions c;
  c.path = file_of(options_);
  c.statement_cache = options_.statement_cache;
  c.busy_timeout = std::min(options_.timeout, milliseconds(5000));
  // In memory, each connection would have a database of its own.
  const std::size_t readers = c.path == ":memory:" ? 0 : std::max<std::size_t>(options_.pool_size, 1);
  threads_ = std::make_unique<SqliteThreads>(loop_, c, readers, [this](SqliteAnswer a) { on_answer(std::move(a)); });
}

SqliteDatabase::~SqliteDatabase() {
  *alive_ = false;
  threads_.reset();  // before the members its answers would touch
}

std::string SqliteDatabase::file_of(const DatabaseOptions& options) {
  std::string_view rest = options.url;
  if (!rest.starts_with("sqlite:")) throw std::invalid_argument("the database " + options.name + ": not a sqlite: URL");
  rest.remove_prefix(7);
  if (rest.starts_with("//")) rest.remove_prefix(2);  // sqlite:///abs/file.db
  if (rest == ":memory:") return std::string(rest);
  if (rest.empty()) throw std::invalid_argument("the database " + options.name + ": its sqlite: URL names no file");
  // Checked now, once, so that a wrong path stops start-up: the file
  // itself is opened (and made) by the database's threads.
  const std::filesystem::path file(rest);
  const auto folder = file.has_parent_path() ? file.parent_path() : std::filesystem::path(".");
  std::error_code ec;
  if (!std::filesystem::is_directory(folder, ec))
    throw std::invalid_argument("the database " + options.name + ": the folder of " + file.string() +
                                " does not exist");
  return file.string();
}

std::function<void()> SqliteDatabase::run(std::vector<Statement> statements, Deadline deadline, Done done) {
  if (statements.empty()) {
    next_turn_.post([done = std::move(done)] { done({}); });
    return [] {};
  }
  if (full(statements.size())) return refuse(std::move(done), statements.size(), kQueueFull);
  const auto id = add(SqliteWork::read, statements.size(), deadline);
  batches_[id].done = std::move(done);
  route(id, std::move(statements));
  return stopper(id);
}

std::function<void()> SqliteDatabase::begin(Deadline deadline, Began began) {
  if (full(1)) {
    next_turn_.post(
        [began = std::move(began)] { began(nullptr, Rows::failed(Rows::Failure::unavailable, kQueueFull)); });
    return [] {};
  }
  const auto id = add(SqliteWork::begin, 1, deadline);
  batches_[id].began = std::move(began);
  to_writer(id, SqliteWork::begin, {});
  return stopper(id);
}

std::uint64_t SqliteDatabase::add(SqliteWork work, std::size_t statements, Deadline deadline) {
  const auto id = ++last_id_;
  Batch& b = batches_[id];
  b.work = work;
  b.statements = statements;
  b.deadline = bounded(deadline);
  b.stop = std::make_shared<std::atomic<bool>>(false);
  pending_ += statements;
  deadlines_.watch(id, b.deadline);
  return id;
}

void SqliteDatabase::route(std::uint64_t id, std::vector<Statement> statements) {
  bool writes = false, unknown = false;
  for (const Statement& s : statements) {
    const auto it = reads_only_.find(s.sql);
    unknown = unknown || it == reads_only_.end();
    writes = writes || (it != reads_only_.end() && !it->second);
  }
  if (writes || threads_->readers() == 0) return to_writer(id, SqliteWork::write, std::move(statements));
  threads_->to_readers(SqliteJob{id, SqliteWork::read, std::move(statements), batches_.at(id).stop, unknown});
}

void SqliteDatabase::to_writer(std::uint64_t id, SqliteWork work, std::vector<Statement> statements) {
  Batch& b = batches_.at(id);
  b.work = work;
  if (holder_ != 0) {
    b.waiting = true;
    b.queued = std::move(statements);
    write_queue_.push_back(id);
    return;
  }
  if (work == SqliteWork::begin) holder_ = id;
  threads_->to_writer(SqliteJob{id, work, std::move(statements), b.stop, false});
}

void SqliteDatabase::on_answer(SqliteAnswer a) {
  learn(a.learned);
  const auto it = batches_.find(a.id);
  if (it == batches_.end()) return;  // stopped, timed out, or nobody waits for it
  if (a.sent_back) return to_writer(a.id, SqliteWork::write, std::move(a.writes));
  Batch b = std::move(it->second);
  batches_.erase(it);
  pending_ -= b.statements;
  deadlines_.forget(a.id, b.deadline);
  settle(a.id, std::move(b), std::move(a.rows));
}

void SqliteDatabase::settle(std::uint64_t id, Batch b, std::vector<Rows> rows) {
  if (b.work == SqliteWork::begin) {
    if (rows.size() == 1 && rows[0].ok()) return b.began(std::make_shared<Session>(*this, id), Rows{});
    release(id);
    return b.began(nullptr, rows.empty() ? Rows::failed(Rows::Failure::unavailable, "no answer") : std::move(rows[0]));
  }
  if (b.failed)
    for (const Rows& r : rows) *b.failed = *b.failed || !r.ok();
  if (b.done) b.done(std::move(rows));
}

void SqliteDatabase::learn(const std::vector<std::pair<std::string, bool>>& learned) {
  // Bounded like the connections' caches of prepared statements.
  if (reads_only_.size() + learned.size() > 4 * std::max<std::size_t>(options_.statement_cache, 64))
    reads_only_.clear();
  for (const auto& [sql, reads] : learned) reads_only_.insert_or_assign(sql, reads);
}

void SqliteDatabase::stop(std::uint64_t id, bool timed_out) {
  const auto it = batches_.find(id);
  if (it == batches_.end()) return;
  Batch b = std::move(it->second);
  batches_.erase(it);
  pending_ -= b.statements;
  deadlines_.forget(id, b.deadline);
  if (b.waiting)
    write_queue_.erase(std::find(write_queue_.begin(), write_queue_.end(), id));
  else if (b.stop)
    b.stop->store(true);
  // Stopped, it may have run: its transaction cannot trust it.
  if (b.failed) *b.failed = true;
  if (b.work == SqliteWork::begin && !b.waiting) {
    // Its BEGIN may run still: nobody would end that transaction.
    threads_->to_writer(SqliteJob{0, SqliteWork::rollback, {}, nullptr, false});
    release(id);
  }
  if (!timed_out) return;
  const char* why = b.waiting ? "the writer was not free in time" : "the statement did not end in time";
  if (b.began) b.began(nullptr, Rows::failed(Rows::Failure::timeout, why));
  if (b.done) b.done(failed_all(b.statements, Rows::Failure::timeout, why));
}

void SqliteDatabase::release(std::uint64_t holder) {
  if (holder_ != holder) return;
  holder_ = 0;
  while (holder_ == 0 && !write_queue_.empty()) {
    const auto id = write_queue_.front();
    write_queue_.pop_front();
    Batch& b = batches_.at(id);
    b.waiting = false;
    if (b.work == SqliteWork::begin) holder_ = id;
    threads_->to_writer(SqliteJob{id, b.work, std::exchange(b.queued, {}), b.stop, false});
  }
}

std::function<void()> SqliteDatabase::run_in(std::shared_ptr<bool> failed, std::vector<Statement> statements,
                                             Deadline deadline, Done done) {
  const auto n = statements.size();
  if (n == 0) {
    next_turn_.post([done = std::move(done)] { done({}); });
    return [] {};
  }
  if (full(n)) {
    *failed = true;
    return refuse(std::move(done), n, kQueueFull);
  }
  const auto id = add(SqliteWork::transaction, n, deadline);
  Batch& b = batches_[id];
  b.done = std::move(done);
  b.failed = std::move(failed);
  // The writer is this transaction's: nothing else was sent to it since.
  threads_->to_writer(SqliteJob{id, SqliteWork::transaction, std::move(statements), b.stop, false});
  return stopper(id);
}

void SqliteDatabase::end(std::uint64_t transaction, bool commit, const std::shared_ptr<bool>& failed, Deadline deadline,
                         Done done) {
  const auto work = commit && !*failed ? SqliteWork::commit : SqliteWork::rollback;
  std::uint64_t id = 0;
  if (done) {
    id = add(work, 1, deadline);
    Batch& b = batches_[id];
    b.stop = nullptr;  // the writer must end the transaction whatever happens
    b.done = std::move(done);
    if (commit && *failed)
      // Say what happened rather than the ROLLBACK's success.
      b.done = [done = std::move(b.done)](std::vector<Rows>) {
        done(failed_all(1, Rows::Failure::statement, "the transaction was rolled back: a statement of it failed"));
      };
  }
  threads_->to_writer(SqliteJob{id, work, {}, nullptr, false});
  // Writes that waited go after the COMMIT or ROLLBACK.
  release(transaction);
}

std::function<void()> SqliteDatabase::refuse(Done done, std::size_t statements, const char* why) {
  if (done)
    next_turn_.post(
        [done = std::move(done), statements, why] { done(failed_all(statements, Rows::Failure::unavailable, why)); });
  return [] {};
}

SqliteDatabase::Deadline SqliteDatabase::bounded(Deadline deadline) const {
  return std::min(deadline, std::chrono::steady_clock::now() + options_.timeout);
}

std::function<void()> SqliteDatabase::stopper(std::uint64_t id) {
  return [this, alive = alive_, id] {
    if (*alive) stop(id, false);
  };
}

}  // namespace edri::database
