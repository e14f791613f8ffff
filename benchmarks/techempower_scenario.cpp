// techempower: the TechEmpower Framework Benchmarks' seven test types
// (issue 37; benchmarks/techempower/README.md has the rules and paths) on
// a Postgres cluster the scenario starts for itself and loads
// techempower/schema.sql into. Every server is first checked by
// techempower/verify.py, then measured at each concurrency:
// - edri with build/plugins/techempower.so, when that plugin is built;
// - the FastAPI reference (techempower/fastapi_app.py: asyncpg, Jinja2,
//   uvicorn with uvloop and httptools, one worker);
// - nginx answering the same bytes for JSON and plaintext, what a server
//   that does nothing else can reach;
// - pgbench running /db's query with prepared statements, what Postgres
//   itself answers on this machine: the single query test's ceiling.
// Plaintext is sent 16 requests pipelined on each connection, as
// TechEmpower sends it, by h2load (the load generator sends one request
// per connection at a time).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "h2load_runner.hpp"
#include "report.hpp"
#include "scenario_support.hpp"
#include "scenarios.hpp"
#include "server_process.hpp"
#include "support/postgres_server.hpp"
#include "support/processes.hpp"

namespace edri::bench {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// A test type: verify.py's name for it and what the load asks. The query
// tests at TechEmpower's heaviest counts: 20 queries, 20 updates, 100
// cached rows per request.
struct TestType {
  std::string name;
  std::string target;
  bool pipelined = false;
};
const std::vector<TestType> kTestTypes{
    {"json", "/json"},
    {"plaintext", "/plaintext", true},
    {"db", "/db"},
    {"query", "/queries?queries=20"},
    {"fortune", "/fortunes"},
    {"update", "/updates?queries=20"},
    {"cached_query", "/cached-queries?count=100"},
};
const std::vector<std::string> kAllTests{"json", "plaintext", "db", "query", "cached_query", "fortune", "update"};
const std::vector<int> kConcurrencies{16, 64, 256};
constexpr int kPipelineDepth = 16;

const std::string kEdri = "edri";
const std::string kFastApi = "FastAPI";
const std::string kNginx = "nginx";
const std::string kPgbench = "pgbench";
constexpr const char* kPython = "/usr/bin/python3";
constexpr const char* kPgbenchBinary = "/usr/lib/postgresql/15/bin/pgbench";
// Every server's pool (TFB_POOL_SIZE): the database shares the machine, so
// a pool of TechEmpower's size (up to 160 connections per process) would
// only add backends competing for the same cores.
constexpr int kPoolSize = 16;
// pgbench's 256 clients, the pools and the verifier's own connections.
constexpr int kMaxConnections = 300;
// verify.py's whole run, its update checks included.
constexpr double kVerifyTimeoutSeconds = 180;

fs::path suite_dir() { return fs::path(EDRI_SOURCE_DIR) / "benchmarks" / "techempower"; }
fs::path edri_plugin() { return fs::path(EDRI_BINARY_DIR) / "plugins" / "techempower.so"; }

std::string label(const std::string& server, const TestType& test) { return server + " " + test.name; }

std::string format(const char* fmt, double value) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, value);
  return buf;
}

// What a tool that failed said, on one line for a note.
std::string one_line(std::string text) {
  std::replace(text.begin(), text.end(), '\n', ' ');
  return text.substr(0, 240);
}

// A server measured here, and the test types it answers.
struct Contender {
  ServerKind kind;
  std::string name;
  std::vector<std::string> tests;
};

// What verify.py said of one server: per test type "pass", "pass, N
// warnings", "FAIL" or why it did not run.
struct Verification {
  std::map<std::string, std::string> cells;
  std::string missing;  // set when it did not run at all
};

struct Findings {
  std::vector<Row> rows;
  std::map<std::string, Verification> verified;  // by server
  std::vector<std::string> notes;
};

// ---- the database

