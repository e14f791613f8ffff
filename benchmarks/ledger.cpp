#include "ledger.hpp"

#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "report.hpp"
#include "server_process.hpp"

namespace edri::bench {
namespace {

namespace fs = std::filesystem;

std::string trim(std::string s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return {};
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

std::vector<std::string> cells_of(const std::string& line) {
  std::vector<std::string> cells;
  std::size_t at = 1;  // past the leading '|'
  while (at < line.size()) {
    const auto bar = line.find('|', at);
    if (bar == std::string::npos) break;
    cells.push_back(trim(line.substr(at, bar - at)));
    at = bar + 1;
  }
  return cells;
}

// The number a cell starts with and what follows it ("1.26x" -> 1.26, "x").
std::optional<std::pair<double, std::string>> number_of(const std::string& cell) {
  if (cell.empty()) return std::nullopt;
  std::size_t used = 0;
  try {
    const double v = std::stod(cell, &used);
    const std::string rest = cell.substr(used);
    if (rest.find_first_of("0123456789") != std::string::npos) return std::nullopt;  // "1 / 2" and the like
    return std::make_pair(v, rest);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::string format_like(double v, const std::string& sample) {
  // As many decimals as the first run's cell had.
  const auto dot = sample.find('.');
  int decimals = 0;
  if (dot != std::string::npos)
    while (dot + 1 + static_cast<std::size_t>(decimals) < sample.size() &&
           std::isdigit(static_cast<unsigned char>(sample[dot + 1 + static_cast<std::size_t>(decimals)])))
      ++decimals;
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

long memory_kb() {
  std::ifstream f("/proc/meminfo");
  std::string key;
  long kb = 0;
  while (f >> key >> kb)
    if (key == "MemTotal:") return kb;
  return 0;
}

std::string utc_now(const char* format) {
  char buf[64] = "";
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  std::strftime(buf, sizeof buf, format, &tm);
  return buf;
}

// Changes to tracked files, but for the ledger's own outputs (a run of
// `bench all --record` appends to BENCHMARKS.md as it goes).
constexpr const char* kDirtyCheck = "status --porcelain --untracked-files=no -- . ':!BENCHMARKS.md' ':!docs/charts'";

std::string git(const std::string& args) {
  return run_output("git -C '" + std::string(EDRI_SOURCE_DIR) + "' " + args + " 2>/dev/null");
}

}  // namespace

std::vector<MarkdownTable> parse_tables(const std::string& report) {
  std::vector<MarkdownTable> tables;
  std::istringstream in(report);
  std::string line;
  MarkdownTable* open = nullptr;
  int line_in_table = 0;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] != '|') {
      open = nullptr;
      continue;
    }
    if (!open) {
      tables.emplace_back();
      open = &tables.back();
      open->header = cells_of(line);
      line_in_table = 1;
      continue;
    }
    if (line_in_table++ == 1) continue;  // |---|---:|
    open->rows.push_back(cells_of(line));
  }
  return tables;
}

std::string capture_stdout(const std::function<void()>& f) {
  std::fflush(stdout);
  std::FILE* tmp = std::tmpfile();
  if (!tmp) {
    f();
    return {};
  }
  const int saved = ::dup(STDOUT_FILENO);
  ::dup2(::fileno(tmp), STDOUT_FILENO);
  f();
  std::fflush(stdout);
  ::dup2(saved, STDOUT_FILENO);
  ::close(saved);
  std::string text;
  std::rewind(tmp);
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, tmp)) > 0) text.append(buf, n);
  std::fclose(tmp);
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
  return text;
}

