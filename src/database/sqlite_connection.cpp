#include "database/sqlite_connection.hpp"

#include <sqlite3.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstring>
#include <vector>

namespace edri::database {

namespace {

// The cells of a result as they are stepped. The columns' types come
// after: they are the ones their values share.
class Collected {
 public:
  explicit Collected(sqlite3_stmt* s) : columns_(sqlite3_column_count(s)), seen_(columns_, 0), bits_(columns_, true) {}

  void add_row(sqlite3_stmt* s) {
    for (int c = 0; c < columns_; ++c) add_cell(s, c);
  }

  Rows finish(sqlite3_stmt* s) const {
    Rows rows;
    for (int c = 0; c < columns_; ++c) rows.add_column(sqlite3_column_name(s, c), type_of(s, c));
    rows.reserve(columns_ == 0 ? 0 : cells_.size() / static_cast<std::size_t>(columns_), text_.size());
    const std::string_view text(text_);
    for (const Cell& cell : cells_)
      rows.add_cell(cell.null ? std::nullopt : std::optional(text.substr(cell.offset, cell.size)));
    return rows;
  }

 private:
  struct Cell {
    std::size_t offset;
    std::size_t size;
    bool null;
  };

  void add_cell(sqlite3_stmt* s, int c) {
    const int type = sqlite3_column_type(s, c);  // before any conversion of the cell
    seen_[c] |= 1u << type;
    switch (type) {
      case SQLITE_NULL: cells_.push_back(Cell{0, 0, true}); return;
      case SQLITE_INTEGER: return add_integer(c, sqlite3_column_int64(s, c));
      case SQLITE_FLOAT: return add_real(sqlite3_column_double(s, c));
      case SQLITE_BLOB: return add_bytes(sqlite3_column_blob(s, c), sqlite3_column_bytes(s, c));
      default: return add_bytes(sqlite3_column_text(s, c), sqlite3_column_bytes(s, c));
    }
  }
  void add_integer(int c, sqlite3_int64 v) {
    if (v != 0 && v != 1) bits_[c] = false;
    char buf[24];
    const auto end = std::to_chars(buf, buf + sizeof buf, v).ptr;
    add_bytes(buf, static_cast<int>(end - buf));
  }
  // The shortest text that reads back as the same double, and the
  // spellings Row::float64 takes for what has no digits.
  void add_real(double v) {
    if (std::isnan(v)) return add_bytes("NaN", 3);
    if (std::isinf(v)) return v < 0 ? add_bytes("-Infinity", 9) : add_bytes("Infinity", 8);
    char buf[32];
    const auto end = std::to_chars(buf, buf + sizeof buf, v).ptr;
    add_bytes(buf, static_cast<int>(end - buf));
  }
  void add_bytes(const void* p, int n) {
    cells_.push_back(Cell{text_.size(), static_cast<std::size_t>(n), false});
    if (n > 0) text_.append(static_cast<const char*>(p), static_cast<std::size_t>(n));
  }

  static std::string declared(sqlite3_stmt* s, int c) {
    const char* d = sqlite3_column_decltype(s, c);
    std::string out = d ? d : "";
    for (char& ch : out) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    return out;
  }
  // A column of NULLs only (or no rows) reads as its declaration says.
  static Rows::ColumnType by_declaration(const std::string& d) {
    if (d.find("BOOL") != std::string::npos) return Rows::ColumnType::boolean;
    if (d.find("JSON") != std::string::npos) return Rows::ColumnType::json;
    if (d.find("INT") != std::string::npos) return Rows::ColumnType::integer;
    for (const char* real : {"REAL", "FLOA", "DOUB"})
      if (d.find(real) != std::string::npos) return Rows::ColumnType::real;
    return Rows::ColumnType::text;
  }
  Rows::ColumnType type_of(sqlite3_stmt* s, int c) const {
    constexpr unsigned integer = 1u << SQLITE_INTEGER, real = 1u << SQLITE_FLOAT, text = 1u << SQLITE_TEXT;
    const unsigned seen = seen_[c] & ~(1u << SQLITE_NULL);
    const std::string d = declared(s, c);
    if (seen == 0) return by_declaration(d);
    if (seen == integer)
      return bits_[c] && d.find("BOOL") != std::string::npos ? Rows::ColumnType::boolean : Rows::ColumnType::integer;
    if ((seen & ~(integer | real)) == 0) return Rows::ColumnType::real;
    if (seen == text && d.find("JSON") != std::string::npos) return Rows::ColumnType::json;
    return Rows::ColumnType::text;
  }

