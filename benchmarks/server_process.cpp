#include <utility>

#include "server_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string_view>
#include <thread>

extern char** environ;

namespace edri::bench {
namespace {

using Clock = std::chrono::steady_clock;

std::vector<std::string> merged_environment(const std::vector<std::pair<std::string, std::string>>& overrides) {
  std::vector<std::string> out;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view entry(*e);
    const std::string_view name = entry.substr(0, entry.find('='));
    bool overridden = false;
    for (const auto& [key, value] : overrides) overridden = overridden || key == name;
    if (!overridden) out.emplace_back(entry);
  }
  for (const auto& [key, value] : overrides) out.push_back(key + "=" + value);
  return out;
}

std::vector<char*> pointers_to(std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

[[noreturn]] void report_and_exit(int report_fd, int err) {
  ssize_t ignored = ::write(report_fd, &err, sizeof err);
  (void)ignored;
  ::_exit(127);
}

// Runs in the forked child: only async-signal-safe calls until exec. Reports
// errno through `report_fd` (close-on-exec, so the parent reads EOF when exec
// succeeds) and exits.
[[noreturn]] void exec_child(const ProcessSpec& spec, char* const* argv, char* const* envp, pid_t parent, int devnull,
                             int stdout_pipe, int report_fd, const cpu_set_t* cpus) {
  auto die = [report_fd](int err) { report_and_exit(report_fd, err); };

  ::setpgid(0, 0);
  // If bench itself is killed outright, the server must not outlive it.
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (::getppid() != parent) ::_exit(127);

  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);

  if (cpus != nullptr && ::sched_setaffinity(0, sizeof(cpu_set_t), cpus) != 0) die(errno);
  if (!spec.working_dir.empty() && ::chdir(spec.working_dir.c_str()) != 0) die(errno);

  auto target_of = [&](OutputTo to) {
    switch (to) {
      case OutputTo::kDevNull: return devnull;
      case OutputTo::kStderr: return STDERR_FILENO;
      case OutputTo::kPipe: return stdout_pipe;
    }
    return devnull;
  };
  const int out = target_of(spec.stdout_to);
  const int err = target_of(spec.stderr_to);
  if (::dup2(devnull, STDIN_FILENO) < 0) die(errno);
  if (out != STDOUT_FILENO && ::dup2(out, STDOUT_FILENO) < 0) die(errno);
  if (err != STDERR_FILENO && ::dup2(err, STDERR_FILENO) < 0) die(errno);

  ::execve(spec.program.c_str(), argv, envp);
  report_and_exit(report_fd, errno);
}

}  // namespace

std::unique_ptr<ServerProcess> ServerProcess::start(const ProcessSpec& spec, std::string& error) {
  std::vector<std::string> argv_strings{spec.program};
  argv_strings.insert(argv_strings.end(), spec.args.begin(), spec.args.end());
  std::vector<std::string> env_strings = merged_environment(spec.env);
  std::vector<char*> argv = pointers_to(argv_strings);
  std::vector<char*> envp = pointers_to(env_strings);

  cpu_set_t cpu_set;
  CPU_ZERO(&cpu_set);
  for (int cpu : spec.cpus) CPU_SET(cpu, &cpu_set);

  int devnull = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  if (devnull < 0) {
    error = std::string("open /dev/null: ") + std::strerror(errno);
    return nullptr;
  }
  int stdout_pipe[2] = {-1, -1};
  int report_pipe[2] = {-1, -1};
  if ((spec.stdout_to == OutputTo::kPipe && ::pipe2(stdout_pipe, O_CLOEXEC) != 0) ||
      ::pipe2(report_pipe, O_CLOEXEC) != 0) {
    error = std::string("pipe: ") + std::strerror(errno);
    close_fd(devnull);
    close_fd(stdout_pipe[0]);
    close_fd(stdout_pipe[1]);
    return nullptr;
  }

  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) {
    exec_child(spec, argv.data(), envp.data(), parent, devnull, stdout_pipe[1], report_pipe[1],
               spec.cpus.empty() ? nullptr : &cpu_set);
  }
  const int fork_errno = errno;
  close_fd(devnull);
  close_fd(stdout_pipe[1]);
  close_fd(report_pipe[1]);
  if (pid < 0) {
    error = std::string("fork: ") + std::strerror(fork_errno);
    close_fd(stdout_pipe[0]);
    close_fd(report_pipe[0]);
    return nullptr;
  }
  // Also set from here so the group exists before we might signal it, whichever
  // of parent and child runs first.
  ::setpgid(pid, pid);

  int child_errno = 0;
  ssize_t n;
  do {
    n = ::read(report_pipe[0], &child_errno, sizeof child_errno);
  } while (n < 0 && errno == EINTR);
  close_fd(report_pipe[0]);
  if (n > 0) {
    ::waitpid(pid, nullptr, 0);
    close_fd(stdout_pipe[0]);
    error = "cannot run " + spec.program + ": " + std::strerror(child_errno);
    return nullptr;
  }
  return std::unique_ptr<ServerProcess>(new ServerProcess(pid, stdout_pipe[0]));
}

