#include "support/server_process.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace edri::test {

namespace {

using Clock = std::chrono::steady_clock;

std::vector<std::string> build_env(const std::map<std::string, std::string>& extra) {
  std::vector<std::string> out;
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    if (kv.rfind("EDRI_", 0) == 0 || kv.rfind("ENVIRONMENT=", 0) == 0) continue;
    out.push_back(kv);
  }
  for (const auto& [k, v] : extra) out.push_back(k + "=" + v);
  return out;
}

// fork+exec with stdout to `out_fd` and stderr to `err_fd`.
pid_t spawn(const std::vector<std::string>& args, const std::vector<std::string>& env, int out_fd, int err_fd) {
  std::vector<char*> argv, envp;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    ::dup2(out_fd, 1);
    ::dup2(err_fd, 2);
    ::execve(argv[0], argv.data(), envp.data());
    ::_exit(127);
  }
  return pid;
}

int wait_exit(pid_t pid, int timeout_ms) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    int status = 0;
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (r < 0) return -2;
    if (Clock::now() > deadline) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

std::string temp_file(const char* stem) {
  std::string path = std::string("/tmp/") + stem + ".XXXXXX";
  const int fd = ::mkstemp(path.data());
  if (fd < 0) throw std::runtime_error("mkstemp failed");
  ::close(fd);
  return path;
}

// The build EDRI_TEST_SERVER_BUILD names, or nothing (this suite's own).
std::string server_build() {
  const char* dir = std::getenv("EDRI_TEST_SERVER_BUILD");
  return dir ? dir : "";
}

// `own` (this build's path) or `sub` of the build named.
std::string from_build(const char* own, const char* sub) {
  const std::string dir = server_build();
  return dir.empty() ? own : dir + "/" + sub;
}

}  // namespace

pid_t spawn_logged(const std::vector<std::string>& args, const std::string& log_path) {
  const int log = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (log < 0) throw std::runtime_error("cannot open " + log_path);
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) env.push_back(*e);
  const pid_t pid = spawn(args, env, log, log);
  ::close(log);
  return pid;
}

std::string server_binary() { return from_build(EDRI_SERVER_BIN, "bin/edri-server"); }
std::string test_plugin_dir() { return from_build(EDRI_TEST_PLUGIN_DIR, "test-plugins"); }
std::string plugin_path(const std::string& name) { return from_build(EDRI_PLUGIN_DIR, "plugins") + "/" + name + ".so"; }
std::string test_plugin_path(const std::string& name) { return test_plugin_dir() + "/" + name + ".so"; }

bool servers_under_asan() {
  // Another build's own record of its options, or this one's.
  const std::string dir = server_build();
  if (!dir.empty()) return read_file(dir + "/CMakeCache.txt").find("EDRI_SANITIZE:BOOL=ON") != std::string::npos;
#ifdef EDRI_SERVERS_UNDER_ASAN
  return true;
#else
  return false;
#endif
}

std::vector<std::string> shm_segments(const std::string& prefix) {
  std::vector<std::string> out;
  DIR* d = ::opendir("/dev/shm");
  if (!d) return out;
  while (dirent* e = ::readdir(d))
    if (std::string(e->d_name).rfind(prefix, 0) == 0) out.push_back(e->d_name);
  ::closedir(d);
  return out;
}

ServerProcess::ServerProcess(std::vector<std::string> plugins, std::map<std::string, std::string> env,
                             std::vector<std::string> wrapper, std::vector<std::string> args) {
  std::string list;
  for (const auto& p : plugins) list += (list.empty() ? "" : ":") + p;
  env.emplace("EDRI_HOST", "127.0.0.1");
  env.emplace("EDRI_PORT", "0");
  env.emplace("EDRI_PLUGINS", list);
  // One listener unless a test asks: what a test counts (connections per
  // listener, processes) must not change with the machine's cores, which
  // EDRI_LISTENER_WORKERS=auto follows.
  env.emplace("EDRI_LISTENER_WORKERS", "1");
  log_path_ = temp_file("edri-test-log");
  const int err_fd = ::open(log_path_.c_str(), O_WRONLY | O_APPEND);
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
  wrapper.push_back(server_binary());
  wrapper.insert(wrapper.end(), args.begin(), args.end());
  pid_ = spawn(wrapper, build_env(env), pipe_fds[1], err_fd);
  ::close(pipe_fds[1]);
  ::close(err_fd);

  // Wait for "edri: listening on http://127.0.0.1:<port>".
  std::string line;
  const auto deadline = Clock::now() + std::chrono::seconds(15);
  while (line.find('\n') == std::string::npos) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    pollfd p{pipe_fds[0], POLLIN, 0};
    if (left <= 0 || ::poll(&p, 1, static_cast<int>(left)) <= 0) break;
    char buf[256];
    const ssize_t n = ::read(pipe_fds[0], buf, sizeof buf);
    if (n <= 0) break;
    line.append(buf, static_cast<std::size_t>(n));
  }
  ::close(pipe_fds[0]);
  const auto colon = line.rfind(':');
  if (line.find("listening on") == std::string::npos || colon == std::string::npos) {
    stop(5000);
    // No destructor runs for a constructor that throws: remove the log here.
    const std::string text = log();
    ::unlink(log_path_.c_str());
    throw std::runtime_error("edri-server did not start; its log:\n" + text);
  }
  port_ = static_cast<std::uint16_t>(std::stoi(line.substr(colon + 1)));
}

ServerProcess::~ServerProcess() {
  if (pid_ > 0) stop();
  if (!log_path_.empty()) ::unlink(log_path_.c_str());
}

pid_t ServerProcess::child(const std::string& role) const {
  for (const auto& c : children())
    if (c.cmdline.find("edri-server: " + role) == 0) return c.pid;
  return -1;
}

std::string ServerProcess::log() const { return read_file(log_path_); }

int ServerProcess::stop(int timeout_ms) {
  if (pid_ <= 0) return -2;
  // Children and their own children (a manager's worker processes).
  for (const auto& c : children()) {
    last_children_.push_back(c.pid);
    for (const auto& g : children_of(c.pid)) last_children_.push_back(g.pid);
  }
  ::kill(pid_, SIGTERM);
  int status = wait_exit(pid_, timeout_ms);
  if (status == -1) {
    ::kill(pid_, SIGKILL);
    status = wait_exit(pid_, 5000);
    status = status >= 0 ? status : 137;
  }
  // Children that outlived their supervisor would be a bug; never leave
  // them behind a test.
  for (pid_t c : last_children_)
    if (process_alive(c)) ::kill(c, SIGKILL);
  pid_ = -1;
  return status;
}

ExitResult run_server_to_exit(std::vector<std::string> args, std::map<std::string, std::string> env, int timeout_ms) {
  env.emplace("EDRI_HOST", "127.0.0.1");
  env.emplace("EDRI_PORT", "0");
  const std::string out_path = temp_file("edri-test-out"), err_path = temp_file("edri-test-err");
  const int out_fd = ::open(out_path.c_str(), O_WRONLY), err_fd = ::open(err_path.c_str(), O_WRONLY);
  args.insert(args.begin(), server_binary());
  const pid_t pid = spawn(args, build_env(env), out_fd, err_fd);
  ::close(out_fd);
  ::close(err_fd);
  int status = wait_exit(pid, timeout_ms);
  if (status == -1) {
    ::kill(pid, SIGKILL);
    wait_exit(pid, 5000);
  }
  ExitResult r{status, read_file(out_path), read_file(err_path)};
  ::unlink(out_path.c_str());
  ::unlink(err_path.c_str());
  return r;
}

}  // namespace edri::test