std::unique_ptr<test::PostgresServer> start_database(std::vector<std::string>& notes) {
  std::fprintf(stderr, "starting Postgres and loading techempower/schema.sql ...\n");
  try {
    auto pg = std::make_unique<test::PostgresServer>(kMaxConnections);
    pg->execute(test::read_file((suite_dir() / "schema.sql").string()));
    return pg;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "Postgres: %s\n", e.what());
    notes.push_back(std::string("Postgres did not start, nothing was measured: ") + e.what());
    return nullptr;
  }
}

// ---- verify.py

// The cell of one test type in verify.py's JSON report.
std::string verdict_cell(const nlohmann::json& test) {
  const std::string status = test.value("status", "?");
  if (status == "fail") return "FAIL";
  const std::size_t warnings = test.value("warnings", nlohmann::json::array()).size();
  if (status != "pass" || warnings == 0) return status;
  return "pass, " + std::to_string(warnings) + (warnings == 1 ? " warning" : " warnings");
}

// Runs verify.py to its end, its output (stdout and stderr) into `output`;
// false when it had to be stopped.
bool run_verifier(const ScenarioContext& context, const std::vector<std::string>& args, std::string& output) {
  const ProcessSpec spec{.program = kPython,
                         .args = args,
                         .env = {{"PYTHONDONTWRITEBYTECODE", "1"}},
                         .working_dir = {},
                         .cpus = {},
                         .stdout_to = OutputTo::kPipe,
                         .stderr_to = context.options.verbose ? OutputTo::kStderr : OutputTo::kDevNull};
  std::string error;
  auto process = ServerProcess::start(spec, error);
  if (!process) {
    output = error;
    return false;
  }
  const auto deadline = Clock::now() + std::chrono::duration<double>(kVerifyTimeoutSeconds);
  for (;;) {
    const double left = std::chrono::duration<double>(deadline - Clock::now()).count();
    std::string line;
    const auto status = process->read_stdout_line(left, context.stop_requested, line);
    if (status == ServerProcess::LineStatus::kLine) {
      output += line + "\n";
      continue;
    }
    if (status == ServerProcess::LineStatus::kClosed) return process->wait_for_exit(5.0);
    output += "verify.py did not finish in time\n";
    return false;  // the process is stopped when it goes
  }
}

// verify.py against one running server; its findings go to the notes.
Verification verify_server(const ScenarioContext& context, const Contender& contender, std::uint16_t port,
                           const std::string& database_url, std::vector<std::string>& notes) {
  Verification v;
  std::string error;
  const auto dir = TempDir::create("edri-bench-tfb", error);
  if (!dir) {
    v.missing = "no temporary folder: " + error;
    return v;
  }
  std::string only;
  for (const auto& t : contender.tests) only += (only.empty() ? "" : ",") + t;
  const std::string report = (dir->path() / "verify.json").string();
  std::fprintf(stderr, "verifying %s (%s) ...\n", contender.name.c_str(), only.c_str());
  std::string output;
  const bool finished = run_verifier(context,
                                     {(suite_dir() / "verify.py").string(), "http://127.0.0.1:" + std::to_string(port),
                                      "--database-url", database_url, "--only", only, "--json-report", report},
                                     output);
  const nlohmann::json parsed = nlohmann::json::parse(test::read_file(report), nullptr, false);
  if (!finished || !parsed.is_object()) {
    v.missing = context.interrupted() ? "interrupted" : "verify.py did not run";
    std::fprintf(stderr, "%s", output.c_str());
    notes.push_back(contender.name + ": verify.py gave no report: " + one_line(output));
    return v;
  }
  const nlohmann::json tests = parsed.value("tests", nlohmann::json::object());
  for (const auto& t : contender.tests) {
    const nlohmann::json test = tests.value(t, nlohmann::json::object());
    v.cells[t] = verdict_cell(test);
    for (const auto& failure : test.value("failures", nlohmann::json::array()))
      notes.push_back(contender.name + " " + t +
                      " failed verification (measured anyway): " + failure.get<std::string>());
  }
  if (!parsed.value("passed", false) || context.options.verbose) std::fprintf(stderr, "%s", output.c_str());
  return v;
}

// ---- loads

