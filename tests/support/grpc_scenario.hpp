// The gRPC scenarios of tests/grpc/*.py, run against a real server by the
// tests that check what they print, and the output of a shell command.
#pragma once

#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

namespace edri::test {

// Debian's python3 is the one python3-grpcio is installed for.
inline constexpr const char* kPython = "/usr/bin/python3";

inline std::string scenario_command(const char* script, std::uint16_t port, const std::string& scenario) {
  return std::string(kPython) + " " + script + " " + EDRI_GRPC_PY_DIR + " " + std::to_string(port) + " " + scenario +
         " 2>&1";
}

// Runs a scenario of grpc_client.py (or `script`) against `port`; its
// JSON. With `on_line`, each line it prints before the JSON is handed over
// first.
inline nlohmann::json run_scenario(std::uint16_t port, const std::string& scenario,
                                   const std::function<void(const std::string&)>& on_line = {},
                                   const char* script = EDRI_GRPC_CLIENT) {
  FILE* p = ::popen(scenario_command(script, port, scenario).c_str(), "r");
  REQUIRE(p);
  std::string last, all;
  char line[65536];
  while (std::fgets(line, sizeof line, p)) {
    last = line;
    all += line;
    if (on_line) on_line(last);
  }
  const int rc = ::pclose(p);
  INFO(all);
  REQUIRE(WIFEXITED(rc));
  REQUIRE(WEXITSTATUS(rc) == 0);
  return nlohmann::json::parse(last);
}

// Runs `command`; its standard output.
inline std::string output_of(const std::string& command) {
  std::string out;
  FILE* p = ::popen(command.c_str(), "r");
  if (!p) return out;
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  ::pclose(p);
  return out;
}

}  // namespace edri::test
