// Databases for handlers (docs/decisions/0032): Postgres or SQLite, named
// by settings (EDRI_DATABASES) or declared by a plugin (Registry::database),
// reached through Context::database(name).
//
//   r.get("/worlds/{id:int}", "tfb.world",
//         [](const edri::Request& req, edri::Context& ctx) -> edri::Async<> {
//           edri::Database& db = ctx.database("world");
//           edri::Rows rows = co_await db.query("SELECT id, randomnumber FROM world WHERE id = $1",
//                                               {req.int_param("id")});
//           co_return edri::Response::json(rows.to_json());
//         });
//
// Values travel only as bound parameters ($1, $2, ... for Postgres; ?1,
// ?2, ... or $1 for SQLite), never spliced into the SQL text: a value is
// always data. Statements are prepared once per connection and reused.
//
// The manager runs every statement on its own loop (Postgres: libpq's
// asynchronous interface in pipeline mode; SQLite: the domain's threads),
// so a handler that waits for a database holds no thread. A statement is
// bounded by the request's deadline and by the database's timeout, and a
// wait that is cancelled (deadline, client gone) stops its statement.
#pragma once

#include <charconv>
#include <chrono>
#include <cmath>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <edri/async.hpp>
#include <edri/json_depth.hpp>
#include <edri/response.hpp>

namespace edri {

// A value bound to a placeholder: NULL, an integer, a real, a boolean or
// text. Postgres reads it in text format as the type the statement gives
// its placeholder; SQLite binds it with its own type.
class SqlValue {
 public:
  enum class Kind : std::uint8_t { null, integer, real, boolean, text };

  SqlValue(std::nullptr_t) {}  // NOLINT: NULL reads naturally as {nullptr}
  SqlValue(bool b) : kind_(Kind::boolean), integer_(b ? 1 : 0), text_(b ? "t" : "f") {}
  template <std::integral I>
  requires(!std::same_as<I, bool>) SqlValue(I v)
      : kind_(Kind::integer), integer_(static_cast<std::int64_t>(v)), text_(std::to_string(v)) {}
  SqlValue(double v) : kind_(Kind::real), real_(v) {
    char buf[32];
    const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
    text_.assign(buf, ec == std::errc() ? end : buf);
  }
  SqlValue(std::string v) : kind_(Kind::text), text_(std::move(v)) {}
  SqlValue(std::string_view v) : kind_(Kind::text), text_(v) {}
  SqlValue(const char* v) : kind_(Kind::text), text_(v) {}
  template <class T>
  SqlValue(const std::optional<T>& v) : SqlValue(v ? SqlValue(*v) : SqlValue(nullptr)) {}

  Kind kind() const { return kind_; }
  bool is_null() const { return kind_ == Kind::null; }
  // Postgres's text format of the value ("42", "t", "0.5", the text).
  const std::string& text() const { return text_; }
  std::int64_t integer() const { return integer_; }
  double real() const { return real_; }

 private:
  Kind kind_ = Kind::null;
  std::int64_t integer_ = 0;
  double real_ = 0;
  std::string text_;
};
using SqlParams = std::vector<SqlValue>;

// One statement and its parameters.
struct Statement {
  std::string sql;
  SqlParams params;
};

// Thrown by typed access to a NULL, a value not of the asked type, or a
// column that does not exist.
class SqlValueError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Rows;

// One row of Rows; a view that must not outlive them.
class Row {
 public:
  bool is_null(int column) const;
  bool is_null(std::string_view column) const { return is_null(index_of(column)); }
  // The value as text (Postgres's text format; SQLite's text of it). Empty
  // for NULL.
  std::string_view text(int column) const;
  std::string_view text(std::string_view column) const { return text(index_of(column)); }
  // Parsed; SqlValueError for NULL or a value not of the type.
  std::int64_t int64(int column) const;
  std::int64_t int64(std::string_view column) const { return int64(index_of(column)); }
  double float64(int column) const;
  double float64(std::string_view column) const { return float64(index_of(column)); }
  bool boolean(int column) const;
  bool boolean(std::string_view column) const { return boolean(index_of(column)); }
  // Column name -> value (see Rows::to_json).
  nlohmann::json to_json() const;