// Plaintext: 16 requests pipelined on each connection, through h2load.
bool measure_pipelined(const ScenarioContext& context, const std::string& row_label, std::uint16_t port,
                       const TestType& test, int c, std::vector<Row>& rows, std::vector<std::string>& notes) {
  H2loadOptions load{.port = port,
                     .path = test.target,
                     .concurrency = c,
                     .warmup_seconds = context.options.warmup_seconds,
                     .duration_seconds = context.options.duration_seconds,
                     .cpu = context.options.client_cpu,
                     .http1 = true,
                     .streams = kPipelineDepth,
                     // Half the machine for the load, as the other half serves.
                     .threads = context.options.client_cpu ? 1 : std::max(1, usable_cpus() / 2),
                     .verbose = context.options.verbose,
                     .stop_requested = context.stop_requested};
  std::fprintf(stderr, "running %s c=%d (h2load --h1 -m %d) ...\n", row_label.c_str(), c, kPipelineDepth);
  const H2loadResult result = run_h2load(load);
  if (result.outcome == H2loadResult::Outcome::kInterrupted) return false;
  if (result.outcome != H2loadResult::Outcome::kDone) {
    rows.push_back(Row{row_label, c, std::nullopt, "h2load failed"});
    notes.push_back(row_label + " c=" + std::to_string(c) + ": " + result.message);
    return true;
  }
  const RunSummary summary{
      .requests_per_second = result.requests_per_second, .errors = result.errors, .non_2xx = result.non_2xx};
  std::fprintf(stderr, "  %.0f req/s\n", summary.requests_per_second);
  add_measured_row(row_label, c, summary, {}, rows, notes);
  return true;
}

bool measure_test(const ScenarioContext& context, const std::string& server, std::uint16_t port, const TestType& test,
                  const std::vector<int>& concurrencies, std::vector<Row>& rows, std::vector<std::string>& notes) {
  for (int c : concurrencies) {
    if (test.pipelined) {
      if (!measure_pipelined(context, label(server, test), port, test, c, rows, notes)) return false;
      continue;
    }
    LoadOptions load = load_options(context, port, c);
    load.request.target = test.target;
    if (!measure_http_row(context, label(server, test), load, rows, notes)) return false;
  }
  return true;
}

// ---- the servers

ServerSettings contender_settings(const ScenarioContext& context, const Contender& contender,
                                  const std::string& database_url) {
  EnvironmentVariables env{{"TFB_DATABASE_URL", database_url}, {"TFB_POOL_SIZE", std::to_string(kPoolSize)}};
  // The servers' CPUs: all of them on a small machine, shared with the
  // database and the load, as in the other scenarios.
  const int cpus = static_cast<int>(context.options.server_cpu_list.empty() ? allowed_cpus().size()
                                                                            : context.options.server_cpu_list.size());
  if (contender.kind == ServerKind::kEdri) {
    // edri's pool is a setting of the server (per database, per manager)
    // and pipelines: a connection per server CPU keeps as many Postgres
    // backends busy as there are cores (2 against 16 on 2 vCPUs: /queries
    // 4.4k against 2.9k req/s, /fortunes 14.3k against 8.1k).
    env.emplace_back("EDRI_PLUGINS", edri_plugin().string());
    env.emplace_back("EDRI_DATABASE_POOL", std::to_string(std::max(cpus, 2)));
    env.emplace_back("EDRI_DATABASE_QUEUE", "65536");
    env.emplace_back("EDRI_TEMPLATE_PATH", (edri_plugin().parent_path() / "techempower_templates").string());
  }
  ServerSettings settings = server_settings(context, std::move(env));
  // FastAPI as TechEmpower runs it, one worker process per CPU; nginx the same.
  settings.workers = std::max(cpus, 1);
  settings.ready_path = "/json";
  return settings;
}

void add_unavailable(const Contender& contender, const std::vector<int>& concurrencies, const std::string& why,
                     Findings& out) {
  std::vector<std::string> labels;
  for (const auto& test : kTestTypes)
    if (std::find(contender.tests.begin(), contender.tests.end(), test.name) != contender.tests.end())
      labels.push_back(label(contender.name, test));
  add_unavailable_rows(labels, concurrencies, why, out.rows);
  out.verified[contender.name].missing = why;
}

