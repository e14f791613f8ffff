#pragma once
// The ledger: what a scenario printed, kept. Every run's report is parsed
// back into its Markdown tables and written as a JSON record under
// benchmarks/results/ (scenario, command, date, commit, dirty flag,
// machine, tables); --record also appends the report to BENCHMARKS.md,
// never editing what is there; --runs N merges N reports into one whose
// numeric cells are "min-max".
#include <functional>
#include <string>
#include <vector>

namespace edri::bench {

struct MarkdownTable {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
};

// The tables of a report: runs of lines that start with '|', the second
// line of each being the alignment row.
std::vector<MarkdownTable> parse_tables(const std::string& report);

// Runs `f` with stdout going to a buffer as well as to the terminal; what
// it printed.
std::string capture_stdout(const std::function<void()>& f);

// The reports of N runs of one scenario as one: each table of the first,
// with every cell that is a number in all runs shown as "min-max" (one
// value when they agree). Tables whose shape differs across runs are
// shown from the first run.
std::string merge_runs(const std::vector<std::string>& reports);

struct RecordInfo {
  std::string scenario;
  std::string command_line;
  std::vector<std::string> reports;  // one per run
};

// Writes benchmarks/results/<UTC date>-<scenario>.json (or under
// $BENCH_RESULTS_DIR); its path, or an empty string (with the reason on
// stderr).
std::string write_record(const RecordInfo& info);

// Appends the report to BENCHMARKS.md under a dated heading; false (with
// the reason on stderr) when it cannot.
bool append_to_ledger(const RecordInfo& info, const std::string& report);

// Draws the first table of `report` as docs/charts/<name>.svg with
// gnuplot: a bar per row, its label the cells before the first column whose
// heading contains one of `columns` (tried in order), its height that
// column (" ms" with its space: "streams" is no time). The path, or an empty string (gnuplot missing, or no such
// column: said on stderr).
std::string write_chart(const std::string& name, const std::string& report,
                        const std::vector<std::string>& columns = {"req/s", "ns per", " ms"});

}  // namespace edri::bench
