// serialization and inprocess: bench_micro's Google Benchmark figures, run
// and printed as tables.
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "report.hpp"
#include "scenario_support.hpp"
#include "scenarios.hpp"
#include "server_process.hpp"

namespace edri::bench {
namespace {

struct MicroResult {
  std::string name;
  double ns = 0;                // per operation
  double bytes_per_second = 0;  // 0: not a throughput benchmark
};

// Runs bench_micro with `filter`; nullopt-like empty result and a note when
// it cannot.
std::vector<MicroResult> run_micro(const ScenarioContext& context, const std::string& filter,
                                   std::vector<std::string>& notes) {
  const auto binary = std::filesystem::path(EDRI_BINARY_DIR) / "bin" / "bench_micro";
  if (!std::filesystem::exists(binary)) {
    notes.push_back(binary.string() + " is not built");
    return {};
  }
  // Google Benchmark's own minimum time per benchmark: --duration spread
  // over the benchmarks, 0.05 s each for --quick.
  const double min_time = context.options.quick ? 0.05 : std::max(0.2, context.options.duration_seconds / 5.0);
  // Appended piece by piece: GCC 12 sees a false -Wrestrict in a chain of +.
  std::string command = "'";
  command.append(binary.string())
      .append("' --benchmark_format=json --benchmark_filter='")
      .append(filter)
      .append("' --benchmark_min_time=")
      .append(std::to_string(min_time))
      .append(" 2>/dev/null");
  std::fprintf(stderr, "running bench_micro %s\n", filter.c_str());
  int status = 0;
  const std::string out = run_output(command, &status);
  if (status != 0) notes.push_back("bench_micro failed");
  std::vector<MicroResult> results;
  const auto json = nlohmann::json::parse(out, nullptr, false);
  if (json.is_discarded() || !json.contains("benchmarks")) {
    notes.push_back("bench_micro printed no results");
    return results;
  }
  for (const auto& b : json["benchmarks"]) {
    const std::string unit = b.value("time_unit", "ns");
    const double scale = unit == "us" ? 1e3 : unit == "ms" ? 1e6 : unit == "s" ? 1e9 : 1.0;
    results.push_back(
        MicroResult{b.value("name", "?"), b.value("cpu_time", 0.0) * scale, b.value("bytes_per_second", 0.0)});
  }
  return results;
}

void print_micro_table(const std::vector<MicroResult>& results, bool throughput) {
  if (throughput) {
    std::printf("| benchmark | ns per operation | MB/s of body |\n|---|---:|---:|\n");
    for (const auto& r : results) std::printf("| %s | %.1f | %.0f |\n", r.name.c_str(), r.ns, r.bytes_per_second / 1e6);
  } else {
    std::printf("| benchmark | ns per operation | operations per second |\n|---|---:|---:|\n");
    for (const auto& r : results)
      std::printf("| %s | %.1f | %.0f |\n", r.name.c_str(), r.ns, r.ns > 0 ? 1e9 / r.ns : 0);
  }
}

}  // namespace

ScenarioOutcome run_serialization_scenario(const ScenarioContext& context) {
  std::vector<std::string> notes;
  const auto results = run_micro(context, "^BM_Envelope", notes);
  if (context.interrupted()) return ScenarioOutcome::kInterrupted;
  print_report_header(context,
                      "envelope encode and decode of a request (two path parameters, a query, a body of N bytes), "
                      "in one thread, no channel: Google Benchmark CPU time. Decoding reads no body byte (the "
                      "sections are views), so its MB/s only says that it does not copy",
                      false);
  print_micro_table(results, true);
  print_notes(notes);
  return results.empty() ? ScenarioOutcome::kServerFailed : ScenarioOutcome::kDone;
}

ScenarioOutcome run_inprocess_scenario(const ScenarioContext& context) {
  std::vector<std::string> notes;
  const auto results =
      run_micro(context, "^BM_(RouteLookup300|ParamBinding|JsonResponse|MiddlewareLayer|ManagerDispatch)$", notes);
  if (context.interrupted()) return ScenarioOutcome::kInterrupted;
  print_report_header(context,
                      "what edri costs per request without sockets or processes: route lookup in a 300-route table, "
                      "binding a JSON body of three fields and a query field, a five-member JSON answer, one "
                      "middleware layer (request and response side), the manager's decode-bind-call-encode of a "
                      "handler; Google Benchmark CPU time",
                      false);
  print_micro_table(results, false);
  print_notes(notes);
  return results.empty() ? ScenarioOutcome::kServerFailed : ScenarioOutcome::kDone;
}

}  // namespace edri::bench
