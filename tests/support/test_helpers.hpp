// Small helpers shared by the tests.
#pragma once

#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

namespace edri::test {

// Polls until `f` returns true (exceptions count as false) or the time runs out.
template <class F>
bool eventually(F f, std::chrono::milliseconds limit = std::chrono::milliseconds(5000)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    try {
      if (f()) return true;
    } catch (const std::exception&) {
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

// True when `s` has the shape of `pattern`: 'd' is a decimal digit, 'h' a
// lower-case hex digit, any other character itself. (std::regex trips
// GCC 12 warnings under the sanitizers.)
inline bool has_shape(std::string_view s, std::string_view pattern) {
  if (s.size() != pattern.size()) return false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const bool digit = c >= '0' && c <= '9';
    if (pattern[i] == 'd' ? !digit : pattern[i] == 'h' ? !(digit || (c >= 'a' && c <= 'f')) : c != pattern[i])
      return false;
  }
  return true;
}

// The number after `field` (with its colon) in /proc/<pid>/status (-1 if
// the process is gone).
inline long status_field(int pid, std::string_view field) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(f, line))
    if (line.size() > field.size() && line.compare(0, field.size(), field) == 0 && line[field.size()] == ':')
      return std::stol(line.substr(field.size() + 1));
  return -1;
}

// Threads of a process (-1 if it is gone).
inline int thread_count(int pid) { return static_cast<int>(status_field(pid, "Threads")); }

// How often a process has gone to sleep so far: its voluntary context
// switches (-1 if it is gone).
inline long sleeps(int pid) { return status_field(pid, "voluntary_ctxt_switches"); }

// Resident memory of a process in kB (-1 if it is gone).
inline long rss_kb(int pid) { return status_field(pid, "VmRSS"); }

// A temporary folder, removed with everything in it when the test ends.
// The value of the first line of Prometheus text `text` that starts with
// `prefix` (a metric's name and labels), or -1 when there is none.
inline double metric_value(const std::string& text, const std::string& prefix) {
  const auto at = text.find("\n" + prefix);
  if (at == std::string::npos) return -1;
  const auto end = text.find('\n', at + 1);
  const auto line = text.substr(at + 1, end - at - 1);
  return std::stod(line.substr(line.rfind(' ') + 1));
}

// The lines of `file` (none when it cannot be read).
inline std::vector<std::string> file_lines(const std::filesystem::path& file) {
  std::vector<std::string> lines;
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// An environment variable set for one test (a plugin's registration
// reads it), unset when it ends.
struct EnvVar {
  std::string name;
  EnvVar(std::string n, const char* value) : name(std::move(n)) { ::setenv(name.c_str(), value, 1); }
  ~EnvVar() { ::unsetenv(name.c_str()); }
  EnvVar(const EnvVar&) = delete;
  EnvVar& operator=(const EnvVar&) = delete;
};

struct TempDir {
  std::filesystem::path path;
  TempDir() {
    std::string tmpl = "/tmp/edri-test.XXXXXX";
    path = ::mkdtemp(tmpl.data());
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  void write(const std::string& rel, const std::string& content) const {
    std::filesystem::create_directories((path / rel).parent_path());
    std::ofstream(path / rel, std::ios::binary) << content;
  }
};

}  // namespace edri::test