// One server: started, verified, measured at every test type it answers,
// stopped.
ScenarioOutcome measure_contender(const ScenarioContext& context, const Contender& contender,
                                  const std::string& database_url, const std::vector<int>& concurrencies,
                                  Findings& out) {
  StartedServer server = start_server_reporting(contender.kind, contender.name,
                                                contender_settings(context, contender, database_url), out.notes);
  if (server.outcome == StartedServer::Outcome::kInterrupted) return ScenarioOutcome::kInterrupted;
  if (server.outcome != StartedServer::Outcome::kRunning) {
    add_unavailable(contender, concurrencies, unavailable_cell(server), out);
    return server.outcome == StartedServer::Outcome::kNotInstalled ? ScenarioOutcome::kDone
                                                                   : ScenarioOutcome::kServerFailed;
  }
  out.verified[contender.name] = verify_server(context, contender, server.port, database_url, out.notes);
  if (context.interrupted()) return ScenarioOutcome::kInterrupted;
  for (const auto& test : kTestTypes) {
    if (std::find(contender.tests.begin(), contender.tests.end(), test.name) == contender.tests.end()) continue;
    if (!measure_test(context, contender.name, server.port, test, concurrencies, out.rows, out.notes))
      return ScenarioOutcome::kInterrupted;
  }
  note_if_exited(server, contender.name, concurrencies.back(), out.notes);
  std::fprintf(stderr, "stopping %s ...\n", contender.name.c_str());
  return ScenarioOutcome::kDone;
}

// The servers to measure. edri's plugin is built by whoever writes it:
// without it edri's rows say so and the references are measured alone.
std::vector<Contender> contenders(const std::vector<int>& concurrencies, Findings& out) {
  std::vector<Contender> all{{ServerKind::kEdri, kEdri, kAllTests},
                             {ServerKind::kTechEmpowerFastApi, kFastApi, kAllTests},
                             {ServerKind::kNginx, kNginx, {"json", "plaintext"}}};
  if (fs::exists(edri_plugin())) return all;
  add_unavailable(all.front(), concurrencies, "not built", out);
  out.notes.push_back("edri: " + edri_plugin().string() + " is not built; its rows are left out");
  return {all.begin() + 1, all.end()};
}

// ---- pgbench

// "tps = 12345.678901 (without initial connection time)"; nullopt when
// pgbench printed no such line.
std::optional<double> pgbench_tps(const std::string& output) {
  const std::size_t at = output.find("\ntps = ");
  if (at == std::string::npos) return std::nullopt;
  return std::strtod(output.c_str() + at + 7, nullptr);
}

// The failed transactions pgbench counted ("number of failed
// transactions: N (...)").
std::uint64_t pgbench_failures(const std::string& output) {
  const std::string key = "number of failed transactions: ";
  const std::size_t at = output.find(key);
  return at == std::string::npos ? 0 : std::strtoull(output.c_str() + at + key.size(), nullptr, 10);
}

// pgbench's -T in whole seconds. Its clock starts before its clients have
// connected, which took 2.1 s for 256 of them on the 2-vCPU VM, and its
// tps leaves that time out: -T is the warm-up and the duration rounded up,
// plus 10 ms per client for them to connect.
int pgbench_seconds(const ScenarioContext& context, int c) {
  const double seconds = context.options.warmup_seconds + context.options.duration_seconds + 0.01 * c;
  return static_cast<int>(std::ceil(seconds));
}

