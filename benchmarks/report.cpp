#include <utility>

#include "report.hpp"

#include <sched.h>
#include <sys/utsname.h>

#include <cstdio>
#include <ctime>
#include <fstream>
#include <string_view>

namespace edri::bench {
namespace {

double to_ms(std::uint64_t ns) { return static_cast<double>(ns) / 1e6; }

std::string format(const char* fmt, double value) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, value);
  return buf;
}

std::string errors_cell(const RunSummary& s) {
  if (s.non_2xx == 0) return std::to_string(s.errors);
  return std::to_string(s.errors) + " + " + std::to_string(s.non_2xx) + " non-2xx";
}

std::string ratio_cell(const Row& row, const Row* reference) {
  if (!row.summary || reference == nullptr || !reference->summary || reference->summary->requests_per_second <= 0) {
    return "-";
  }
  const double ratio = row.summary->requests_per_second / reference->summary->requests_per_second;
  return format(ratio >= 100 ? "%.0fx" : ratio >= 1 ? "%.1fx" : "%.2fx", ratio);
}

// The measured cells of a row, or the reason in the req/s column and dashes.
std::vector<std::string> measured_cells(const Row& row) {
  if (!row.summary) return {row.unavailable, "-", "-", "-"};
  const RunSummary& s = *row.summary;
  return {format("%.0f", s.requests_per_second), format("%.3f", s.p50_ms), format("%.3f", s.p99_ms), errors_cell(s)};
}

void print_row(const std::vector<std::string>& cells) {
  std::string line = "|";
  for (const auto& cell : cells) line += " " + cell + " |";
  std::printf("%s\n", line.c_str());
}

// The header line and its alignment line: `text_before` text columns, then
// figures, the last column a figure or text.
void print_header(const std::vector<std::string>& names, std::size_t text_before, bool last_is_figure) {
  print_row(names);
  std::string aligns = "|";
  for (std::size_t i = 0; i + 1 < names.size(); ++i) aligns += i < text_before ? "---|" : "---:|";
  aligns += last_is_figure ? "---:|" : "---|";
  std::printf("%s\n", aligns.c_str());
}

// As ratio_cell, with two decimals below 10x: a ratio table's targets
// (0.8x, 0.9x) need the second.
std::string two_place_ratio(const Row* numerator, const Row* denominator) {
  if (numerator == nullptr || denominator == nullptr || !numerator->summary || !denominator->summary ||
      denominator->summary->requests_per_second <= 0)
    return "-";
  const double ratio = numerator->summary->requests_per_second / denominator->summary->requests_per_second;
  return format(ratio >= 100 ? "%.0fx" : ratio >= 10 ? "%.1fx" : "%.2fx", ratio);
}

// The N=0 row of the same concurrency measured closest before rows[index]
// (or, when none was, the first after it), so that a repeated
// --middlewares 0,64,0,64 pairs each run with its neighbour.
const MiddlewareRow* middleware_baseline(const std::vector<MiddlewareRow>& rows, std::size_t index) {
  auto is_baseline = [&](const MiddlewareRow& r) {
    return r.middlewares == 0 && r.run.concurrency == rows[index].run.concurrency;
  };
  for (std::size_t i = index + 1; i-- > 0;) {
    if (is_baseline(rows[i])) return &rows[i];
  }
  for (std::size_t i = index + 1; i < rows.size(); ++i) {
    if (is_baseline(rows[i])) return &rows[i];
  }
  return nullptr;
}

}  // namespace

std::string cpu_model() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) {
        std::string model = line.substr(colon + 1);
        model.erase(0, model.find_first_not_of(" \t"));
        return model;
      }
    }
  }
  return "unknown CPU";
}

// What `nproc` prints: the CPUs this process may run on.
int usable_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return 0;
  return CPU_COUNT(&set);
}