ServerProcess::~ServerProcess() {
  stop();
  close_stdout();
}

ServerProcess::LineStatus ServerProcess::read_stdout_line(double timeout_seconds,
                                                          const volatile std::sig_atomic_t* stop, std::string& line) {
  const auto deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_seconds));
  for (;;) {
    if (const auto nl = stdout_buffer_.find('\n'); nl != std::string::npos) {
      line = stdout_buffer_.substr(0, nl);
      stdout_buffer_.erase(0, nl + 1);
      return LineStatus::kLine;
    }
    if (stdout_fd_ < 0) return LineStatus::kClosed;
    if (stop != nullptr && *stop != 0) return LineStatus::kInterrupted;
    const auto left = deadline - Clock::now();
    if (left <= Clock::duration::zero()) return LineStatus::kTimeout;
    // Short slices so a signal is noticed even when poll is restarted.
    const auto slice = std::min<Clock::duration>(left, std::chrono::milliseconds(100));
    pollfd pfd{.fd = stdout_fd_, .events = POLLIN, .revents = 0};
    const int ready = ::poll(&pfd, 1, static_cast<int>(std::chrono::ceil<std::chrono::milliseconds>(slice).count()));
    if (ready <= 0) continue;  // timeout slice or EINTR
    char chunk[512];
    const ssize_t got = ::read(stdout_fd_, chunk, sizeof chunk);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      close_fd(stdout_fd_);
      continue;  // a final unterminated line is not the line we wait for
    }
    stdout_buffer_.append(chunk, static_cast<std::size_t>(got));
  }
}

void ServerProcess::close_stdout() { close_fd(stdout_fd_); }

bool ServerProcess::try_reap() {
  if (wait_status_) return true;
  int status = 0;
  const pid_t r = ::waitpid(pid_, &status, WNOHANG);
  if (r == pid_) {
    wait_status_ = status;
    return true;
  }
  if (r < 0 && errno == ECHILD) {
    wait_status_ = 0;  // not ours to wait for any more; treat as gone
    return true;
  }
  return false;
}

int ServerProcess::wait() {
  while (!wait_status_) {
    int status = 0;
    const pid_t r = ::waitpid(pid_, &status, 0);
    if (r == pid_) wait_status_ = status;
    if (r < 0 && errno != EINTR) wait_status_ = 0;
  }
  return *wait_status_;
}

bool ServerProcess::wait_for_exit(double seconds) {
  const auto deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  while (!try_reap()) {
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

std::optional<std::string> ServerProcess::exit_description() {
  if (!try_reap()) return std::nullopt;
  const int status = *wait_status_;
  if (WIFEXITED(status)) return "exited with code " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "killed by signal " + std::to_string(WTERMSIG(status));
  return "ended";
}

void ServerProcess::stop(double grace_seconds) {
  if (stopped_) return;
  stopped_ = true;
  if (!try_reap()) {
    ::kill(pid_, SIGTERM);
    if (!wait_for_exit(grace_seconds)) {
      ::kill(-pid_, SIGKILL);
      ::kill(pid_, SIGKILL);
      int status = 0;
      while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
      }
      wait_status_ = status;
    }
  }
  // The group id stays reserved while any member lives, so this reaches only
  // what the server itself left behind (e.g. a worker that outlived its
  // master), never an unrelated process.
  ::kill(-pid_, SIGKILL);
}

int run_quietly(const std::vector<std::string>& argv) {
  ProcessSpec spec{.program = argv.at(0),
                   .args = {argv.begin() + 1, argv.end()},
                   .env = {},
                   .working_dir = {},
                   .cpus = {},
                   .stdout_to = OutputTo::kDevNull,
                   .stderr_to = OutputTo::kDevNull};
  std::string error;
  auto process = ServerProcess::start(spec, error);
  if (!process) return -1;
  const int status = process->wait();
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string run_output(const std::string& command, int* status) {
  std::string out;
  int rc = -1;
  if (FILE* p = ::popen(command.c_str(), "r")) {
    char buf[4096];
    std::size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    rc = ::pclose(p);
  }
  if (status) *status = rc;
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

}  // namespace edri::bench
