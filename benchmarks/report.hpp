#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
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
  std::uint64_t sent_late = 0;  // open loop only
};

RunSummary summarize(const LoadResult& result);

// One table row: a server (or, in the echo table, a route) at one
// concurrency, either measured or, when the server could not be run, the
// reason ("not installed", "failed to start").
struct Row {
  std::string label;
  int concurrency = 0;
  std::optional<RunSummary> summary;
  std::string unavailable;
};

// A row of the middleware table: edri with `middlewares` pass-through
// middlewares, and the CPU its processes used per request in the window.
struct MiddlewareRow {
  int middlewares = 0;
  Row run;
  std::optional<double> cpu_us_per_request;
};

// The row of `label` at `concurrency`, or nullptr.
const Row* find_row(const std::vector<Row>& rows, std::string_view label, int concurrency);

// "<date> | CPU ... | nproc N | kernel ... | <command line>", so a pasted
// table carries what it was measured on.
// The CPU's model name (/proc/cpuinfo), and the CPUs bench may run on.
std::string cpu_model();
int usable_cpus();

std::string context_line(const std::string& command_line);

std::string progress_line(const std::string& server, int concurrency, const RunSummary& s);

void print_noop_table(const std::vector<Row>& rows);
// Rows grouped by concurrency, each compared with the FastAPI and nginx rows
// of the same concurrency.
void print_compare_table(const std::vector<Row>& rows, const std::vector<int>& concurrencies);
// Rows grouped by concurrency, each compared with the `baseline` route's row
// of the same concurrency.
void print_echo_table(const std::vector<Row>& rows, const std::vector<int>& concurrencies, const std::string& baseline);
// Per-middleware cost: each row's CPU per request above that of the nearest
// row with no middleware at the same concurrency, divided by its middleware
// count.
void print_middleware_table(const std::vector<MiddlewareRow>& rows);

// Rows in order, each compared with the row named baseline_of(label) at the
// same concurrency; `what` heads the first column. Shows p95 as well.
void print_scaling_table(const std::vector<Row>& rows, const std::string& what,
                         const std::function<std::string(const std::string&)>& baseline_of);

// A line of a rate table: the rows of `label`, and what their rate counts
// ("msgs/s", "calls/s").
struct RateLine {
  std::string label;
  std::string unit;
};
// One line per RateLine, in order, its rate at each concurrency across and
// its errors (non-2xx included) summed over its runs.
void print_rate_table(const std::vector<Row>& rows, const std::vector<RateLine>& lines,
                      const std::vector<int>& concurrencies);

// A line of a ratio table: the rate of `numerator`'s row over that of
// `denominator`'s at each concurrency, and the target it has (text, shown
// and not checked).
struct RatioLine {
  std::string name;
  std::string numerator;
  std::string denominator;
  std::string target;
};
void print_ratio_table(const std::vector<Row>& rows, const std::vector<RatioLine>& ratios,
                       const std::vector<int>& concurrencies);

// "- note" lines after a blank line; nothing when there are none.
void print_notes(const std::vector<std::string>& notes);

}  // namespace edri::bench
