#include "children_cpu_time.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace edri::bench {
namespace {

struct ProcessStat {
  pid_t ppid = 0;
  std::uint64_t cpu_ticks = 0;  // utime + stime
};

// Entries of /proc that are processes are named by their pid.
std::optional<pid_t> pid_from_name(std::string_view name) {
  pid_t pid = 0;
  auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), pid);
  if (ec != std::errc{} || end != name.data() + name.size() || name.empty() || pid <= 0) return std::nullopt;
  return pid;
}

// /proc/<pid>/stat is one line, far below this; a process gone since the
// directory was listed gives nullopt.
std::optional<std::string> read_stat_line(pid_t pid) {
  const std::string path = "/proc/" + std::to_string(pid) + "/stat";
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  char buffer[1024];
  ssize_t n;
  do {
    n = ::read(fd, buffer, sizeof buffer);
  } while (n < 0 && errno == EINTR);
  ::close(fd);
  if (n <= 0) return std::nullopt;
  return std::string(buffer, static_cast<std::size_t>(n));
}

// "pid (comm) state ppid ... utime stime ...": comm may hold spaces and
// parentheses, so fields are counted from the last ')'. Field numbers as in
// proc(5): 4 is ppid, 14 utime, 15 stime.
std::optional<ProcessStat> parse_stat_line(std::string_view line) {
  const std::size_t comm_end = line.rfind(')');
  if (comm_end == std::string_view::npos) return std::nullopt;
  std::string_view rest = line.substr(comm_end + 1);

  ProcessStat stat;
  int found = 0;
  for (int field = 3; field <= 15 && !rest.empty(); ++field) {
    while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
    const std::string_view token = rest.substr(0, rest.find(' '));
    rest.remove_prefix(token.size());
    if (field != 4 && field != 14 && field != 15) continue;
    std::uint64_t value = 0;
    auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), value);
    if (ec != std::errc{} || end != token.data() + token.size()) return std::nullopt;
    if (field == 4) {
      stat.ppid = static_cast<pid_t>(value);
    } else {
      stat.cpu_ticks += value;
    }
    ++found;
  }
  if (found != 3) return std::nullopt;
  return stat;
}

}  // namespace

double cpu_tick_seconds() {
  const long ticks_per_second = ::sysconf(_SC_CLK_TCK);
  return ticks_per_second > 0 ? 1.0 / static_cast<double>(ticks_per_second) : 0.01;
}

std::optional<ChildrenCpuTime> children_cpu_time(pid_t parent) {
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return std::nullopt;
  ChildrenCpuTime out;
  std::uint64_t ticks = 0;
  while (const dirent* entry = ::readdir(proc)) {
    const auto pid = pid_from_name(entry->d_name);
    if (!pid) continue;
    const auto line = read_stat_line(*pid);
    if (!line) continue;
    const auto stat = parse_stat_line(*line);
    if (!stat || stat->ppid != parent) continue;
    ticks += stat->cpu_ticks;
    out.pids.push_back(*pid);
  }
  ::closedir(proc);
  std::sort(out.pids.begin(), out.pids.end());
  out.seconds = static_cast<double>(ticks) * cpu_tick_seconds();
  return out;
}

std::optional<long> resident_kb(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  return std::nullopt;
}

std::map<pid_t, long> resident_by_process(pid_t supervisor) {
  std::map<pid_t, long> out;
  if (auto kb = resident_kb(supervisor)) out[supervisor] = *kb;
  if (auto children = children_cpu_time(supervisor))
    for (pid_t p : children->pids)
      if (auto kb = resident_kb(p)) out[p] = *kb;
  return out;
}

std::string process_title(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/cmdline");
  std::string title;
  std::getline(f, title, '\0');
  return title;
}

std::optional<double> cpu_us_per_request(const std::optional<ChildrenCpuTime>& at_start,
                                         const std::optional<ChildrenCpuTime>& at_end, std::uint64_t requests,
                                         std::string& why_not) {
  if (!at_start || !at_end) {
    why_not = "/proc could not be read";
  } else if (at_start->pids.empty()) {
    why_not = "no child processes of edri-server found";
  } else if (at_start->pids != at_end->pids) {
    why_not = "edri's processes changed during the measured window";
  } else if (requests == 0) {
    why_not = "no request completed";
  } else {
    return (at_end->seconds - at_start->seconds) / static_cast<double>(requests) * 1e6;
  }
  return std::nullopt;
}

}  // namespace edri::bench
