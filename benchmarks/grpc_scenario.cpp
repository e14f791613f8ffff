// grpc: upstream EDRI's transport comparison on one trivial round trip, the
// bench app's noop: edri over WebSocket, REST (HTTP/1.1 and HTTP/2), gRPC
// unary and bidi, beside grpcio (upstream's own gRPC stack) and nginx's
// HTTP/2, at each concurrency; then the ratios that have targets.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "grpc_load.hpp"
#include "h2load_runner.hpp"
#include "report.hpp"
#include "scenario_support.hpp"
#include "scenarios.hpp"

namespace edri::bench {
namespace {

const std::string kWebSocket = "edri WebSocket noop";
const std::string kRestHttp1 = "edri REST GET /noop, HTTP/1.1";
const std::string kGrpcUnary = "edri gRPC Call (unary)";
const std::string kGrpcBidi = "edri gRPC Connect (bidi)";
const std::string kGrpcioUnary = "grpcio Call (unary)";
const std::string kGrpcioBidi = "grpcio Connect (bidi)";
const std::string kRestHttp2 = "edri REST GET /noop, HTTP/2";
const std::string kNginxHttp2 = "nginx GET /noop, HTTP/2";

// The table's lines, in order, and what their rate counts.
const std::vector<RateLine> kRateLines{
    {kWebSocket, "msgs/s"},    {kRestHttp1, "req/s"},   {kGrpcUnary, "calls/s"}, {kGrpcBidi, "msgs/s"},
    {kGrpcioUnary, "calls/s"}, {kGrpcioBidi, "msgs/s"}, {kRestHttp2, "req/s"},   {kNginxHttp2, "req/s"},
};

// The comparisons that have targets (shown, not asserted).
const std::vector<RatioLine> kRatioLines{
    {"edri gRPC unary / edri REST HTTP/1.1", kGrpcUnary, kRestHttp1, "≥ 0.8x at c=32"},
    {"edri gRPC bidi / edri WebSocket", kGrpcBidi, kWebSocket, "≥ 0.9x"},
    {"edri gRPC unary / grpcio unary", kGrpcUnary, kGrpcioUnary, "≥ 5x at c=32"},
    {"edri gRPC bidi / grpcio bidi", kGrpcBidi, kGrpcioBidi, "-"},
    {"edri REST HTTP/2 / nginx HTTP/2", kRestHttp2, kNginxHttp2, "≥ 0.8x at c=32"},
};

// One gRPC run; false when interrupted.
bool measure_grpc(const ScenarioContext& context, const std::string& label, std::uint16_t port, int c, GrpcMode mode,
                  std::vector<Row>& rows, std::vector<std::string>& notes) {
  const GrpcLoadOptions load{.host = "127.0.0.1",
                             .port = port,
                             .mode = mode,
                             .concurrency = c,
                             .rate = context.options.rate,
                             .warmup_seconds = context.options.warmup_seconds,
                             .duration_seconds = context.options.duration_seconds,
                             .stop_requested = context.stop_requested};
  std::fprintf(stderr, "running %s c=%d ...\n", label.c_str(), c);
  LoadResult result;
  with_client_pin(context, [&] { result = run_grpc_load(load); });
  if (result.interrupted) return false;
  const RunSummary summary = summarize(result);
  std::fprintf(stderr, "%s\n", progress_line(label, c, summary).c_str());
  if (!result.first_error.empty()) std::fprintf(stderr, "  first error: %s\n", result.first_error.c_str());
  add_measured_row(label, c, summary, result.first_error, rows, notes);
  return true;
}

// One h2load run of GET /noop; false when interrupted.
bool measure_h2load(const ScenarioContext& context, const std::string& label, std::uint16_t port, int c,
                    std::vector<Row>& rows, std::vector<std::string>& notes) {
  const H2loadOptions load{.port = port,
                           .path = "/noop",
                           .concurrency = c,
                           .warmup_seconds = context.options.warmup_seconds,
                           .duration_seconds = context.options.duration_seconds,
                           .rate = context.options.rate,
                           .cpu = context.options.client_cpu,
                           .verbose = context.options.verbose,
                           .stop_requested = context.stop_requested};
  std::fprintf(stderr, "running %s c=%d (h2load) ...\n", label.c_str(), c);
  const H2loadResult result = run_h2load(load);
  switch (result.outcome) {
    case H2loadResult::Outcome::kInterrupted: return false;
    case H2loadResult::Outcome::kDone: break;
    case H2loadResult::Outcome::kNotInstalled:
    case H2loadResult::Outcome::kFailed: {
      const std::string cell = result.outcome == H2loadResult::Outcome::kNotInstalled ? "not installed" : "failed";
      std::fprintf(stderr, "  %s c=%d: %s: %s\n", label.c_str(), c, cell.c_str(), result.message.c_str());
      notes.push_back(label + " c=" + std::to_string(c) + ": " + cell + ": " + result.message);
      rows.push_back(Row{label, c, std::nullopt, cell});
      return true;
    }
  }
  RunSummary summary;
  summary.requests_per_second = result.requests_per_second;
  summary.errors = result.errors;
  summary.non_2xx = result.non_2xx;
  std::fprintf(stderr, "  %s c=%d: %.0f req/s, errors %llu, non-2xx %llu\n", label.c_str(), c,
               result.requests_per_second, static_cast<unsigned long long>(result.errors),
               static_cast<unsigned long long>(result.non_2xx));
  add_measured_row(label, c, summary, {}, rows, notes);
  return true;
}

// edri's five transports at one concurrency, close together in time so
// that their ratios compare like with like; false when interrupted.
bool measure_edri_at(const ScenarioContext& context, std::uint16_t port, int c, std::vector<Row>& rows,
                     std::vector<std::string>& notes) {
  LoadOptions websocket = load_options(context, port, c);
  websocket.request.body = R"({"command":"noop"})";
  websocket.websocket_path = "/ws";
  websocket.expected_body = R"({"command":"noop","response":{"ok":true}})";
  LoadOptions rest = load_options(context, port, c);
  rest.expected_body = R"({"ok":true})";
  if (!measure_http_row(context, kWebSocket, websocket, rows, notes)) return false;
  if (!measure_http_row(context, kRestHttp1, rest, rows, notes)) return false;
  if (!measure_grpc(context, kGrpcUnary, port, c, GrpcMode::kUnary, rows, notes)) return false;
  if (!measure_grpc(context, kGrpcBidi, port, c, GrpcMode::kBidi, rows, notes)) return false;
  if (!h2load_installed()) {
    rows.push_back(Row{kRestHttp2, c, std::nullopt, "not installed"});
    return true;
  }
  return measure_h2load(context, kRestHttp2, port, c, rows, notes);
}

ScenarioOutcome measure_edri(const ScenarioContext& context, const std::vector<int>& concurrencies,
                             std::vector<Row>& rows, std::vector<std::string>& notes) {
  const std::string name(display_name(ServerKind::kEdri));
  StartedServer server = start_server_reporting(ServerKind::kEdri, name, server_settings(context), notes);
  if (server.outcome == StartedServer::Outcome::kInterrupted) return ScenarioOutcome::kInterrupted;
  if (server.outcome != StartedServer::Outcome::kRunning) {
    add_unavailable_rows({kWebSocket, kRestHttp1, kGrpcUnary, kGrpcBidi, kRestHttp2}, concurrencies,
                         unavailable_cell(server), rows);
    return ScenarioOutcome::kServerFailed;
  }
  for (int c : concurrencies) {
    if (!measure_edri_at(context, server.port, c, rows, notes)) return ScenarioOutcome::kInterrupted;
    note_if_exited(server, name, c, notes);
  }
  std::fprintf(stderr, "stopping %s ...\n", name.c_str());
  return ScenarioOutcome::kDone;
}

ScenarioOutcome measure_grpcio(const ScenarioContext& context, const std::vector<int>& concurrencies,
                               std::vector<Row>& rows, std::vector<std::string>& notes) {
  const std::string name(display_name(ServerKind::kGrpcio));
  ServerSettings settings = server_settings(context);
  // Each Connect stream holds a handler thread while it is open.
  settings.handler_threads = *std::max_element(concurrencies.begin(), concurrencies.end()) + 16;
  StartedServer server = start_server_reporting(ServerKind::kGrpcio, name, settings, notes);
  if (server.outcome == StartedServer::Outcome::kInterrupted) return ScenarioOutcome::kInterrupted;
  if (server.outcome != StartedServer::Outcome::kRunning) {
    add_unavailable_rows({kGrpcioUnary, kGrpcioBidi}, concurrencies, unavailable_cell(server), rows);
    return server.outcome == StartedServer::Outcome::kNotInstalled ? ScenarioOutcome::kDone
                                                                   : ScenarioOutcome::kServerFailed;
  }
  for (int c : concurrencies) {
    if (!measure_grpc(context, kGrpcioUnary, server.port, c, GrpcMode::kUnary, rows, notes) ||
        !measure_grpc(context, kGrpcioBidi, server.port, c, GrpcMode::kBidi, rows, notes))
      return ScenarioOutcome::kInterrupted;
    note_if_exited(server, name, c, notes);
  }
  std::fprintf(stderr, "stopping %s ...\n", name.c_str());
  return ScenarioOutcome::kDone;
}

ScenarioOutcome measure_nginx_http2(const ScenarioContext& context, const std::vector<int>& concurrencies,
                                    std::vector<Row>& rows, std::vector<std::string>& notes) {
  if (!h2load_installed()) {
    add_unavailable_rows({kNginxHttp2}, concurrencies, "not installed", rows);
    notes.push_back("REST over HTTP/2: h2load (nghttp2-client) is not installed");
    return ScenarioOutcome::kDone;
  }
  const std::string name(display_name(ServerKind::kNginxHttp2));
  StartedServer server = start_server_reporting(ServerKind::kNginxHttp2, name, server_settings(context), notes);
  if (server.outcome == StartedServer::Outcome::kInterrupted) return ScenarioOutcome::kInterrupted;
  if (server.outcome != StartedServer::Outcome::kRunning) {
    add_unavailable_rows({kNginxHttp2}, concurrencies, unavailable_cell(server), rows);
    return server.outcome == StartedServer::Outcome::kNotInstalled ? ScenarioOutcome::kDone
                                                                   : ScenarioOutcome::kServerFailed;
  }
  for (int c : concurrencies) {
    if (!measure_h2load(context, kNginxHttp2, server.port, c, rows, notes)) return ScenarioOutcome::kInterrupted;
    note_if_exited(server, name, c, notes);
  }
  std::fprintf(stderr, "stopping %s ...\n", name.c_str());
  return ScenarioOutcome::kDone;
}

}  // namespace

ScenarioOutcome run_grpc_scenario(const ScenarioContext& context) {
  const std::vector<int>& concurrencies = context.options.concurrencies_or(kDefaultConcurrencies);
  std::vector<Row> rows;
  std::vector<std::string> notes;
  bool any_failed = false;
  for (auto measure : {&measure_edri, &measure_grpcio, &measure_nginx_http2}) {
    const ScenarioOutcome outcome = measure(context, concurrencies, rows, notes);
    if (outcome == ScenarioOutcome::kInterrupted || context.interrupted()) return ScenarioOutcome::kInterrupted;
    any_failed = any_failed || outcome == ScenarioOutcome::kServerFailed;
  }

  print_report_header(context,
                      "the bench app's noop, one round trip at a time per connection: WebSocket command noop; "
                      "keep-alive GET /noop; gRPC Call with Event{type:\"noop\"}, a new stream per call; gRPC "
                      "Connect, one stream per connection with one Event in flight; GET /noop over HTTP/2 (h2load "
                      "-c C -m 1); grpcio answers with the same bytes edri does");
  print_rate_table(rows, kRateLines, concurrencies);
  std::printf("\n");
  print_ratio_table(rows, kRatioLines, concurrencies);
  if (context.options.rate > 0)
    notes.push_back(
        "--rate: the gRPC loads are paced as the HTTP/1.1 one is; h2load gets --rps, the rate "
        "divided among its connections");
  print_notes(notes);
  return any_failed ? ScenarioOutcome::kServerFailed : ScenarioOutcome::kDone;
}

}  // namespace edri::bench
