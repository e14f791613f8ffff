#include "database/pg_connection.hpp"

#include <libpq-fe.h>
#include <spdlog/spdlog.h>
#include <sys/epoll.h>

#include <algorithm>

namespace edri::database {

namespace {

// Postgres's limit: a Bind message counts its parameters in 16 bits.
constexpr std::size_t kMaxParams = 65535;

// SQLSTATEs of the failures made here (class 08, connection exception).
constexpr const char* kConnectionFailure = "08006";
constexpr const char* kCannotConnect = "08001";

// libpq's messages span lines ("server closed the connection
// unexpectedly\n\tThis probably means..."): one line reads better in a
// log and an answer.
std::string one_line(const char* message) {
  std::string out;
  bool space = false;
  for (const char* p = message ? message : ""; *p; ++p) {
    const bool blank = *p == '\n' || *p == '\t' || *p == ' ' || *p == '\r';
    if (blank) {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += *p;
  }
  return out;
}

// What a parameter list would make libpq or the server refuse or, worse,
// silently change: a text value is sent up to its first NUL byte.
std::string invalid_params(const PgParams& params) {
  if (params.size() > kMaxParams) return "more than 65535 parameters";
  for (std::size_t i = 0; i < params.size(); ++i)
    if (params[i] && params[i]->find('\0') != std::string::npos)
      return "parameter $" + std::to_string(i + 1) + " holds a NUL byte, which Postgres text cannot";
  return {};
}

// Notices (a DROP ... IF EXISTS that found nothing) would go to stderr.
void log_notice(void*, const char* message) { spdlog::debug("postgres: {}", one_line(message)); }

}  // namespace

PgConnection::PgConnection(EventLoop& loop, PgConnectionOptions options, Events events)
    : loop_(loop), options_(std::move(options)), events_(std::move(events)), timer_(loop, [this] { on_timer(); }) {
  start_connect();
}

PgConnection::~PgConnection() {
  *alive_ = false;
  stop_watching();
  if (conn_) PQfinish(conn_);
}

void PgConnection::start_connect() {
  // client_encoding last, so that it wins over the URL's: rows become
  // JSON, which is UTF-8.
  // TCP keepalives first, so that the URL's own win: a server gone
  // silent (a partition, a host that died) is noticed in about 25 s
  // instead of the system's two hours, even with no statement waiting.
  const char* keywords[] = {"keepalives_idle",
                            "keepalives_interval",
                            "keepalives_count",
                            "dbname",
                            "client_encoding",
                            options_.server_options.empty() ? nullptr : "options",
                            nullptr};
  const char* values[] = {"10", "5", "3", options_.conninfo.c_str(), "UTF8", options_.server_options.c_str(), nullptr};
  conn_ = PQconnectStartParams(keywords, values, /*expand_dbname=*/1);
  if (!conn_) {
    fail("cannot connect to Postgres: out of memory");
    return;
  }
  if (PQstatus(conn_) == CONNECTION_BAD) {
    fail("cannot connect to Postgres: " + libpq_error());
    return;
  }
  PQsetNoticeProcessor(conn_, log_notice, nullptr);
  timer_.expires_after(options_.connect_timeout);
  // Before the first PQconnectPoll, libpq waits to write (its connect).
  watch_socket(EPOLLOUT);
}

PgSubmission PgConnection::query(std::string sql, PgParams params, Done done) {
  return submit({Statement::Kind::query, {}, std::move(sql), 0, std::move(params)}, std::move(done));
}

PgSubmission PgConnection::prepare(std::string name, std::string sql, int n_params, Done done) {
  if (n_params < 0 || static_cast<std::size_t>(n_params) > kMaxParams)
    return {0, PgSubmission::Refusal::invalid, "a statement takes 0 to 65535 parameters"};
  return submit({Statement::Kind::prepare, std::move(name), std::move(sql), n_params, {}}, std::move(done));
}

PgSubmission PgConnection::execute(std::string name, PgParams params, Done done) {
  return submit({Statement::Kind::execute, std::move(name), {}, 0, std::move(params)}, std::move(done));
}

PgSubmission PgConnection::submit(Statement statement, Done done) {
  using Refusal = PgSubmission::Refusal;
  if (state_ == State::down) return {0, Refusal::down, "Postgres connection is down: " + down_reason_};
  if (pending_.size() >= options_.max_pending)
    return {0, Refusal::queue_full,
            "Postgres connection has " + std::to_string(pending_.size()) + " statements pending, its limit"};
  if (std::string why = invalid_params(statement.params); !why.empty()) return {0, Refusal::invalid, why};
  const PgStatementId id = ++last_id_;
  Pending& entry = pending_.emplace_back();
  entry.id = id;
  entry.done = std::move(done);
  // In a batch, the sync comes when the batch ends.
  entry.synced = write_batches_ == 0;
  if (state_ == State::connecting) {
    entry.unsent = std::move(statement);
    return {id, Refusal::none, {}};
  }
  // A failure here is the connection's: reported to every callback, this
  // one's included, on the next turn of the loop.
  if (send(statement, entry.synced) && entry.synced) flush();
  return {id, Refusal::none, {}};
}

PgConnection::WriteBatch::WriteBatch(PgConnection& conn) : conn_(conn), alive_(conn.alive_) { ++conn_.write_batches_; }

PgConnection::WriteBatch::~WriteBatch() {
  if (*alive_ && --conn_.write_batches_ == 0) conn_.end_batch();
}

void PgConnection::end_batch() {
  // Only the batch's own statements, at the tail, can lack their sync.
  if (pending_.empty() || pending_.back().synced) return;
  pending_.back().synced = true;
  if (state_ != State::ready) return;  // sent with it once connected
  if (!PQpipelineSync(conn_)) {
    fail("Postgres connection lost: " + libpq_error());
    return;
  }
  flush();
}

bool PgConnection::send(const Statement& s, bool sync) {
  param_values_.clear();
  for (const PgParam& p : s.params) param_values_.push_back(p ? p->c_str() : nullptr);
  const int n = static_cast<int>(s.params.size());
  int sent = 0;
  switch (s.kind) {
    case Statement::Kind::query:
      sent = PQsendQueryParams(conn_, s.sql.c_str(), n, nullptr, param_values_.data(), nullptr, nullptr, 0);
      break;
    case Statement::Kind::prepare:
      sent = PQsendPrepare(conn_, s.name.c_str(), s.sql.c_str(), s.n_params, nullptr);
      break;
    case Statement::Kind::execute:
      sent = PQsendQueryPrepared(conn_, s.name.c_str(), n, param_values_.data(), nullptr, nullptr, 0);
      break;
  }
  // A sync ends the statement's segment: an error aborts the rest of its
  // segment only. (libpq 15's PQpipelineSync also writes what is
  // buffered, hence one write per segment.)
  if (sent && (!sync || PQpipelineSync(conn_))) return true;
  fail("Postgres connection lost: " + libpq_error());
  return false;
}

void PgConnection::flush() {
  const int left = PQflush(conn_);
  if (left < 0) {
    fail("Postgres connection lost: " + libpq_error());
    return;
  }
  // The rest goes when the socket takes it; answers are read meanwhile.
  const std::uint32_t wanted = left ? EPOLLIN | EPOLLOUT : EPOLLIN;
  if (wanted != watched_events_) {
    loop_.rewatch_level(watched_fd_, wanted);
    watched_events_ = wanted;
  }
}

void PgConnection::on_socket(std::uint32_t events) {
  if (state_ == State::connecting)
    connect_step();
  else if (state_ == State::ready)
    on_io(events);
}

void PgConnection::connect_step() {
  switch (PQconnectPoll(conn_)) {
    case PGRES_POLLING_OK: on_connected(); break;
    case PGRES_POLLING_READING: watch_socket(EPOLLIN); break;
    case PGRES_POLLING_WRITING: watch_socket(EPOLLOUT); break;
    default: fail("cannot connect to Postgres: " + libpq_error()); break;
  }
}

void PgConnection::on_connected() {
  if (PQsetnonblocking(conn_, 1) != 0 || PQenterPipelineMode(conn_) != 1) {
    fail("Postgres connection cannot enter pipeline mode: " + libpq_error());
    return;
  }
  timer_.cancel();
  state_ = State::ready;
  was_ready_ = true;
  cancel_handle_ = std::shared_ptr<pg_cancel>(PQgetCancel(conn_), [](pg_cancel* c) {
    if (c) PQfreeCancel(c);
  });
  watch_socket(EPOLLIN);
  for (Pending& p : pending_) {
    if (!p.unsent) continue;
    if (!send(*p.unsent, p.synced)) return;
    p.unsent.reset();
  }
  flush();
  if (state_ != State::ready || !events_.ready) return;
  events_.ready();
}

void PgConnection::on_io(std::uint32_t events) {
  if (events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
    if (!PQconsumeInput(conn_)) {
      fail("Postgres connection lost: " + libpq_error());
      return;
    }
    // Not asked for (no LISTEN is sent), but kept by libpq until taken.
    while (PGnotify* n = PQnotifies(conn_)) PQfreemem(n);
    if (!deliver_results() || state_ != State::ready) return;
  }
  if (watched_events_ & EPOLLOUT) flush();
}

bool PgConnection::deliver_results() {
  const std::shared_ptr<bool> alive = alive_;
  // PQisBusy first: PQgetResult would wait for what has not arrived.
  while (conn_ && !PQisBusy(conn_)) {
    PGresult* raw = PQgetResult(conn_);
    if (!raw) {
      // The end of the front statement's answer, or nothing more yet.
      if (pending_.empty() || pending_.front().answered || !pending_.front().result) break;
      Pending& front = pending_.front();
      Done done = std::move(front.done);
      PgResult result = std::move(*front.result);
      if (front.synced) {
        front.result.reset();
        front.answered = true;  // its sync's result is next
      } else {
        pending_.pop_front();  // the next statement of its segment follows
      }
      if (done) {
        done(std::move(result));
        if (!*alive) return false;
      }
      continue;
    }
    if (PQresultStatus(raw) == PGRES_PIPELINE_SYNC) {
      PQclear(raw);
      if (!pending_.empty() && pending_.front().answered) pending_.pop_front();
      continue;
    }
    if (pending_.empty()) {
      PQclear(raw);
      continue;
    }
    // One result per statement (the extended protocol runs one); should
    // more come, an error outranks what came before it.
    Pending& front = pending_.front();
    PgResult result(raw);
    if (!front.result || (front.result->ok() && !result.ok())) front.result = std::move(result);
  }
  return true;
}

void PgConnection::watch_socket(std::uint32_t events) {
  // Unwatched and watched afresh: while connecting, libpq may have closed
  // its socket and opened another (the next address), under the same
  // number or another.
  stop_watching();
  const int fd = PQsocket(conn_);
  if (fd < 0) {
    fail("Postgres connection has no socket: " + libpq_error());
    return;
  }
  loop_.watch_level(fd, events, [this](std::uint32_t ev) { on_socket(ev); });
  watched_fd_ = fd;
  watched_events_ = events;
}

void PgConnection::stop_watching() {
  if (watched_fd_ < 0) return;
  loop_.unwatch(watched_fd_);
  watched_fd_ = -1;
  watched_events_ = 0;
}

void PgConnection::fail(std::string reason) {
  if (state_ == State::down) return;
  state_ = State::down;
  down_reason_ = std::move(reason);
  // Unwatched before PQfinish closes the socket (or just after libpq
  // dropped it itself), before anything can open another descriptor under
  // the same number.
  stop_watching();
  if (conn_) PQfinish(conn_);
  conn_ = nullptr;
  // Reported on the next turn: never inside the call that found it (a
  // submission, the constructor), whose caller is not ready for callbacks.
  timer_.expires_after(std::chrono::nanoseconds(0));
}

void PgConnection::on_timer() {
  if (state_ == State::connecting) {
    fail("cannot connect to Postgres: no connection within " + std::to_string(options_.connect_timeout.count()) +
         " ms");
  } else if (state_ == State::down && !down_reported_) {
    report_down();
  }
}

void PgConnection::report_down() {
  down_reported_ = true;
  const std::shared_ptr<bool> alive = alive_;
  std::deque<Pending> failed = std::move(pending_);
  pending_.clear();
  const char* sqlstate = was_ready_ ? kConnectionFailure : kCannotConnect;
  for (Pending& p : failed) {
    if (!p.done || p.answered) continue;
    Done done = std::move(p.done);
    done(PgResult::connection_failure(down_reason_, sqlstate));
    if (!*alive) return;
  }
  if (events_.down) events_.down(down_reason_);
}

int PgConnection::backend_pid() const { return state_ == State::ready ? PQbackendPID(conn_) : 0; }

bool PgConnection::cancel(PgStatementId id) {
  // Ids grow in the order statements are queued.
  const auto it = std::lower_bound(pending_.begin(), pending_.end(), id,
                                   [](const Pending& p, PgStatementId wanted) { return p.id < wanted; });
  if (it == pending_.end() || it->id != id || !it->done) return false;
  if (it->unsent) {
    // Never sent: nothing to wait for. Its sync, if it carried its
    // segment's, passes to the statement before it in that segment.
    if (it->synced && it != pending_.begin() && !std::prev(it)->synced) std::prev(it)->synced = true;
    pending_.erase(it);
  } else {
    it->done = nullptr;  // its answer still comes, in its place
  }
  return true;
}

bool PgConnection::alone_in_flight(PgStatementId id) const {
  bool seen = false;
  for (const Pending& p : pending_) {
    if (p.answered) continue;
    if (p.id == id) {
      seen = true;
      continue;
    }
    // Another statement still awaited, before it (the server may run that
    // one now) or after it (the cancel could come late and stop that one).
    if (p.done || !seen) return false;
  }
  return seen;
}

std::string PgConnection::libpq_error() const {
  std::string message = conn_ ? one_line(PQerrorMessage(conn_)) : std::string();
  return message.empty() ? "no message from libpq" : message;
}

}  // namespace edri::database