  int columns_;
  std::vector<unsigned> seen_;  // by column: a bit per storage class met
  std::vector<bool> bits_;      // by column: every integer was 0 or 1
  std::vector<Cell> cells_;
  std::string text_;
};

// The value a placeholder names: $N and ?N the Nth, a bare ? its own
// position (SQLite numbers it after those before it). 0: a name (:a, @a,
// $a), which a list of values cannot say.
std::size_t number_of(const char* name, int index) {
  if (!name) return static_cast<std::size_t>(index);
  if (name[0] != '?' && name[0] != '$') return 0;
  std::size_t n = 0;
  const char* end = name + std::strlen(name);
  const auto [p, ec] = std::from_chars(name + 1, end, n);
  return ec == std::errc() && p == end ? n : 0;
}

bool only_blanks(const char* p) {
  while (*p && std::isspace(static_cast<unsigned char>(*p))) ++p;
  return *p == '\0';
}

}  // namespace

SqliteConnection::SqliteConnection(SqliteConnectionOptions options) : options_(std::move(options)) { open(); }

SqliteConnection::~SqliteConnection() { close(); }

bool SqliteConnection::usable() {
  if (!db_) open();
  return db_ != nullptr;
}

void SqliteConnection::open() {
  const int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
  if (sqlite3_open_v2(options_.path.c_str(), &db_, flags, nullptr) != SQLITE_OK) {
    error_ = "cannot open " + options_.path + ": " + (db_ ? sqlite3_errmsg(db_) : "out of memory");
    return close();
  }
  sqlite3_extended_result_codes(db_, 1);
  sqlite3_busy_handler(db_, &SqliteConnection::on_busy, this);
  sqlite3_progress_handler(db_, 1000, &SqliteConnection::on_progress, this);
  // The writer's settings stay with the file (WAL) or are the writer's
  // alone; a reader only reads, whatever it is sent.
  const bool ready = options_.writer ? exec("PRAGMA journal_mode=WAL") && exec("PRAGMA synchronous=FULL") &&
                                           exec("PRAGMA foreign_keys=ON")
                                     : exec("PRAGMA query_only=ON");
  if (!ready) close();
}

void SqliteConnection::close() {
  for (auto& [sql, c] : cache_) sqlite3_finalize(c.stmt);
  cache_.clear();
  lru_.clear();
  sqlite3_close_v2(db_);
  db_ = nullptr;
}

bool SqliteConnection::exec(const char* sql) {
  char* message = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &message) == SQLITE_OK) return true;
  error_ = std::string(sql) + " on " + options_.path + ": " + (message ? message : "failed");
  sqlite3_free(message);
  return false;
}

std::optional<bool> SqliteConnection::reads_only(const std::string& sql) {
  if (!usable()) return std::nullopt;
  Prepared p = prepare(sql);
  if (!p.stmt) return p.answer.ok() ? std::optional(true) : std::nullopt;
  const bool reads = sqlite3_stmt_readonly(p.stmt) != 0;
  done_with(p);
  return reads;
}

Rows SqliteConnection::execute(const Statement& statement) {
  if (!usable()) return Rows::failed(Rows::Failure::unavailable, error_);
  Prepared p = prepare(statement.sql);
  if (!p.stmt) return std::move(p.answer);
  auto refused = bind(p.stmt, statement.params);
  Rows rows = refused ? std::move(*refused) : run(p.stmt);
  done_with(p);
  return rows;
}

bool SqliteConnection::in_transaction() const { return db_ && !sqlite3_get_autocommit(db_); }

void SqliteConnection::rollback() {
  if (!in_transaction()) return;
  // Whatever stopped the job must not stop its rollback too.
  const auto* stop = std::exchange(stop_, nullptr);
  sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  stop_ = stop;
}

SqliteConnection::Prepared SqliteConnection::prepare(const std::string& sql) {
  if (const auto it = cache_.find(sql); it != cache_.end()) {
    lru_.splice(lru_.begin(), lru_, it->second.use);
    return Prepared{it->second.stmt, true, {}};
  }
  const bool keep = options_.statement_cache > 0;
  sqlite3_stmt* stmt = nullptr;
  const char* tail = nullptr;
  const int rc = sqlite3_prepare_v3(db_, sql.c_str(), static_cast<int>(sql.size()) + 1,
                                    keep ? SQLITE_PREPARE_PERSISTENT : 0, &stmt, &tail);
  if (rc != SQLITE_OK) return Prepared{nullptr, false, failure(rc)};
  if (!stmt) return {};  // nothing but blanks and comments: nothing to run
  if (!only_comments(tail)) {
    sqlite3_finalize(stmt);
    return Prepared{nullptr, false,
                    Rows::failed(Rows::Failure::statement, "one statement at a time: the text holds more than one",
                                 std::to_string(SQLITE_ERROR))};
  }
  if (keep) cache(sql, stmt);
  return Prepared{stmt, keep, {}};
}

bool SqliteConnection::only_comments(const char* tail) {
  if (!tail || only_blanks(tail)) return true;
  sqlite3_stmt* next = nullptr;
  const int rc = sqlite3_prepare_v3(db_, tail, -1, 0, &next, nullptr);
  sqlite3_finalize(next);
  return rc == SQLITE_OK && !next;
}