 private:
  friend class Rows;
  Row(const Rows& rows, std::size_t row) : rows_(&rows), row_(row) {}
  int index_of(std::string_view column) const;
  std::string_view non_null(int column, const char* type) const;

  const Rows* rows_;
  std::size_t row_;
};

// What one statement answered: its rows (all of them, held here, so that
// they may be moved and kept), or why it failed.
class Rows {
 public:
  enum class Failure : std::uint8_t {
    none,
    statement,    // the database refused or failed it (sqlstate() says how)
    unavailable,  // no connection could carry it: down, refused, full queue (503)
    timeout,      // it did not end within the database's timeout or the request's deadline (504)
  };
  // How a column's values read as JSON.
  enum class ColumnType : std::uint8_t { text, integer, real, boolean, json };

  static Rows failed(Failure failure, std::string message, std::string sqlstate = {}) {
    Rows r;
    r.failure_ = failure;
    r.error_ = std::move(message);
    r.sqlstate_ = std::move(sqlstate);
    return r;
  }

  bool ok() const { return failure_ == Failure::none; }
  Failure failure() const { return failure_; }
  const std::string& error() const { return error_; }
  // Postgres's five-character SQLSTATE, or SQLite's extended result code
  // as text; empty when ok().
  const std::string& sqlstate() const { return sqlstate_; }
  // Rows inserted, updated, deleted or selected.
  std::int64_t affected_rows() const { return affected_; }

  int columns() const { return static_cast<int>(names_.size()); }
  const std::string& column_name(int column) const { return names_.at(static_cast<std::size_t>(column)); }
  ColumnType column_type(int column) const { return types_.at(static_cast<std::size_t>(column)); }
  // The index of the column named exactly `name`; -1 if none.
  int column_index(std::string_view name) const {
    for (std::size_t i = 0; i < names_.size(); ++i)
      if (names_[i] == name) return static_cast<int>(i);
    return -1;
  }
  std::size_t size() const { return names_.empty() ? 0 : cells_.size() / names_.size(); }
  bool empty() const { return size() == 0; }
  Row operator[](std::size_t row) const { return Row(*this, row); }
  Row at(std::size_t row) const {
    if (row >= size()) throw SqlValueError("row " + std::to_string(row) + " of " + std::to_string(size()));
    return Row(*this, row);
  }

  // The rows as a JSON array of objects, column name -> value: NULL as
  // null, integers, reals and booleans as JSON's own (NaN and infinities
  // as null), json columns parsed, everything else as text.
  nlohmann::json to_json() const {
    auto out = nlohmann::json::array();
    for (std::size_t r = 0; r < size(); ++r) out.push_back((*this)[r].to_json());
    return out;
  }
  // The answer for a failure: 503 with Retry-After (unavailable), 504
  // (timeout), 500 naming the SQLSTATE (statement; the database's message
  // stays in the log, it may show the schema).
  Response problem() const {
    switch (failure_) {
      case Failure::none: break;
      case Failure::unavailable:
        return Response::problem(503, "Service Unavailable", "the database is unavailable: " + error_)
            .header("Retry-After", "1");
      case Failure::timeout: return Response::problem(504, "Gateway Timeout", "the database did not answer in time");
      case Failure::statement:
        return Response::problem(500, "Internal Server Error",
                                 "the database refused a statement (SQLSTATE " + sqlstate_ + ")");
    }
    return Response::problem(500, "Internal Server Error", "problem() of a statement that succeeded");
  }

  // For the database drivers: the result's shape, then its cells row by
  // row (nullopt: NULL).
  void add_column(std::string name, ColumnType type) {
    names_.push_back(std::move(name));
    types_.push_back(type);
  }
  void add_cell(std::optional<std::string_view> value) {
    if (!value) return cells_.push_back(Cell{0, 0, true});
    cells_.push_back(Cell{text_.size(), value->size(), false});
    text_.append(*value);
  }
  void reserve(std::size_t rows, std::size_t bytes) {
    cells_.reserve(rows * names_.size());
    text_.reserve(bytes);
  }
  void set_affected_rows(std::int64_t n) { affected_ = n; }

