#include "database/pg_database.hpp"

#include <libpq-fe.h>

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <thread>

#include <spdlog/spdlog.h>

namespace edri::database {

using std::chrono::milliseconds;

// Sends PQcancel, which connects to the server and waits, off the loop:
// one thread per database, started at the first cancel. Its state is
// shared with the thread, which is detached, so that a cancel stuck on an
// unreachable server never holds the manager's stop; it ends after the
// cancel it is sending.
class CancelThread {
 public:
  ~CancelThread() {
    {
      std::lock_guard lock(state_->mutex);
      state_->stopping = true;
    }
    state_->wake.notify_one();
  }
  void send(std::shared_ptr<pg_cancel> handle) {
    std::lock_guard lock(state_->mutex);
    state_->queue.push_back(std::move(handle));
    if (!started_) {
      started_ = true;
      std::thread([state = state_] { drain(*state); }).detach();
    }
    state_->wake.notify_one();
  }

 private:
  struct State {
    std::mutex mutex;
    std::condition_variable wake;
    std::deque<std::shared_ptr<pg_cancel>> queue;
    bool stopping = false;
  };
  static void drain(State& s) {
    for (;;) {
      std::unique_lock lock(s.mutex);
      s.wake.wait(lock, [&] { return s.stopping || !s.queue.empty(); });
      if (s.stopping) return;
      auto handle = std::move(s.queue.front());
      s.queue.pop_front();
      lock.unlock();
      char error[256];
      if (!PQcancel(handle.get(), error, sizeof error)) spdlog::debug("database: a cancel was not sent: {}", error);
    }
  }
  std::shared_ptr<State> state_ = std::make_shared<State>();
  bool started_ = false;
};

namespace {

Rows refused(const PgSubmission& s) {
  const auto kind = s.refusal == PgSubmission::Refusal::invalid ? Rows::Failure::statement : Rows::Failure::unavailable;
  return Rows::failed(kind, s.message);
}

}  // namespace

// A transaction's hold on one connection, from BEGIN until end().
class PgDatabase::Session final : public edri::Database::Session {
 public:
  Session(PgDatabase& db, std::size_t link, std::uint64_t generation)
      : db_(&db), alive_(db.alive_), link_(link), generation_(generation) {}
  ~Session() override {
    if (!ended_) end(false, Deadline::max(), {});
  }

  std::function<void()> run(std::vector<Statement> statements, Deadline deadline, Done done) override {
    Link* link = usable();
    if (!link || ended_) {
      fail(std::move(done), statements.size(), ended_ ? "the transaction has ended" : "its connection was lost");
      return [] {};
    }
    const auto id = ++db_->last_id_;
    // A failed statement aborts the transaction: COMMIT then rolls back.
    db_->submit(*link, id, std::move(statements), deadline,
                [failed = failed_, done = std::move(done)](std::vector<Rows> rows) {
                  for (const auto& r : rows) *failed = *failed || !r.ok();
                  done(std::move(rows));
                });
    return [this, alive = alive_, failed = failed_, id] {
      *failed = true;
      if (*alive) db_->stop(id, false);
    };
  }

  void end(bool commit, Deadline deadline, Done done) override {
    Link* link = usable();
    if (ended_ || !link) {
      if (done) fail(std::move(done), 1, ended_ ? "the transaction has ended" : "its connection was lost");
      ended_ = true;
      return;
    }
    ended_ = true;
    if (!done) done = [](std::vector<Rows>) {};
    if (commit && *failed_) {
      // Postgres answers COMMIT of an aborted transaction with success
      // (and rolls back): say what happened instead.
      done = [done = std::move(done)](std::vector<Rows>) {
        done(failed_all(1, Rows::Failure::statement, "the transaction was rolled back: a statement of it failed"));
      };
    }
    std::vector<Statement> last;
    last.push_back(Statement{commit ? "COMMIT" : "ROLLBACK", {}});
    db_->submit(*link, ++db_->last_id_, std::move(last), deadline, std::move(done));
    // Statements sent later on this connection follow the COMMIT.
    db_->release(link_, generation_);
  }

 private:
  Link* usable() const {
    if (!*alive_) return nullptr;
    Link& l = db_->links_[link_];
    return l.generation == generation_ && l.conn && l.conn->state() != PgConnection::State::down ? &l : nullptr;
  }
  void fail(Done done, std::size_t n, const char* why) const {
    if (!*alive_) return;
    db_->next_turn_.post([done = std::move(done), n, why] { done(failed_all(n, Rows::Failure::unavailable, why)); });
  }

