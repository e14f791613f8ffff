#include "database/pg_result.hpp"

#include <libpq-fe.h>

#include <charconv>
#include <cmath>
#include <system_error>

namespace edri::database {

namespace {

// Type OIDs of the built-in types rendered as JSON's own (pg_type.dat;
// fixed since Postgres 7, and libpq does not export them).
constexpr Oid kBool = 16;
constexpr Oid kInt8 = 20;
constexpr Oid kInt2 = 21;
constexpr Oid kInt4 = 23;
constexpr Oid kOid = 26;
constexpr Oid kJson = 114;
constexpr Oid kFloat4 = 700;
constexpr Oid kFloat8 = 701;
constexpr Oid kJsonb = 3802;

std::string without_trailing_newline(const char* message) {
  std::string s = message ? message : "";
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

std::int64_t parse_int64(std::string_view text, bool& parsed) {
  std::int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  parsed = ec == std::errc() && end == text.data() + text.size() && !text.empty();
  return value;
}

double parse_double(std::string_view text, bool& parsed) {
  double value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  parsed = ec == std::errc() && end == text.data() + text.size() && !text.empty();
  return value;
}

}  // namespace

void PgResult::Clear::operator()(pg_result* r) const { PQclear(r); }

PgResult PgResult::connection_failure(std::string message, std::string sqlstate) {
  PgResult r;
  r.failure_ = Failure::connection;
  r.error_ = std::move(message);
  r.sqlstate_ = std::move(sqlstate);
  return r;
}

PgResult::PgResult(pg_result* result) : result_(result) {
  const ExecStatusType status = PQresultStatus(result);
  switch (status) {
    case PGRES_COMMAND_OK:
    case PGRES_TUPLES_OK:
    case PGRES_SINGLE_TUPLE:
    case PGRES_EMPTY_QUERY: {  // "" or only a comment: nothing to do, done
      bool parsed = false;
      affected_rows_ = parse_int64(PQcmdTuples(result), parsed);
      if (!parsed) affected_rows_ = 0;
      return;
    }
    case PGRES_PIPELINE_ABORTED:  // after a failure under the same sync (PgConnection::WriteBatch)
      failure_ = Failure::statement;
      error_ = "not run: an earlier statement of its batch failed";
      return;
    case PGRES_FATAL_ERROR:
    case PGRES_NONFATAL_ERROR: break;
    default:  // COPY (refused in pipeline mode anyway), a bad response
      failure_ = Failure::statement;
      error_ = std::string("unsupported result: ") + PQresStatus(status);
      return;
  }
  const char* primary = PQresultErrorField(result, PG_DIAG_MESSAGE_PRIMARY);
  error_ = without_trailing_newline(primary ? primary : PQresultErrorMessage(result));
  if (error_.empty()) error_ = PQresStatus(status);
  // The server's errors carry a SQLSTATE; one libpq made itself (the
  // server closed the connection, sent what it could not read) has none.
  if (const char* state = PQresultErrorField(result, PG_DIAG_SQLSTATE)) {
    failure_ = Failure::statement;
    sqlstate_ = state;
  } else {
    failure_ = Failure::connection;
    sqlstate_ = "08006";
  }
}

PgResult::~PgResult() = default;

int PgResult::columns() const { return result_ ? PQnfields(result_.get()) : 0; }

std::string_view PgResult::column_name(int column) const {
  if (column < 0 || column >= columns()) throw PgValueError("no column " + std::to_string(column));
  return PQfname(result_.get(), column);
}

int PgResult::column_index(std::string_view name) const {
  for (int c = 0, n = columns(); c < n; ++c)
    if (name == PQfname(result_.get(), c)) return c;
  return -1;
}

std::size_t PgResult::size() const { return result_ ? static_cast<std::size_t>(PQntuples(result_.get())) : 0; }

PgRow PgResult::row(std::size_t index) const {
  if (index >= size()) throw PgValueError("no row " + std::to_string(index));
  return PgRow(*this, static_cast<int>(index));
}

nlohmann::json PgResult::to_json() const {
  nlohmann::json rows = nlohmann::json::array();
  for (std::size_t r = 0, n = size(); r < n; ++r) rows.push_back(row(r).to_json());
  return rows;
}

nlohmann::json PgResult::value_json(int row, int column) const {
  pg_result* r = result_.get();
  if (PQgetisnull(r, row, column)) return nullptr;
  const std::string_view text(PQgetvalue(r, row, column), static_cast<std::size_t>(PQgetlength(r, row, column)));
  bool parsed = false;
  switch (PQftype(r, column)) {
    case kBool: return text == "t";
    case kInt2:
    case kInt4:
    case kInt8:
    case kOid: {
      const std::int64_t v = parse_int64(text, parsed);
      if (parsed) return v;
      break;
    }
    case kFloat4:
    case kFloat8: {
      const double v = parse_double(text, parsed);
      if (parsed) return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
      break;
    }
    case kJson:
    case kJsonb: {
      auto v = nlohmann::json::parse(text, nullptr, false);
      if (!v.is_discarded()) return v;
      break;
    }
    default: break;
  }
  return std::string(text);
}

namespace {

edri::Rows::ColumnType column_type(Oid type) {
  using T = edri::Rows::ColumnType;
  switch (type) {
    case kBool: return T::boolean;
    case kInt2:
    case kInt4:
    case kInt8:
    case kOid: return T::integer;
    case kFloat4:
    case kFloat8: return T::real;
    case kJson:
    case kJsonb: return T::json;
    default: return T::text;
  }
}

}  // namespace

edri::Rows PgResult::to_rows() const {
  if (!ok()) {
    // The server going away (57P01 "terminating connection due to
    // unexpected postmaster exit", 57P02, 57P03 "starting up"), a
    // connection class 08, or no connection to spare (53300) is the
    // database being unavailable, not the statement being wrong.
    const bool unavailable = failure_ == Failure::connection || sqlstate_.starts_with("08") ||
                             sqlstate_.starts_with("57P") || sqlstate_ == "53300";
    const auto kind = unavailable ? edri::Rows::Failure::unavailable : edri::Rows::Failure::statement;
    return edri::Rows::failed(kind, error_, sqlstate_);
  }
  edri::Rows out;
  pg_result* r = result_.get();
  const int n_columns = columns();
  for (int c = 0; c < n_columns; ++c) out.add_column(std::string(column_name(c)), column_type(PQftype(r, c)));
  const int n_rows = static_cast<int>(size());
  out.reserve(static_cast<std::size_t>(n_rows), 0);
  for (int row = 0; row < n_rows; ++row)
    for (int c = 0; c < n_columns; ++c) {
      if (PQgetisnull(r, row, c)) {
        out.add_cell(std::nullopt);
        continue;
      }
      out.add_cell(std::string_view(PQgetvalue(r, row, c), static_cast<std::size_t>(PQgetlength(r, row, c))));
    }
  out.set_affected_rows(affected_rows_);
  return out;
}

int PgRow::checked(int column) const {
  if (column < 0 || column >= result_->columns()) throw PgValueError("no column " + std::to_string(column));
  return column;
}

int PgRow::index_of(std::string_view column) const {
  const int c = result_->column_index(column);
  if (c < 0) throw PgValueError("no column named \"" + std::string(column) + "\"");
  return c;
}

bool PgRow::is_null(int column) const { return PQgetisnull(result_->result_.get(), row_, checked(column)) != 0; }

std::string_view PgRow::text(int column) const {
  pg_result* r = result_->result_.get();
  const int c = checked(column);
  return {PQgetvalue(r, row_, c), static_cast<std::size_t>(PQgetlength(r, row_, c))};
}

std::string_view PgRow::non_null_text(int column, const char* type) const {
  if (is_null(column))
    throw PgValueError("column \"" + std::string(result_->column_name(column)) + "\" is NULL, not " + type);
  return text(column);
}

namespace {
// A column's text that is not the type asked for.
PgValueError not_a(std::string_view column, const char* type, std::string_view text) {
  return PgValueError("column \"" + std::string(column) + "\" is not " + type + ": " + std::string(text));
}
}  // namespace

std::int64_t PgRow::int64(int column) const {
  const std::string_view t = non_null_text(column, "an integer");
  bool parsed = false;
  const std::int64_t v = parse_int64(t, parsed);
  if (!parsed) throw not_a(result_->column_name(column), "a 64-bit integer", t);
  return v;
}

double PgRow::float64(int column) const {
  const std::string_view t = non_null_text(column, "a number");
  bool parsed = false;
  const double v = parse_double(t, parsed);
  if (!parsed) throw not_a(result_->column_name(column), "a number", t);
  return v;
}

bool PgRow::boolean(int column) const {
  const std::string_view t = non_null_text(column, "a boolean");
  if (t == "t") return true;
  if (t == "f") return false;
  throw not_a(result_->column_name(column), "a boolean", t);
}

nlohmann::json PgRow::to_json() const {
  nlohmann::json object = nlohmann::json::object();
  for (int c = 0, n = result_->columns(); c < n; ++c)
    object[std::string(result_->column_name(c))] = result_->value_json(row_, c);
  return object;
}

}  // namespace edri::database