 private:
  friend class Row;
  struct Cell {
    std::size_t offset;
    std::size_t size;
    bool null;
  };
  const Cell& cell(std::size_t row, int column) const {
    if (column < 0 || column >= columns() || row >= size())
      throw SqlValueError("no column " + std::to_string(column) + " in row " + std::to_string(row));
    return cells_[row * names_.size() + static_cast<std::size_t>(column)];
  }

  Failure failure_ = Failure::none;
  std::string error_;
  std::string sqlstate_;
  std::int64_t affected_ = 0;
  std::vector<std::string> names_;
  std::vector<ColumnType> types_;
  std::vector<Cell> cells_;
  std::string text_;  // every cell's bytes, one after another
};

// Thrown by a co_await on a database whose statement failed: problem()
// is the answer the manager gives when the handler does not catch it.
class DatabaseError : public std::runtime_error {
 public:
  explicit DatabaseError(Rows failed) : std::runtime_error(failed.error()), rows_(std::move(failed)) {}
  Rows::Failure failure() const { return rows_.failure(); }
  const std::string& sqlstate() const { return rows_.sqlstate(); }
  Response problem() const { return rows_.problem(); }

 private:
  Rows rows_;
};

class Transaction;

// A named database of this domain: a pool of connections kept by the
// manager. Obtained from Context::database(); lives as long as the manager.
class Database {
 public:
  using Deadline = std::chrono::steady_clock::time_point;
  // A statement's or a batch's answers, one Rows per statement in order.
  using Done = std::function<void(std::vector<Rows>)>;
  // What the manager gives a transaction: one connection held for it.
  struct Session {
    virtual ~Session() = default;
    virtual std::function<void()> run(std::vector<Statement> statements, Deadline deadline, Done done) = 0;
    // run() on behalf of the request `about` (a coroutine's, which may
    // have resumed outside its handler): its trace gets the statements'
    // span (docs/operations.md, Tracing). What Transaction awaits.
    virtual std::function<void()> run_about(const Request* about, std::vector<Statement> statements, Deadline deadline,
                                            Done done) {
      (void)about;
      return run(std::move(statements), deadline, std::move(done));
    }
    // COMMIT (true) or ROLLBACK; the connection goes back to the pool.
    // `done` may be empty (a rollback nobody waits for).
    virtual void end(bool commit, Deadline deadline, Done done) = 0;
    // end() on behalf of the request `about`, as run_about: what
    // Transaction::commit awaits.
    virtual void end_about(const Request* about, bool commit, Deadline deadline, Done done) {
      (void)about;
      end(commit, deadline, std::move(done));
    }
  };
  using Began = std::function<void(std::shared_ptr<Session> session, Rows failure)>;

  virtual ~Database() = default;
  virtual const std::string& name() const = 0;
  // "postgresql" or "sqlite".
  virtual std::string_view kind() const = 0;

  // Callback interface. Runs `statements`, each on its own (one failing
  // does not stop the others), together in one round trip where the
  // database allows it; `done` runs later in the manager's loop with one
  // Rows per statement. What it returns stops them (`done` is then not
  // called).
  virtual std::function<void()> run(std::vector<Statement> statements, Deadline deadline, Done done) = 0;
  // run() on behalf of the request `about`, as Session::run_about.
  virtual std::function<void()> run_about(const Request* about, std::vector<Statement> statements, Deadline deadline,
                                          Done done) {
    (void)about;
    return run(std::move(statements), deadline, std::move(done));
  }
  // Opens a transaction (BEGIN on a connection held for it until it
  // ends); `began` runs with the session, or with a null one and the
  // failure.
  virtual std::function<void()> begin(Deadline deadline, Began began) = 0;
  // begin() on behalf of the request `about`, as run_about: what
  // transaction() awaits.
  virtual std::function<void()> begin_about(const Request* about, Deadline deadline, Began began) {
    (void)about;
    return begin(deadline, std::move(began));
  }