  PgDatabase* db_;
  std::shared_ptr<bool> alive_;
  std::size_t link_;
  std::uint64_t generation_;
  std::shared_ptr<bool> failed_ = std::make_shared<bool>(false);
  bool ended_ = false;
};

PgDatabase::PgDatabase(EventLoop& loop, DatabaseOptions options)
    : loop_(loop),
      options_(std::move(options)),
      deadlines_(loop, [this](std::uint64_t id) { stop(id, true); }),
      next_turn_(loop, [this] { retired_.clear(); }),
      canceller_(std::make_unique<CancelThread>()) {
  links_.resize(std::max<std::size_t>(options_.pool_size, 1));
  for (std::size_t i = 0; i < links_.size(); ++i) {
    links_[i].reconnect = std::make_unique<EventLoop::Timer>(loop_, [this, i] { open(i); });
    open(i);
  }
}

PgDatabase::~PgDatabase() { *alive_ = false; }

void PgDatabase::open(std::size_t i) {
  Link& link = links_[i];
  const auto generation = ++link.generation;
  link.prepared.clear();
  link.held = false;
  PgConnectionOptions o;
  o.conninfo = options_.url;
  o.max_pending = std::max<std::size_t>(options_.max_queued, 1);
  o.connect_timeout = options_.connect_timeout;
  o.server_options = "-c statement_timeout=" + std::to_string(options_.timeout.count());
  PgConnection::Events events;
  events.ready = [this, i] {
    links_[i].failures = 0;
    serve_waiters();
  };
  events.down = [this, i, generation](const std::string& reason) {
    spdlog::warn("database {}: connection {} down: {}", options_.name, i + 1, reason);
    on_down(i, generation);
  };
  link.conn = std::make_unique<PgConnection>(loop_, std::move(o), std::move(events));
}

void PgDatabase::on_down(std::size_t i, std::uint64_t generation) {
  Link& link = links_[i];
  if (link.generation != generation || !link.conn) return;
  // Told from inside the connection: destroyed on the next turn.
  retired_.push_back(std::move(link.conn));
  next_turn_.post([] {});
  ++link.generation;  // its transaction's session sees it is gone
  link.held = false;
  // At once after a connection that worked, then backing off.
  const auto delay = link.failures == 0 ? milliseconds(0) : milliseconds(100 << std::min(link.failures - 1, 4u));
  ++link.failures;
  link.reconnect->expires_after(delay);
  if (any_coming_up()) return;
  // Nothing can serve what waits for a connection.
  for (auto& w : std::exchange(waiters_, {})) {
    if (w.began) w.began(nullptr, Rows::failed(Rows::Failure::unavailable, "no connection to the database"));
    if (w.done) w.done(failed_all(w.statements.size(), Rows::Failure::unavailable, "no connection to the database"));
  }
}

PgDatabase::Link* PgDatabase::pick() {
  Link* best = nullptr;
  for (Link& l : links_) {
    if (!l.conn || l.held || l.conn->state() != PgConnection::State::ready) continue;
    if (!best || l.conn->pending() < best->conn->pending()) best = &l;
  }
  return best;
}

bool PgDatabase::any_coming_up() const {
  return std::any_of(links_.begin(), links_.end(),
                     [](const Link& l) { return l.conn && l.conn->state() != PgConnection::State::down; });
}

std::size_t PgDatabase::connections_ready() const {
  return static_cast<std::size_t>(std::count_if(links_.begin(), links_.end(), [](const Link& l) {
    return l.conn && l.conn->state() == PgConnection::State::ready;
  }));
}

std::size_t PgDatabase::statements_pending() const {
  std::size_t n = in_flight_;
  for (const Waiter& w : waiters_) n += std::max<std::size_t>(w.statements.size(), 1);
  return n;
}

std::function<void()> PgDatabase::run(std::vector<Statement> statements, Deadline deadline, Done done) {
  const auto n = statements.size();
  if (n == 0) {
    next_turn_.post([done = std::move(done)] { done({}); });
    return [] {};
  }
  auto refuse = [&](const char* why) {
    next_turn_.post([done = std::move(done), n, why] { done(failed_all(n, Rows::Failure::unavailable, why)); });
    return [] {};
  };
  if (statements_pending() + n > options_.max_queued)
    return refuse("the database's queue is full (EDRI_DATABASE_QUEUE)");
  const auto id = ++last_id_;
  if (Link* link = pick()) {
    submit(*link, id, std::move(statements), deadline, std::move(done));
    return stopper(id);
  }
  if (!any_coming_up()) return refuse("no connection to the database (it is down or refuses)");
  waiters_.push_back(Waiter{id, std::move(statements), std::move(done), {}, bounded(deadline)});
  deadlines_.watch(id, waiters_.back().deadline);
  return stopper(id);
}

std::function<void()> PgDatabase::begin(Deadline deadline, Began began) {
  auto refuse = [&](const char* why) {
    next_turn_.post([began = std::move(began), why] { began(nullptr, Rows::failed(Rows::Failure::unavailable, why)); });
    return [] {};
  };
  if (statements_pending() + 1 > options_.max_queued)
    return refuse("the database's queue is full (EDRI_DATABASE_QUEUE)");
  const auto id = ++last_id_;
  if (Link* link = pick()) {
    start_transaction(*link, id, deadline, std::move(began));
    return stopper(id);
  }
  if (!any_coming_up()) return refuse("no connection to the database (it is down or refuses)");
  waiters_.push_back(Waiter{id, {}, {}, std::move(began), bounded(deadline)});
  deadlines_.watch(id, waiters_.back().deadline);
  return stopper(id);
}

void PgDatabase::start_transaction(Link& link, std::uint64_t id, Deadline deadline, Began began) {
  link.held = true;
  const std::size_t index = static_cast<std::size_t>(&link - links_.data());
  const auto generation = link.generation;
  std::vector<Statement> begin;
  begin.push_back(Statement{"BEGIN", {}});
  submit(link, id, std::move(begin), deadline,
         [this, index, generation, began = std::move(began)](std::vector<Rows> rows) {
           if (rows.empty() || !rows[0].ok()) {
             release(index, generation);
             return began(nullptr,
                          rows.empty() ? Rows::failed(Rows::Failure::unavailable, "no answer") : std::move(rows[0]));
           }
           began(std::make_shared<Session>(*this, index, generation), Rows{});
         });
  batches_[id].opens_transaction = true;
}

void PgDatabase::submit(Link& link, std::uint64_t id, std::vector<Statement> statements, Deadline deadline, Done done) {
  Batch& b = batches_[id];
  b.done = std::move(done);
  b.rows.resize(statements.size());
  b.ids.assign(statements.size(), 0);
  b.left = statements.size();
  in_flight_ += b.left;
  b.link = static_cast<std::size_t>(&link - links_.data());
  b.generation = link.generation;
  b.deadline = bounded(deadline);
  deadlines_.watch(id, b.deadline);
  for (std::size_t i = 0; i < statements.size(); ++i) send(link, id, i, std::move(statements[i]));
}

void PgDatabase::send(Link& link, std::uint64_t id, std::size_t index, Statement statement) {
  PgParams params;
  params.reserve(statement.params.size());
  for (const SqlValue& v : statement.params) params.push_back(v.is_null() ? PgParam{} : PgParam{v.text()});
  auto it = link.prepared.find(statement.sql);
  if (it == link.prepared.end() && link.prepared.size() < options_.statement_cache &&
      prepare(link, statement.sql, static_cast<int>(params.size())))
    it = link.prepared.find(statement.sql);
  std::shared_ptr<std::optional<Rows>> failed = it == link.prepared.end() ? nullptr : it->second.failed;
  auto answered = [this, alive = alive_, id, index, failed](PgResult r) {
    if (!*alive) return;
    // An execute behind a prepare that failed answers with its reason,
    // not "prepared statement does not exist".
    answer(id, index, failed && *failed && !r.ok() ? **failed : r.to_rows());
  };
  const PgSubmission s = it != link.prepared.end()
                             ? link.conn->execute(it->second.name, std::move(params), std::move(answered))
                             : link.conn->query(std::move(statement.sql), std::move(params), std::move(answered));
  if (s) {
    batches_[id].ids[index] = s.id;
    return;
  }
  next_turn_.post([this, id, index, rows = refused(s)]() mutable { answer(id, index, std::move(rows)); });
}

bool PgDatabase::prepare(Link& link, const std::string& sql, int n_params) {
  Prepared p{"edri_" + std::to_string(++last_statement_name_), std::make_shared<std::optional<Rows>>()};
  const auto generation = link.generation;
  const std::size_t index = static_cast<std::size_t>(&link - links_.data());
  // One that does not prepare is prepared afresh at its next use.
  const auto submitted = link.conn->prepare(
      p.name, sql, n_params, [this, alive = alive_, failed = p.failed, index, generation, sql](PgResult r) {
        if (r.ok() || !*alive) return;
        *failed = r.to_rows();
        Link& l = links_[index];
        if (const auto it = l.prepared.find(sql);
            l.generation == generation && it != l.prepared.end() && it->second.failed == failed)
          l.prepared.erase(it);
      });
  if (!submitted) return false;
  link.prepared.emplace(sql, std::move(p));
  return true;
}

void PgDatabase::answer(std::uint64_t id, std::size_t index, Rows rows) {
  const auto it = batches_.find(id);
  if (it == batches_.end()) return;
  Batch& b = it->second;
  b.rows[index] = std::move(rows);
  b.ids[index] = 0;
  --in_flight_;
  if (--b.left > 0) return;
  Done done = std::move(b.done);
  auto all = std::move(b.rows);
  deadlines_.forget(id, b.deadline);
  batches_.erase(it);
  if (done) done(std::move(all));
}

void PgDatabase::stop(std::uint64_t id, bool timed_out) {
  const auto it = batches_.find(id);
  if (it == batches_.end()) return stop_waiter(id, timed_out);
  Batch b = std::move(it->second);
  batches_.erase(it);
  deadlines_.forget(id, b.deadline);
  in_flight_ -= b.left;
  Link& link = links_[b.link];
  if (link.generation == b.generation && link.conn) {
    for (const auto sid : b.ids)
      if (sid) link.conn->cancel(sid);
    // The server runs statements in order: only the first still awaited
    // can be running now.
    for (const auto sid : b.ids)
      if (sid && link.conn->alone_in_flight(sid)) {
        cancel_on_server(link, sid);
        break;
      }
    if (b.opens_transaction) end_unopened(link);
  }
  if (timed_out && b.done)
    b.done(failed_all(b.rows.size(), Rows::Failure::timeout, "the statement did not end in time"));
}

void PgDatabase::end_unopened(Link& link) {
  // A BEGIN whose wait was stopped: nobody will end its transaction.
  std::vector<Statement> rollback;
  rollback.push_back(Statement{"ROLLBACK", {}});
  submit(link, ++last_id_, std::move(rollback), Deadline::max(), [](std::vector<Rows>) {});
  release(static_cast<std::size_t>(&link - links_.data()), link.generation);
}

void PgDatabase::stop_waiter(std::uint64_t id, bool timed_out) {
  const auto it = std::find_if(waiters_.begin(), waiters_.end(), [id](const Waiter& w) { return w.id == id; });
  if (it == waiters_.end()) return;
  Waiter w = std::move(*it);
  waiters_.erase(it);
  deadlines_.forget(id, w.deadline);
  if (!timed_out) return;
  const char* why = "no connection of the database was free in time";
  if (w.began) w.began(nullptr, Rows::failed(Rows::Failure::timeout, why));
  if (w.done) w.done(failed_all(w.statements.size(), Rows::Failure::timeout, why));
}

void PgDatabase::cancel_on_server(Link& link, PgStatementId) {
  if (auto handle = link.conn->cancel_handle()) {
    canceller_->send(std::move(handle));
    ++server_cancels_;
  }
}

void PgDatabase::release(std::size_t index, std::uint64_t generation) {
  if (links_[index].generation != generation) return;
  links_[index].held = false;
  if (!waiters_.empty()) next_turn_.post([this] { serve_waiters(); });
}

void PgDatabase::serve_waiters() {
  while (!waiters_.empty()) {
    Link* link = pick();
    if (!link) return;
    Waiter w = std::move(waiters_.front());
    waiters_.pop_front();
    deadlines_.forget(w.id, w.deadline);
    if (w.began)
      start_transaction(*link, w.id, w.deadline, std::move(w.began));
    else
      submit(*link, w.id, std::move(w.statements), w.deadline, std::move(w.done));
  }
}

PgDatabase::Deadline PgDatabase::bounded(Deadline deadline) const {
  return std::min(deadline, std::chrono::steady_clock::now() + options_.timeout);
}

std::function<void()> PgDatabase::stopper(std::uint64_t id) {
  return [this, alive = alive_, id] {
    if (*alive) stop(id, false);
  };
}

}  // namespace edri::database
