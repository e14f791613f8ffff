#pragma once

#include <sys/types.h>

#include <csignal>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace edri::bench {

enum class OutputTo { kDevNull, kStderr, kPipe };

struct ProcessSpec {
  std::string program;  // path, not searched in PATH
  std::vector<std::string> args;
  // Added to bench's own environment, replacing variables of the same name.
  std::vector<std::pair<std::string, std::string>> env;
  std::string working_dir;  // empty: bench's
  std::vector<int> cpus;    // empty: no pinning
  OutputTo stdout_to = OutputTo::kDevNull;
  OutputTo stderr_to = OutputTo::kDevNull;
};

// A server process bench started, in a process group of its own so that a
// terminal's Ctrl-C reaches only bench (which then stops it in order) and so
// that whatever the server forks can be swept up with it. Stopped on
// destruction.
class ServerProcess {
 public:
  // nullptr with `error` set when fork or exec fails.
  static std::unique_ptr<ServerProcess> start(const ProcessSpec& spec, std::string& error);

  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;
  ~ServerProcess();

  pid_t pid() const { return pid_; }

  enum class LineStatus { kLine, kTimeout, kClosed, kInterrupted };
  // Next line of a kPipe stdout, without its newline.
  LineStatus read_stdout_line(double timeout_seconds, const volatile std::sig_atomic_t* stop, std::string& line);
  void close_stdout();

  // How the process ended, if it has; never blocks.
  std::optional<std::string> exit_description();

  // Blocks until the process exits on its own; its raw wait status.
  int wait();
  // True once the process has exited, polling for at most `seconds`.
  bool wait_for_exit(double seconds);

  // SIGTERM, up to `grace_seconds` for it to exit, then SIGKILL to its whole
  // group. Idempotent.
  void stop(double grace_seconds = 5.0);

 private:
  ServerProcess(pid_t pid, int stdout_fd) : pid_(pid), stdout_fd_(stdout_fd) {}
  bool try_reap();

  pid_t pid_;
  int stdout_fd_;
  std::string stdout_buffer_;
  std::optional<int> wait_status_;
  bool stopped_ = false;
};

// Runs a command to completion with its output discarded; its exit code, or
// -1 when it could not be run or was killed.
int run_quietly(const std::vector<std::string>& argv);

// Runs a shell command line to completion; what it printed on stdout,
// trailing newlines removed. `status`, when given, gets pclose's status
// (-1 when it could not be run).
std::string run_output(const std::string& command, int* status = nullptr);

}  // namespace edri::bench