  // What a coroutine handler awaits. A failure throws DatabaseError.
  Pending<Rows> query(std::string sql, SqlParams params = {});
  // Several independent statements in one round trip (the 20 queries of
  // one request); their Rows in order. A failure of any throws.
  Pending<std::vector<Rows>> query_all(std::vector<Statement> statements);
  // A transaction: commit() it; one left without commit (an exception, a
  // cancelled request) is rolled back.
  Pending<Transaction> transaction();
};

// A transaction of a coroutine handler, from Database::transaction(). Its
// statements run in order on the connection held for it.
class Transaction {
 public:
  Transaction() = default;
  explicit Transaction(std::shared_ptr<Database::Session> s) : session_(std::move(s)) {}
  Transaction(Transaction&& o) noexcept : session_(std::exchange(o.session_, {})) {}
  Transaction& operator=(Transaction&& o) noexcept {
    if (this != &o) {
      rollback();
      session_ = std::exchange(o.session_, {});
    }
    return *this;
  }
  ~Transaction() { rollback(); }

  Pending<Rows> query(std::string sql, SqlParams params = {});
  Pending<std::vector<Rows>> query_all(std::vector<Statement> statements);
  // COMMIT; throws DatabaseError when it fails (the transaction is then
  // rolled back by the database).
  Pending<void> commit();
  // ROLLBACK without waiting; what a transaction not committed gets.
  void rollback() {
    if (auto s = std::exchange(session_, {})) s->end(false, Database::Deadline::max(), {});
  }
  bool open() const { return session_ != nullptr; }

