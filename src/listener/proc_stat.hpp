// The fields of /proc/<pid>/stat after the command's closing parenthesis
// (state first, then ppid, ...: proc(5)), for /health and /metrics.
#pragma once

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

namespace edri::listener {

// From the state field on ("S 1 2 ..."); nullopt when the process is gone.
inline std::optional<std::string> proc_stat_fields(std::uint32_t pid) {
  if (pid == 0) return std::nullopt;
  char path[32];
  std::snprintf(path, sizeof path, "/proc/%u/stat", pid);
  std::FILE* f = std::fopen(path, "re");
  if (!f) return std::nullopt;
  char buf[1024];
  const std::size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  const std::string stat(buf, n);
  const auto close = stat.rfind(')');
  if (close == std::string::npos || close + 2 >= stat.size()) return std::nullopt;
  return stat.substr(close + 2);
}

}  // namespace edri::listener
