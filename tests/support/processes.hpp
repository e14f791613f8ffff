// Processes and files read from /proc: what the suite's helpers (an edri
// server, a Postgres cluster) need to see their children and logs, kept
// apart so that bench can start the same Postgres cluster
// (postgres_server.hpp) without the suite's edri-server helpers.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace edri::test {

struct ProcessInfo {
  pid_t pid;
  std::string cmdline;  // argv joined by spaces
};

// Children of `parent`, from /proc.
std::vector<ProcessInfo> children_of(pid_t parent);
bool process_alive(pid_t pid);
// A file's whole text (empty if it cannot be read).
std::string read_file(const std::string& path);

}  // namespace edri::test
