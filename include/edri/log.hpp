// A handler's lines in the server's log: Context::log writes them in the
// manager's log (EDRI_LOG_FORMAT, EDRI_LOG_LEVEL), named by the manager's
// domain, with the request's id (its X-Request-Id, the one the access log
// shows), so that what a handler said and the request it said it about
// are found together (docs/operations.md).
#pragma once

#include <cstdint>

namespace edri {

enum class LogLevel : std::uint8_t { Debug, Info, Warning, Error };

}  // namespace edri
