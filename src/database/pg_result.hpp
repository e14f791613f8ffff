// PgResult: what one Postgres statement answered, as PgConnection hands it
// to the statement's callback: success or an error (its message and
// SQLSTATE), the rows it affected, its columns, and its rows in libpq's
// text format with typed access by column and a JSON rendering.
//
// The result owns libpq's PGresult; a PgRow is a view into the PgResult
// object and must neither outlive it nor see it moved.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <string_view>

#include <edri/database.hpp>

// libpq's own type, forward-declared so that users of this header need not
// see libpq-fe.h.
struct pg_result;

namespace edri::database {

// Thrown by typed access to a value that is NULL or not of the asked type,
// or to a column that does not exist.
class PgValueError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class PgResult;

// One row of a PgResult. Columns by index (0-based, in the SELECT's order)
// or by exact name (case-sensitive, unlike libpq's PQfnumber, which folds
// unquoted names to lower case).
class PgRow {
 public:
  bool is_null(int column) const;
  bool is_null(std::string_view column) const { return is_null(index_of(column)); }
  // The value as Postgres wrote it (text format). Empty for NULL.
  std::string_view text(int column) const;
  std::string_view text(std::string_view column) const { return text(index_of(column)); }
  // Parsed from the text format; PgValueError on NULL or a value that is
  // not of the type (a whole integer in range, a number, t/f).
  std::int64_t int64(int column) const;
  std::int64_t int64(std::string_view column) const { return int64(index_of(column)); }
  double float64(int column) const;
  double float64(std::string_view column) const { return float64(index_of(column)); }
  bool boolean(int column) const;
  bool boolean(std::string_view column) const { return boolean(index_of(column)); }
  // The row as a JSON object, column name -> value (see PgResult::to_json).
  nlohmann::json to_json() const;

 private:
  friend class PgResult;
  PgRow(const PgResult& result, int row) : result_(&result), row_(row) {}
  int index_of(std::string_view column) const;
  int checked(int column) const;
  std::string_view non_null_text(int column, const char* type) const;

  const PgResult* result_;
  int row_;
};

class PgResult {
 public:
  // Why a statement failed: Postgres refused or failed it (the statement's
  // own error, with the server's SQLSTATE), or the connection could not
  // carry it (lost, never made, closed; SQLSTATE 08006 or 08001).
  enum class Failure { none, statement, connection };

  // A failure made here rather than by the server.
  static PgResult connection_failure(std::string message, std::string sqlstate);
  // Takes ownership of `result` (libpq's, non-null).
  explicit PgResult(pg_result* result);

  PgResult(PgResult&&) noexcept = default;
  PgResult& operator=(PgResult&&) noexcept = default;
  ~PgResult();

  bool ok() const { return failure_ == Failure::none; }
  Failure failure() const { return failure_; }
  // Postgres's primary message (no trailing newline); empty when ok().
  const std::string& error() const { return error_; }
  // The five-character SQLSTATE ("42601" a syntax error); empty when ok()
  // or for a statement not run because an earlier one of its batch
  // (PgConnection::WriteBatch) failed.
  const std::string& sqlstate() const { return sqlstate_; }
  // Rows inserted, updated, deleted, selected... as the command tag says;
  // 0 for a command that names none (CREATE TABLE) or a failure.
  std::int64_t affected_rows() const { return affected_rows_; }

  int columns() const;
  std::string_view column_name(int column) const;
  // The index of the column named exactly `name`; -1 if none.
  int column_index(std::string_view name) const;
  std::size_t size() const;  // rows
  bool empty() const { return size() == 0; }
  PgRow row(std::size_t index) const;
  PgRow operator[](std::size_t index) const { return row(index); }

  // The rows as a JSON array of objects, column name -> value: NULL as
  // null; booleans, integers and float4/float8 as JSON's own types (NaN
  // and infinities, which JSON lacks, as null); json and jsonb parsed;
  // everything else, numeric included (a double would round it), as the
  // string Postgres wrote.
  nlohmann::json to_json() const;
  // The same as the handlers' edri::Rows: a failure's kind, or every row
  // copied (a PGresult must not outlive its connection's use by handlers).
  edri::Rows to_rows() const;

 private:
  friend class PgRow;
  PgResult() = default;
  struct Clear {
    void operator()(pg_result* r) const;
  };
  nlohmann::json value_json(int row, int column) const;

  std::unique_ptr<pg_result, Clear> result_;
  Failure failure_ = Failure::none;
  std::string error_;
  std::string sqlstate_;
  std::int64_t affected_rows_ = 0;
};

}  // namespace edri::database
