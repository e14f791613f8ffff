// Idle WebSocket sessions opened by bench itself (the session and fanout
// scenarios), and what a server process holds: threads and CPU time.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <vector>

#include "scenarios.hpp"

namespace edri::bench {

// Opens `n` WebSocket connections to /ws and completes their handshakes;
// the descriptors of those that did (the caller closes them). `deflate`:
// offer permessage-deflate with server_no_context_takeover.
std::vector<int> open_sessions(std::uint16_t port, int n, const ScenarioContext& context, bool deflate = false);

// Threads of `pid` (/proc/<pid>/task).
int threads_of(pid_t pid);

// CPU time of every thread of `pid`, in nanoseconds (the scheduler's own
// count, /proc/<pid>/task/*/schedstat: exact, where /proc/<pid>/stat counts
// 10 ms ticks); 0 when it is gone.
std::uint64_t process_cpu_ns(pid_t pid);

}  // namespace edri::bench