// pgbench -M prepared with /db's query at `c` clients, over TCP as the
// servers connect; its row.
bool measure_pgbench_cell(const ScenarioContext& context, const std::string& script, const std::string& database_url,
                          int c, std::vector<Row>& rows, std::vector<std::string>& notes) {
  const int seconds = pgbench_seconds(context, c);
  const int threads = std::clamp(usable_cpus() / 2, 1, c);
  const std::string row_label = kPgbench + " db";
  std::fprintf(stderr, "running %s c=%d (-j %d -T %d) ...\n", row_label.c_str(), c, threads, seconds);
  int status = 0;
  std::string output;
  with_client_pin(context, [&] {
    output = run_output(std::string(kPgbenchBinary) + " -n -M prepared -c " + std::to_string(c) + " -j " +
                            std::to_string(threads) + " -T " + std::to_string(seconds) + " -f " + script + " '" +
                            database_url + "' 2>&1",
                        &status);
  });
  if (context.interrupted()) return false;
  const auto tps = pgbench_tps("\n" + output);
  if (!tps) {
    rows.push_back(Row{row_label, c, std::nullopt, "pgbench failed"});
    notes.push_back(row_label + " c=" + std::to_string(c) + ": no tps line: " + one_line(output));
    return true;
  }
  std::fprintf(stderr, "  %.0f transactions/s\n", *tps);
  add_measured_row(row_label, c, RunSummary{.requests_per_second = *tps, .errors = pgbench_failures(output)}, {}, rows,
                   notes);
  return true;
}

bool measure_pgbench(const ScenarioContext& context, const std::string& database_url,
                     const std::vector<int>& concurrencies, Findings& out) {
  const TestType& db =
      *std::find_if(kTestTypes.begin(), kTestTypes.end(), [](const TestType& t) { return t.name == "db"; });
  if (!fs::exists(kPgbenchBinary)) {
    add_unavailable_rows({label(kPgbench, db)}, concurrencies, "not installed", out.rows);
    return true;
  }
  std::string error;
  const auto dir = TempDir::create("edri-bench-pgbench", error);
  if (!dir) {
    add_unavailable_rows({label(kPgbench, db)}, concurrencies, "no temporary folder", out.rows);
    return true;
  }
  const std::string script = (dir->path() / "db.sql").string();
  std::ofstream(script) << "\\set id random(1, 10000)\nSELECT id, randomnumber FROM world WHERE id = :id;\n";
  for (int c : concurrencies)
    if (!measure_pgbench_cell(context, script, database_url, c, out.rows, out.notes)) return false;
  return true;
}

// ---- the report

const Row* row_of(const std::vector<Row>& rows, const std::string& server, const TestType& test, int c) {
  return find_row(rows, label(server, test), c);
}

// A rate cell: the figure, the reason it was not measured, or "-" where
// the server does not run this test type.
std::string rate_cell(const Row* row) {
  if (row == nullptr) return "-";
  return row->summary ? format("%.0f", row->summary->requests_per_second) : row->unavailable;
}

std::string ratio_cell(const Row* numerator, const Row* denominator) {
  if (!numerator || !denominator || !numerator->summary || !denominator->summary ||
      denominator->summary->requests_per_second <= 0)
    return "-";
  return format("%.2fx", numerator->summary->requests_per_second / denominator->summary->requests_per_second);
}

std::string p99_cell(const Row* row, const TestType& test) {
  if (row == nullptr || test.pipelined) return "-";  // h2load gives no percentiles
  return row->summary ? format("%.2f", row->summary->p99_ms) : row->unavailable;
}

std::string test_heading(const TestType& test) {
  return test.pipelined ? test.target + " (" + std::to_string(kPipelineDepth) + " pipelined)" : test.target;
}