RunSummary summarize(const LoadResult& result) {
  const LatencyHistogram& h = result.latency;
  return RunSummary{.requests_per_second = result.requests_per_second(),
                    .p50_ms = to_ms(h.percentile(0.50)),
                    .p95_ms = to_ms(h.percentile(0.95)),
                    .p99_ms = to_ms(h.percentile(0.99)),
                    .max_ms = to_ms(h.max()),
                    .errors = result.errors,
                    .non_2xx = result.non_2xx,
                    .sent_late = result.sent_late};
}

std::string context_line(const std::string& command_line) {
  char date[64] = "unknown date";
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  if (gmtime_r(&now, &utc) != nullptr) std::strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S UTC", &utc);
  utsname uts{};
  const std::string kernel = uname(&uts) == 0 ? std::string(uts.sysname) + " " + uts.release : "unknown kernel";
  return std::string(date) + " | " + cpu_model() + " | nproc " + std::to_string(usable_cpus()) + " | " + kernel +
         " | `" + command_line + "`";
}

std::string progress_line(const std::string& server, int concurrency, const RunSummary& s) {
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "  %s c=%d: %.0f req/s, p50 %.3f ms, p95 %.3f ms, p99 %.3f ms, max %.3f ms, "
                "errors %llu, non-2xx %llu",
                server.c_str(), concurrency, s.requests_per_second, s.p50_ms, s.p95_ms, s.p99_ms, s.max_ms,
                static_cast<unsigned long long>(s.errors), static_cast<unsigned long long>(s.non_2xx));
  std::string line = buf;
  if (s.sent_late > 0)
    line.append(", sent late ").append(std::to_string(s.sent_late)).append(" (server behind the rate)");
  return line;
}

void print_noop_table(const std::vector<Row>& rows) {
  std::printf("| c | req/s | p50 ms | p99 ms | errors |\n");
  std::printf("|---:|---:|---:|---:|---:|\n");
  for (const Row& row : rows) {
    std::vector<std::string> cells{std::to_string(row.concurrency)};
    for (auto& cell : measured_cells(row)) cells.push_back(std::move(cell));
    print_row(cells);
  }
}

void print_compare_table(const std::vector<Row>& rows, const std::vector<int>& concurrencies) {
  std::printf("| server | c | req/s | p50 ms | p99 ms | errors | vs FastAPI | vs nginx |\n");
  std::printf("|---|---:|---:|---:|---:|---:|---:|---:|\n");
  for (int c : concurrencies) {
    const Row* fastapi = find_row(rows, "FastAPI", c);
    const Row* nginx = find_row(rows, "nginx", c);
    for (const Row& row : rows) {
      if (row.concurrency != c) continue;
      std::vector<std::string> cells{row.label, std::to_string(c)};
      for (auto& cell : measured_cells(row)) cells.push_back(std::move(cell));
      cells.push_back(ratio_cell(row, fastapi));
      cells.push_back(ratio_cell(row, nginx));
      print_row(cells);
    }
  }
}

void print_echo_table(const std::vector<Row>& rows, const std::vector<int>& concurrencies,
                      const std::string& baseline) {
  // The rows say "GET /noop", the column "vs /noop".
  const std::string_view baseline_path = std::string_view(baseline).substr(baseline.find(' ') + 1);
  std::printf("| route | c | req/s | p50 ms | p99 ms | errors | vs %.*s |\n", static_cast<int>(baseline_path.size()),
              baseline_path.data());
  std::printf("|---|---:|---:|---:|---:|---:|---:|\n");
  for (int c : concurrencies) {
    const Row* reference = find_row(rows, baseline, c);
    for (const Row& row : rows) {
      if (row.concurrency != c) continue;
      std::vector<std::string> cells{row.label, std::to_string(c)};
      for (auto& cell : measured_cells(row)) cells.push_back(std::move(cell));
      cells.push_back(ratio_cell(row, reference));
      print_row(cells);
    }
  }
}

