// Whether the process that named a file after its pid is gone: what
// start-up asks of what an earlier instance left (segments, plugin
// copies, upload files) before it removes it. A pid that is alive, or
// is another user's (EPERM), is not gone.
#pragma once

#include <signal.h>

#include <cerrno>

namespace edri::transport {

inline bool owner_gone(long pid) { return pid > 0 && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH; }

}  // namespace edri::transport