 private:
  std::shared_ptr<Database::Session> session_;
};

namespace detail {

inline Database::Deadline deadline_of(const Request* req) { return req ? req->deadline : Database::Deadline::max(); }
// Awaits `run` of a Database or a Session: all Rows, or DatabaseError.
template <class Runner>
Pending<std::vector<Rows>> await_all(Runner runner, std::vector<Statement> statements) {
  return Pending<std::vector<Rows>>([runner, statements = std::move(statements)](auto done) mutable {
    done.on_cancel(
        runner(done.request(), std::move(statements), deadline_of(done.request()), [done](std::vector<Rows> all) {
          for (auto& r : all)
            if (!r.ok()) return done.fail(std::make_exception_ptr(DatabaseError(std::move(r))));
          done(std::move(all));
        }));
  });
}
template <class Runner>
Pending<Rows> await_one(Runner runner, std::string sql, SqlParams params) {
  return Pending<Rows>([runner, sql = std::move(sql), params = std::move(params)](auto done) mutable {
    std::vector<Statement> one;
    one.push_back(Statement{std::move(sql), std::move(params)});
    done.on_cancel(runner(done.request(), std::move(one), deadline_of(done.request()), [done](std::vector<Rows> all) {
      if (all.size() != 1 || !all[0].ok())
        return done.fail(std::make_exception_ptr(
            DatabaseError(all.empty() ? Rows::failed(Rows::Failure::unavailable, "no answer") : std::move(all[0]))));
      done(std::move(all[0]));
    }));
  });
}

}  // namespace detail

inline Pending<Rows> Database::query(std::string sql, SqlParams params) {
  return detail::await_one([this](auto&&... a) { return run_about(std::forward<decltype(a)>(a)...); }, std::move(sql),
                           std::move(params));
}
inline Pending<std::vector<Rows>> Database::query_all(std::vector<Statement> statements) {
  return detail::await_all([this](auto&&... a) { return run_about(std::forward<decltype(a)>(a)...); },
                           std::move(statements));
}
inline Pending<Transaction> Database::transaction() {
  return Pending<Transaction>([this](auto done) {
    done.on_cancel(begin_about(done.request(), detail::deadline_of(done.request()),
                               [done](std::shared_ptr<Session> s, Rows failure) {
                                 if (!s) return done.fail(std::make_exception_ptr(DatabaseError(std::move(failure))));
                                 done(Transaction(std::move(s)));
                               }));
  });
}

inline Pending<Rows> Transaction::query(std::string sql, SqlParams params) {
  if (!session_) throw std::logic_error("a statement on a transaction that has ended");
  return detail::await_one([s = session_](auto&&... a) { return s->run_about(std::forward<decltype(a)>(a)...); },
                           std::move(sql), std::move(params));
}
inline Pending<std::vector<Rows>> Transaction::query_all(std::vector<Statement> statements) {
  if (!session_) throw std::logic_error("a statement on a transaction that has ended");
  return detail::await_all([s = session_](auto&&... a) { return s->run_about(std::forward<decltype(a)>(a)...); },
                           std::move(statements));
}
inline Pending<void> Transaction::commit() {
  if (!session_) throw std::logic_error("commit() of a transaction that has ended");
  return Pending<void>([s = std::exchange(session_, {})](auto done) {
    s->end_about(done.request(), true, detail::deadline_of(done.request()), [done](std::vector<Rows> all) {
      if (all.empty() || !all[0].ok())
        return done.fail(std::make_exception_ptr(
            DatabaseError(all.empty() ? Rows::failed(Rows::Failure::unavailable, "no answer") : std::move(all[0]))));
      done();
    });
  });
}

inline bool Row::is_null(int column) const { return rows_->cell(row_, column).null; }
inline std::string_view Row::text(int column) const {
  const auto& c = rows_->cell(row_, column);
  return std::string_view(rows_->text_).substr(c.offset, c.size);
}
inline int Row::index_of(std::string_view column) const {
  const int i = rows_->column_index(column);
  if (i < 0) throw SqlValueError("no column named " + std::string(column));
  return i;
}
inline std::string_view Row::non_null(int column, const char* type) const {
  if (is_null(column)) throw SqlValueError("column " + rows_->column_name(column) + " is NULL, not " + type);
  return text(column);
}
inline std::int64_t Row::int64(int column) const {
  const auto t = non_null(column, "an integer");
  std::int64_t v = 0;
  const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (ec != std::errc() || end != t.data() + t.size())
    throw SqlValueError("column " + rows_->column_name(column) + " is not an integer");
  return v;
}
inline double Row::float64(int column) const {
  const auto t = non_null(column, "a number");
  if (t == "NaN") return std::numeric_limits<double>::quiet_NaN();
  if (t == "Infinity" || t == "-Infinity")
    return t[0] == '-' ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
  double v = 0;
  const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (ec != std::errc() || end != t.data() + t.size())
    throw SqlValueError("column " + rows_->column_name(column) + " is not a number");
  return v;
}
inline bool Row::boolean(int column) const {
  const auto t = non_null(column, "a boolean");
  if (t == "t" || t == "true" || t == "1") return true;
  if (t == "f" || t == "false" || t == "0") return false;
  throw SqlValueError("column " + rows_->column_name(column) + " is not a boolean");
}
inline nlohmann::json Row::to_json() const {
  auto out = nlohmann::json::object();
  for (int c = 0; c < rows_->columns(); ++c) {
    auto& v = out[rows_->column_name(c)];
    if (is_null(c)) continue;  // stays null
    switch (rows_->column_type(c)) {
      case Rows::ColumnType::integer: v = int64(c); break;
      case Rows::ColumnType::boolean: v = boolean(c); break;
      case Rows::ColumnType::real: {
        const double d = float64(c);
        if (std::isfinite(d)) v = d;
        break;
      }
      case Rows::ColumnType::json: {
        // Deeper than edri's own ceiling, or not JSON: its text.
        auto parsed = json_depth(text(c), kJsonDepthCeiling) <= kJsonDepthCeiling
                          ? nlohmann::json::parse(text(c), nullptr, false)
                          : nlohmann::json(nlohmann::json::value_t::discarded);
        v = parsed.is_discarded() ? nlohmann::json(std::string(text(c))) : std::move(parsed);
        break;
      }
      case Rows::ColumnType::text: v = std::string(text(c)); break;
    }
  }
  return out;
}

}  // namespace edri
