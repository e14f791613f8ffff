#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "load_generator.hpp"

namespace edri::bench {

// Figures of one measured run, in the units the tables print.
struct RunSummary {
  double requests_per_second = 0;
  double p50_ms = 0;
  double p95_ms = 0;
  double p99_ms = 0;
  double max_ms = 0;
  std::uint64_t errors = 0;
  std::uint64_t non_2xx = 0;
};

RunSummary summarize(const LoadResult& result);

// One table row: a server at one concurrency, either measured or, when the
// server could not be run, the reason ("not installed", "failed to start").
struct Row {
  std::string server;
  int concurrency = 0;
  std::optional<RunSummary> summary;
  std::string unavailable;
};

// "<date> | CPU ... | nproc N | kernel ... | <command line>", so a pasted
// table carries what it was measured on.
std::string context_line(const std::string& command_line);

std::string progress_line(const std::string& server, int concurrency, const RunSummary& s);

void print_noop_table(const std::vector<Row>& rows);
// Rows grouped by concurrency, each compared with the FastAPI and nginx rows
// of the same concurrency.
void print_compare_table(const std::vector<Row>& rows, const std::vector<int>& concurrencies);

}  // namespace edri::bench