std::string merge_runs(const std::vector<std::string>& reports) {
  if (reports.empty()) return {};
  std::vector<std::vector<MarkdownTable>> all;
  for (const auto& r : reports) all.push_back(parse_tables(r));
  std::string out;
  for (std::size_t t = 0; t < all[0].size(); ++t) {
    const auto& first = all[0][t];
    auto same_shape = [&](const std::vector<MarkdownTable>& run) {
      if (run.size() <= t || run[t].rows.size() != first.rows.size()) return false;
      for (std::size_t r = 0; r < first.rows.size(); ++r)
        if (run[t].rows[r].size() != first.rows[r].size()) return false;
      return true;
    };
    const bool mergeable = std::all_of(all.begin(), all.end(), same_shape);
    out += "|";
    for (const auto& h : first.header) out += " " + h + " |";
    out += "\n|";
    for (std::size_t i = 0; i < first.header.size(); ++i) out += i == 0 ? "---|" : "---:|";
    out += "\n";
    for (std::size_t r = 0; r < first.rows.size(); ++r) {
      out += "|";
      for (std::size_t c = 0; c < first.rows[r].size(); ++c) {
        const std::string& cell = first.rows[r][c];
        std::string shown = cell;
        if (mergeable && c > 0) {
          double lo = 0, hi = 0;
          bool numeric = true;
          std::string unit;
          for (std::size_t k = 0; k < all.size() && numeric; ++k) {
            const auto v = number_of(all[k][t].rows[r][c]);
            if (!v) {
              numeric = false;
              break;
            }
            if (k == 0) {
              lo = hi = v->first;
              unit = v->second;
            }
            lo = std::min(lo, v->first);
            hi = std::max(hi, v->first);
          }
          if (numeric) shown = lo == hi ? cell : format_like(lo, cell) + "-" + format_like(hi, cell) + unit;
        }
        out += " " + shown + " |";
      }
      out += "\n";
    }
    out += "\n";
  }
  return out;
}

std::string write_record(const RecordInfo& info) {
  const char* override_dir = std::getenv("BENCH_RESULTS_DIR");  // tests: somewhere else
  const fs::path dir = override_dir ? fs::path(override_dir) : fs::path(EDRI_SOURCE_DIR) / "benchmarks" / "results";
  std::error_code ec;
  fs::create_directories(dir, ec);
  utsname uts{};
  const std::string kernel = ::uname(&uts) == 0 ? std::string(uts.sysname) + " " + uts.release : "unknown";
  const std::string commit = git("rev-parse --short HEAD");
  nlohmann::json record{
      {"scenario", info.scenario},
      {"command", info.command_line},
      {"date", utc_now("%Y-%m-%dT%H:%M:%SZ")},
      {"commit", commit.empty() ? "unknown" : commit},
      {"dirty", !git(kDirtyCheck).empty()},
      {"machine", {{"cpu", cpu_model()}, {"cores", usable_cpus()}, {"kernel", kernel}, {"memory_kb", memory_kb()}}},
      {"runs", nlohmann::json::array()}};
  for (const auto& report : info.reports) {
    nlohmann::json tables = nlohmann::json::array();
    for (const auto& t : parse_tables(report)) tables.push_back({{"columns", t.header}, {"rows", t.rows}});
    record["runs"].push_back({{"report", report}, {"tables", tables}});
  }
  const fs::path path = dir / (utc_now("%Y%m%dT%H%M%SZ") + "-" + info.scenario + ".json");
  std::ofstream out(path);
  out << record.dump(2) << '\n';
  if (!out) {
    std::fprintf(stderr, "bench: cannot write %s\n", path.c_str());
    return {};
  }
  return path.string();
}