void print_rate_table(const std::vector<Row>& rows, const std::vector<int>& concurrencies) {
  std::printf(
      "| test | c | edri req/s | FastAPI req/s | nginx req/s | pgbench tps | edri / FastAPI | edri / nginx | "
      "edri / pgbench | FastAPI / nginx | FastAPI / pgbench |\n"
      "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (const auto& test : kTestTypes)
    for (int c : concurrencies) {
      const Row* edri = row_of(rows, kEdri, test, c);
      const Row* fastapi = row_of(rows, kFastApi, test, c);
      const Row* nginx = row_of(rows, kNginx, test, c);
      const Row* pgbench = row_of(rows, kPgbench, test, c);
      std::printf("| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", test_heading(test).c_str(), c,
                  rate_cell(edri).c_str(), rate_cell(fastapi).c_str(), rate_cell(nginx).c_str(),
                  rate_cell(pgbench).c_str(), ratio_cell(edri, fastapi).c_str(), ratio_cell(edri, nginx).c_str(),
                  ratio_cell(edri, pgbench).c_str(), ratio_cell(fastapi, nginx).c_str(),
                  ratio_cell(fastapi, pgbench).c_str());
    }
}

void print_latency_table(const std::vector<Row>& rows, const std::vector<int>& concurrencies) {
  std::printf("| test | c | edri p99 ms | FastAPI p99 ms | nginx p99 ms |\n|---|---:|---:|---:|---:|\n");
  for (const auto& test : kTestTypes) {
    if (test.pipelined) continue;
    for (int c : concurrencies)
      std::printf("| %s | %d | %s | %s | %s |\n", test.target.c_str(), c,
                  p99_cell(row_of(rows, kEdri, test, c), test).c_str(),
                  p99_cell(row_of(rows, kFastApi, test, c), test).c_str(),
                  p99_cell(row_of(rows, kNginx, test, c), test).c_str());
  }
}

void print_verification_table(const std::map<std::string, Verification>& verified) {
  std::printf("| verify.py | json | plaintext | db | query | cached_query | fortune | update |\n");
  std::printf("|---|---|---|---|---|---|---|---|\n");
  for (const std::string& server : {kEdri, kFastApi, kNginx}) {
    const auto it = verified.find(server);
    std::printf("| %s |", server.c_str());
    for (const std::string& test : kAllTests) {
      std::string cell = "-";
      if (it == verified.end()) {
        cell = "not run";
      } else if (!it->second.missing.empty()) {
        cell = it->second.missing;
      } else if (const auto c = it->second.cells.find(test); c != it->second.cells.end()) {
        cell = c->second;
      }
      std::printf(" %s |", cell.c_str());
    }
    std::printf("\n");
  }
}

void print_report(const ScenarioContext& context, const Findings& found, const std::vector<int>& concurrencies) {
  print_report_header(context,
                      "keep-alive GETs of TechEmpower's test types (/queries and /updates at 20 rows, "
                      "/cached-queries at 100) on a Postgres 15 cluster of the run's own; plaintext " +
                          std::to_string(kPipelineDepth) +
                          " requests pipelined per connection (h2load --h1); pgbench -M prepared runs /db's query");
  print_rate_table(found.rows, concurrencies);
  std::printf("\n");
  print_latency_table(found.rows, concurrencies);
  std::printf("\n");
  print_verification_table(found.verified);
  std::vector<std::string> notes = found.notes;
  notes.push_back(
      "every server and pgbench share one cluster, durability off (fsync, synchronous_commit); its "
      "World table is changed by /updates as the run goes, as in TechEmpower's runs");
  notes.push_back(
      "pools: edri EDRI_DATABASE_POOL = the servers' CPUs (pipelined), EDRI_DATABASE_QUEUE=65536; FastAPI "
      "one uvicorn worker per CPU, TFB_POOL_SIZE=" +
      std::to_string(kPoolSize) +
      " connections per worker; nginx one worker per CPU; pgbench one connection per client, -j half the "
      "CPUs");
  print_notes(notes);
}

}  // namespace

ScenarioOutcome run_techempower_scenario(const ScenarioContext& context) {
  const std::vector<int>& concurrencies = context.options.concurrencies_or(kConcurrencies);
  Findings found;
  const auto database = start_database(found.notes);
  if (!database) {
    print_report(context, found, concurrencies);
    return ScenarioOutcome::kServerFailed;
  }
  ScenarioOutcome worst = ScenarioOutcome::kDone;
  for (const Contender& contender : contenders(concurrencies, found)) {
    const ScenarioOutcome outcome = measure_contender(context, contender, database->url(), concurrencies, found);
    if (outcome == ScenarioOutcome::kInterrupted || context.interrupted()) return ScenarioOutcome::kInterrupted;
    if (outcome == ScenarioOutcome::kServerFailed) worst = outcome;
  }
  if (!measure_pgbench(context, database->url(), concurrencies, found)) return ScenarioOutcome::kInterrupted;
  std::fprintf(stderr, "stopping Postgres ...\n");
  print_report(context, found, concurrencies);
  return worst;
}

}  // namespace edri::bench