void print_middleware_table(const std::vector<MiddlewareRow>& rows) {
  std::printf("| middlewares | c | req/s | p50 ms | p99 ms | cpu us/req | per middleware us | errors |\n");
  std::printf("|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const MiddlewareRow& row = rows[i];
    const MiddlewareRow* baseline = middleware_baseline(rows, i);
    std::string per_middleware = "-";
    if (row.middlewares == 0) {
      per_middleware = "—";  // not applicable, as opposed to not measured
    } else if (row.cpu_us_per_request && baseline != nullptr && baseline->cpu_us_per_request) {
      const double extra = *row.cpu_us_per_request - *baseline->cpu_us_per_request;
      per_middleware = format("%.3f", extra / row.middlewares);
    }
    const std::vector<std::string> measured = measured_cells(row.run);
    print_row({std::to_string(row.middlewares), std::to_string(row.run.concurrency), measured[0], measured[1],
               measured[2], row.cpu_us_per_request ? format("%.2f", *row.cpu_us_per_request) : "-", per_middleware,
               measured[3]});
  }
}

void print_scaling_table(const std::vector<Row>& rows, const std::string& what,
                         const std::function<std::string(const std::string&)>& baseline_of) {
  std::printf("| %s | c | req/s | p50 ms | p95 ms | p99 ms | errors | vs baseline |\n", what.c_str());
  std::printf("|---|---:|---:|---:|---:|---:|---:|---:|\n");
  for (const Row& row : rows) {
    const Row* reference = find_row(rows, baseline_of(row.label), row.concurrency);
    std::vector<std::string> cells{row.label, std::to_string(row.concurrency)};
    if (row.summary) {
      const RunSummary& s = *row.summary;
      for (auto& c : {format("%.0f", s.requests_per_second), format("%.3f", s.p50_ms), format("%.3f", s.p95_ms),
                      format("%.3f", s.p99_ms), errors_cell(s)})
        cells.push_back(c);
    } else {
      for (auto& c : {row.unavailable, std::string("-"), std::string("-"), std::string("-"), std::string("-")})
        cells.push_back(c);
    }
    cells.push_back(ratio_cell(row, reference));
    print_row(cells);
  }
}

void print_rate_table(const std::vector<Row>& rows, const std::vector<RateLine>& lines,
                      const std::vector<int>& concurrencies) {
  std::vector<std::string> header{"transport", "unit"};
  for (int c : concurrencies) header.push_back("c=" + std::to_string(c));
  header.push_back("errors");
  print_header(header, 2, true);
  for (const RateLine& line : lines) {
    std::vector<std::string> cells{line.label, line.unit};
    std::uint64_t failed = 0;
    bool any_measured = false;
    for (int c : concurrencies) {
      const Row* row = find_row(rows, line.label, c);
      if (row == nullptr || !row->summary) {
        cells.push_back(row == nullptr ? "-" : row->unavailable);
        continue;
      }
      any_measured = true;
      failed += row->summary->errors + row->summary->non_2xx;
      cells.push_back(format("%.0f", row->summary->requests_per_second));
    }
    cells.push_back(any_measured ? std::to_string(failed) : "-");
    print_row(cells);
  }
}

void print_ratio_table(const std::vector<Row>& rows, const std::vector<RatioLine>& ratios,
                       const std::vector<int>& concurrencies) {
  std::vector<std::string> header{"ratio"};
  for (int c : concurrencies) header.push_back("c=" + std::to_string(c));
  header.push_back("target");
  print_header(header, 1, false);
  for (const RatioLine& ratio : ratios) {
    std::vector<std::string> cells{ratio.name};
    for (int c : concurrencies)
      cells.push_back(two_place_ratio(find_row(rows, ratio.numerator, c), find_row(rows, ratio.denominator, c)));
    cells.push_back(ratio.target);
    print_row(cells);
  }
}

const Row* find_row(const std::vector<Row>& rows, std::string_view label, int concurrency) {
  for (const Row& row : rows) {
    if (row.label == label && row.concurrency == concurrency) return &row;
  }
  return nullptr;
}

void print_notes(const std::vector<std::string>& notes) {
  if (notes.empty()) return;
  std::printf("\n");
  for (const auto& note : notes) std::printf("- %s\n", note.c_str());
}

}  // namespace edri::bench