void SqliteConnection::done_with(Prepared& p) {
  if (!p.cached) {
    sqlite3_finalize(p.stmt);
    return;
  }
  // Reset, a reader's read transaction ends: the next read sees the
  // writes committed since.
  sqlite3_reset(p.stmt);
  sqlite3_clear_bindings(p.stmt);
}

void SqliteConnection::cache(const std::string& sql, sqlite3_stmt* stmt) {
  if (cache_.size() >= options_.statement_cache) {
    const auto oldest = cache_.find(lru_.back());
    sqlite3_finalize(oldest->second.stmt);
    cache_.erase(oldest);
    lru_.pop_back();
  }
  lru_.push_front(sql);
  cache_.emplace(sql, Cached{stmt, lru_.begin()});
}

std::optional<Rows> SqliteConnection::bind(sqlite3_stmt* stmt, const SqlParams& params) {
  const int count = sqlite3_bind_parameter_count(stmt);
  std::size_t wanted = 0;
  for (int i = 1; i <= count; ++i) {
    const std::size_t n = number_of(sqlite3_bind_parameter_name(stmt, i), i);
    if (n == 0)
      return Rows::failed(Rows::Failure::statement,
                          std::string("the placeholder ") + sqlite3_bind_parameter_name(stmt, i) +
                              " has a name: values are bound by number ($1, ?1 or ?)",
                          std::to_string(SQLITE_RANGE));
    wanted = std::max(wanted, n);
    if (n > params.size()) continue;
    if (const int rc = bind_one(stmt, i, params[n - 1]); rc != SQLITE_OK) return failure(rc);
  }
  if (wanted == params.size()) return std::nullopt;
  return Rows::failed(
      Rows::Failure::statement,
      "the statement takes " + std::to_string(wanted) + " values, " + std::to_string(params.size()) + " were given",
      std::to_string(SQLITE_RANGE));
}

int SqliteConnection::bind_one(sqlite3_stmt* stmt, int index, const SqlValue& v) {
  switch (v.kind()) {
    case SqlValue::Kind::null: return sqlite3_bind_null(stmt, index);
    case SqlValue::Kind::integer:
    case SqlValue::Kind::boolean: return sqlite3_bind_int64(stmt, index, v.integer());
    case SqlValue::Kind::real: return sqlite3_bind_double(stmt, index, v.real());
    case SqlValue::Kind::text: break;
  }
  // Static: the value outlives the statement's use, whose bindings are
  // cleared before execute() returns.
  return sqlite3_bind_text64(stmt, index, v.text().data(), v.text().size(), SQLITE_STATIC, SQLITE_UTF8);
}

Rows SqliteConnection::run(sqlite3_stmt* stmt) {
  const auto before = sqlite3_total_changes64(db_);
  Collected cells(stmt);
  int rc;
  while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) cells.add_row(stmt);
  if (rc != SQLITE_DONE) return failure(rc);
  Rows rows = cells.finish(stmt);
  // sqlite3_changes64 is the last INSERT, UPDATE or DELETE's, maybe an
  // earlier statement's: it is this one's only if the total moved.
  if (sqlite3_stmt_readonly(stmt))
    rows.set_affected_rows(static_cast<std::int64_t>(rows.size()));
  else
    rows.set_affected_rows(sqlite3_total_changes64(db_) == before ? 0 : sqlite3_changes64(db_));
  return rows;
}

Rows SqliteConnection::failure(int rc) const {
  if ((rc & 0xff) == SQLITE_INTERRUPT && stopped())
    return Rows::failed(Rows::Failure::timeout, "the statement was stopped", std::to_string(rc));
  const int code = sqlite3_extended_errcode(db_);
  // Another process held the lock past busy_timeout: worth a retry.
  const auto kind = (code & 0xff) == SQLITE_BUSY ? Rows::Failure::unavailable : Rows::Failure::statement;
  return Rows::failed(kind, sqlite3_errmsg(db_), std::to_string(code));
}

bool SqliteConnection::stopped() const {
  return (stop_ && stop_->load(std::memory_order_relaxed)) ||
         (options_.closing && options_.closing->load(std::memory_order_relaxed));
}

int SqliteConnection::on_progress(void* self) { return static_cast<SqliteConnection*>(self)->stopped() ? 1 : 0; }

// SQLite's own busy_timeout waits like this, but cannot be told to stop.
int SqliteConnection::on_busy(void* self, int count) {
  static constexpr int kDelays[] = {1, 2, 5, 10, 15, 20, 25, 25, 25, 50, 50, 100};
  constexpr int kSteps = static_cast<int>(std::size(kDelays));
  const auto* c = static_cast<SqliteConnection*>(self);
  if (c->stopped()) return 0;
  long waited = 0;
  for (int i = 0; i < count; ++i) waited += kDelays[std::min(i, kSteps - 1)];
  const long timeout = static_cast<long>(c->options_.busy_timeout.count());
  if (waited >= timeout) return 0;
  sqlite3_sleep(static_cast<int>(std::min<long>(kDelays[std::min(count, kSteps - 1)], timeout - waited)));
  return 1;
}

}  // namespace edri::database
