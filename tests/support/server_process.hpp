// ServerProcess: a real edri-server started by a test on an ephemeral
// loopback port, stopped (and its leftovers checked) by PID.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "support/processes.hpp"

namespace edri::test {

// The servers and plugins the suite starts come from its own build, or
// from the build EDRI_TEST_SERVER_BUILD names (its bin/, plugins/ and
// test-plugins/): CI runs the suite, built once, against the ASan+UBSan
// build's servers, since what it checks runs in them.
std::string server_binary();                            // <build>/bin/edri-server
std::string test_plugin_dir();                          // <build>/test-plugins
std::string plugin_path(const std::string& name);       // <build>/plugins/<name>.so
std::string test_plugin_path(const std::string& name);  // <build>/test-plugins/<name>.so
// The servers are built with AddressSanitizer (its quarantine keeps freed
// memory resident: resident-size bounds do not hold there).
bool servers_under_asan();

// /dev/shm entries whose name starts with `prefix`.
std::vector<std::string> shm_segments(const std::string& prefix);
// fork+exec of `args` (the first a path) in this environment, its stdout
// and stderr appended to `log_path`; its pid (a helper server a test
// starts and stops by it: nats-server, nginx).
pid_t spawn_logged(const std::vector<std::string>& args, const std::string& log_path);

class ServerProcess {
 public:
  // Starts edri-server with EDRI_HOST=127.0.0.1, EDRI_PORT=0, the given
  // plugins and extra environment (inherited EDRI_* variables are dropped),
  // and waits for its "listening" line. Throws if it does not come.
  // `wrapper`: a command that runs edri-server in turn, with the same pid
  // (`ip netns exec <ns>`: an instance on a network of its own). `args`:
  // edri-server's own (--config FILE).
  explicit ServerProcess(std::vector<std::string> plugins, std::map<std::string, std::string> env = {},
                         std::vector<std::string> wrapper = {}, std::vector<std::string> args = {});
  ~ServerProcess();
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  pid_t pid() const { return pid_; }
  std::uint16_t port() const { return port_; }
  std::vector<ProcessInfo> children() const { return children_of(pid_); }
  // The child whose command line contains `role` ("listener", "manager test").
  pid_t child(const std::string& role) const;
  std::string segment_prefix() const { return "edri." + std::to_string(pid_) + "."; }
  std::string log() const;

  // SIGTERM and wait; returns the exit status (128+signal if killed).
  int stop(int timeout_ms = 10000);
  // The processes under the supervisor when stop() began, workers included.
  const std::vector<pid_t>& stopped_processes() const { return last_children_; }

 private:
  pid_t pid_ = -1;
  std::uint16_t port_ = 0;
  std::string log_path_;
  std::vector<pid_t> last_children_;
};

struct ExitResult {
  int status;  // exit status, 128+signal, or -1 on timeout (the process is killed)
  std::string out;
  std::string err;
};

// Runs edri-server with `args` to its end (start-up failures, --print-config).
ExitResult run_server_to_exit(std::vector<std::string> args, std::map<std::string, std::string> env,
                              int timeout_ms = 10000);

}  // namespace edri::test
