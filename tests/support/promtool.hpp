// `promtool check metrics` (Prometheus's own linter of the text format) on
// a /metrics answer. scripts/setup.sh puts promtool in .tools/; a machine
// without it fails the test that asks, saying so.
#pragma once

#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

namespace edri::test {

struct PromtoolResult {
  int status = -1;  // promtool's exit status; -1: promtool not found
  std::string output;
};

inline std::string promtool_path() {
  const std::filesystem::path local = std::filesystem::path(EDRI_TOOLS_DIR) / "prometheus/usr/bin/promtool";
  if (std::filesystem::exists(local)) return local;
  return ::system("command -v promtool > /dev/null 2>&1") == 0 ? "promtool" : "";
}

inline PromtoolResult promtool_check_metrics(const std::string& text) {
  PromtoolResult r;
  const auto tool = promtool_path();
  if (tool.empty()) {
    r.output = "promtool not found: run scripts/setup.sh";
    return r;
  }
  const auto file = std::filesystem::temp_directory_path() / ("edri-metrics-" + std::to_string(::getpid()) + ".txt");
  std::ofstream(file) << text;
  FILE* p = ::popen((tool + " check metrics < " + file.string() + " 2>&1").c_str(), "r");
  std::array<char, 512> buf{};
  while (p && std::fgets(buf.data(), buf.size(), p)) r.output += buf.data();
  const int rc = p ? ::pclose(p) : -1;
  std::filesystem::remove(file);
  r.status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  return r;
}

}  // namespace edri::test