std::string write_chart(const std::string& scenario, const std::string& report,
                        const std::vector<std::string>& columns) {
  if (run_output("command -v gnuplot").empty()) {
    std::fprintf(stderr, "bench: no chart: gnuplot is not installed\n");
    return {};
  }
  const auto tables = parse_tables(report);
  if (tables.empty()) return {};
  const auto& t = tables.front();
  std::size_t value = t.header.size();
  for (const std::string& wanted : columns) {
    for (std::size_t c = 1; c < t.header.size() && value == t.header.size(); ++c)
      if (t.header[c].find(wanted) != std::string::npos) value = c;
    if (value != t.header.size()) break;
  }
  if (value == t.header.size()) {
    std::fprintf(stderr, "bench: no chart for %s: no %s column\n", scenario.c_str(), columns.front().c_str());
    return {};
  }
  // A bar's label: the cells before the first figure (server, c), so that
  // a chart of a later column does not label its bars with the earlier ones.
  std::size_t label_end = value;
  for (std::size_t c = 1; c < value; ++c)
    if (t.header[c].find("req/s") != std::string::npos || t.header[c].find(" ms") != std::string::npos ||
        t.header[c].find("ns per") != std::string::npos) {
      label_end = c;
      break;
    }
  std::error_code ec;
  const fs::path dir = fs::path(EDRI_SOURCE_DIR) / "docs" / "charts";
  fs::create_directories(dir, ec);
  const fs::path data = fs::temp_directory_path() / ("edri-chart-" + std::to_string(::getpid()) + ".dat");
  double smallest = 0;
  double largest = 0;
  {
    std::ofstream d(data);
    for (const auto& row : t.rows) {
      if (row.size() <= value) continue;
      // "min / median / max" cells: the median.
      std::string cell = row[value];
      if (const auto slash = cell.find(" / "); slash != std::string::npos) cell = cell.substr(slash + 3);
      const auto v = number_of(cell.substr(0, cell.find(" / ")));
      if (!v) continue;
      smallest = smallest == 0 ? v->first : std::min(smallest, v->first);
      largest = std::max(largest, v->first);
      std::string label;
      for (std::size_t c = 0; c < label_end; ++c) label += (c ? " " : "") + row[c];
      for (auto& ch : label)
        if (ch == '"') ch = '\'';
      d << '"' << label << "\" " << v->first << '\n';
    }
  }
  // Bars that differ a thousandfold (a tail latency beside one that
  // exploded) are only readable on a log scale.
  const bool log_scale = smallest > 0 && largest / smallest > 100;
  const fs::path svg = dir / (scenario + ".svg");
  const fs::path script = data.string() + ".gp";
  {
    std::ofstream g(script);
    g << "set terminal svg size 900,420 dynamic font 'sans,11'\n"
      << "set output '" << svg.string() << "'\n"
      << "set title \"bench " << scenario << ": " << t.header[value] << " (" << utc_now("%Y-%m-%d") << ")\"\n"
      << "set style fill solid 0.8\nset boxwidth 0.6\nset xtics rotate by -30 nomirror\nset grid ytics\n"
      << (log_scale ? "set logscale y\n" : "set yrange [0:*]\n") << "unset key\nset ylabel \"" << t.header[value]
      << (log_scale ? " (log scale)" : "") << "\"\n"
      << "plot '" << data.string() << "' using 0:2:xtic(1) with boxes lc rgb '#3b6ea5'\n";
  }
  const std::string status = run_output("gnuplot '" + script.string() + "' >/dev/null 2>&1; echo $?");
  const bool ok = status == "0";
  fs::remove(data, ec);
  fs::remove(script, ec);
  if (!ok) {
    fs::remove(svg, ec);  // gnuplot opens its output before it plots
    std::fprintf(stderr, "bench: gnuplot failed to draw %s\n", svg.c_str());
    return {};
  }
  return svg.string();
}

bool append_to_ledger(const RecordInfo& info, const std::string& report) {
  const fs::path path = fs::path(EDRI_SOURCE_DIR) / "BENCHMARKS.md";
  std::ofstream out(path, std::ios::app);
  const std::string commit = git("rev-parse --short HEAD");
  const bool dirty = !git(kDirtyCheck).empty();
  out << "\n## " << utc_now("%Y-%m-%d") << " — `bench " << info.scenario << "` (recorded by bench --record)\n\n"
      << "- commit `" << (commit.empty() ? "unknown" : commit) << "`" << (dirty ? " with uncommitted changes" : "")
      << "; " << cpu_model() << ", " << usable_cpus() << " CPUs; `" << info.command_line << "`"
      << (info.reports.size() > 1 ? "; ranges over " + std::to_string(info.reports.size()) + " runs" : "") << "\n\n"
      << report;
  if (!out) {
    std::fprintf(stderr, "bench: cannot append to %s\n", path.c_str());
    return false;
  }
  return true;
}

}  // namespace edri::bench
