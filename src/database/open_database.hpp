// The database a URL names, for a manager's loop: postgresql:// (or
// postgres://) a PgDatabase, sqlite: a SqliteDatabase.
#pragma once

#include <memory>

#include <edri/database.hpp>

#include "database/pg_database.hpp"
#include "runtime/event_loop.hpp"

namespace edri::database {

// Throws std::invalid_argument for a URL of no known kind.
std::unique_ptr<edri::Database> open_database(EventLoop& loop, DatabaseOptions options);

}  // namespace edri::database
