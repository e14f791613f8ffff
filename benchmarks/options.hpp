#pragma once

#include <cstdio>
#include <optional>
#include <string>
#include <vector>

namespace edri::bench {

// bench's command line, checked.
struct Options {
  std::string scenario;
  double duration_seconds = 5.0;
  double warmup_seconds = 1.0;
  std::vector<int> concurrencies;      // empty: the scenario's default
  std::vector<int> middleware_counts;  // empty: the scenario's default
  std::optional<int> client_cpu;
  std::string server_cpus;
  std::vector<int> server_cpu_list;
  // Neither --client-cpu nor --server-cpus, on a machine of 4 CPUs or more:
  // the load generator on the first CPU allowed, the servers confined to
  // the others by affinity (edri still decides its own placement there).
  bool default_split = false;
  bool verbose = false;
  bool quick = false;   // a smoke run: short, and not recorded
  int runs = 1;         // --runs N: repeated, reported as ranges
  double rate = 0;      // --rate R: open-loop load at R req/s per run; 0 closed loop
  bool record = false;  // --record: appended to BENCHMARKS.md
  // --reference-command CMD: a server of the scenario's protocol to measure
  // beside edri (fanout), started with `sh -c`, told its port as $PORT and
  // in place of every `{port}`; --reference-name names it in the tables.
  std::string reference_command;
  std::string reference_name = "reference";

  const std::vector<int>& concurrencies_or(const std::vector<int>& scenario_default) const {
    return concurrencies.empty() ? scenario_default : concurrencies;
  }
};

// Accepts "--name value" and "--name=value". Returns nullopt after printing
// the problem to stderr.
std::optional<Options> parse_options(int argc, char** argv);

// CPUs this process may use, in order (sched_getaffinity).
std::vector<int> allowed_cpus();
// 1, 2, 4, ... up to `n` (and 2 even where `n` is 1): the counts of a
// scaling scenario on this machine.
std::vector<int> doubling_up_to(int n);

// The "options:" part of the usage text.
void print_options_help(std::FILE* to);

}  // namespace edri::bench
