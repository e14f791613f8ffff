// Logging: one spdlog logger per process, named after its role (a
// manager's with its domain), to stderr, times in UTC. EDRI_LOG_FORMAT
// picks text lines or JSON objects (docs/operations.md).
#pragma once

#include <spdlog/formatter.h>
#include <spdlog/spdlog.h>

#include <string>

namespace edri {

// `format`: "text" or "json".
void init_logging(const std::string& role, const std::string& level, const std::string& format = "text");

// Logs `message` at `level` with `request_id` and `trace_id` (empty:
// none): text lines say `request=<id> trace=<id>` before the message,
// JSON lines have "request_id" and "trace_id".
void log_about_request(spdlog::level::level_enum level, std::string_view request_id, std::string_view message,
                       std::string_view trace_id = {});

// The formatter init_logging installs, for tests: its lines as they
// would be written.
std::unique_ptr<spdlog::formatter> log_formatter(const std::string& format);

}  // namespace edri
