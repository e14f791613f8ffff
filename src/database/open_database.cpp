#include "database/open_database.hpp"

#include <stdexcept>

#include "database/sqlite_database.hpp"

namespace edri::database {

std::unique_ptr<edri::Database> open_database(EventLoop& loop, DatabaseOptions options) {
  const std::string_view url = options.url;
  if (url.starts_with("postgresql://") || url.starts_with("postgres://"))
    return std::make_unique<PgDatabase>(loop, std::move(options));
  if (url.starts_with("sqlite:")) return std::make_unique<SqliteDatabase>(loop, std::move(options));
  throw std::invalid_argument("the database " + options.name +
                              ": no driver for its URL (postgresql:// and sqlite: are known)");
}

}  // namespace edri::database
