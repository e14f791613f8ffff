// echo: what reading a JSON body and writing it back costs on top of the
// cheapest route, and what the same two cost as WebSocket commands. GET
// /noop, POST /echo, and the WebSocket commands noop and echo on one edri,
// at each concurrency.
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "report.hpp"
#include "scenario_support.hpp"
#include "scenarios.hpp"

namespace edri::bench {
namespace {

const std::string kNoopRoute = "GET /noop";
const std::string kEchoRoute = "POST /echo";
const std::string kWsNoopRoute = "WS noop";
const std::string kWsEchoRoute = "WS echo";
const std::string kWsNoop = R"({"command":"noop"})";
// A small API object (114 bytes), the same in every run so that runs compare.
constexpr std::string_view kEchoBody =
    R"({"id":12345,"title":"a note title","body":"some text of a note body, about sixty bytes long....","tags":["a","b"]})";

struct Route {
  std::string label;
  HttpRequest request;
  std::optional<std::string> expected_body;  // echo's answer must be its request
  std::optional<std::string> websocket_path;
};

std::vector<Route> routes() {
  HttpRequest noop;
  noop.method = "GET";
  noop.target = "/noop";
  HttpRequest echo;
  echo.method = "POST";
  echo.target = "/echo";
  echo.headers = {{"Content-Type", "application/json"}};
  echo.body = std::string(kEchoBody);
  HttpRequest ws_noop;
  ws_noop.body = kWsNoop;
  HttpRequest ws_echo;
  // The listener re-serializes a command's fields (keys sorted): the same
  // value with its keys in that order comes back byte for byte.
  const std::string sorted = R"({"body":"some text of a note body, about sixty bytes long....","id":12345,)"
                             R"("tags":["a","b"],"title":"a note title"})";
  ws_echo.body = R"({"command":"echo","value":)" + sorted + "}";
  return {Route{kNoopRoute, noop, std::nullopt, std::nullopt},
          Route{kEchoRoute, echo, std::string(kEchoBody), std::nullopt},
          Route{kWsNoopRoute, ws_noop, R"({"command":"noop","response":{"ok":true}})", "/ws"},
          Route{kWsEchoRoute, ws_echo, R"({"command":"echo","response":{"value":)" + sorted + "}}", "/ws"}};
}

// One edri for the whole scenario; both routes at each concurrency, so a
// ratio compares runs made close together.
ScenarioOutcome measure_routes(const ScenarioContext& context, const std::vector<int>& concurrencies,
                               std::vector<Row>& rows, std::vector<std::string>& notes) {
  const std::string name(display_name(ServerKind::kEdri));
  StartedServer server = start_server_reporting(ServerKind::kEdri, name, server_settings(context), notes);
  if (server.outcome == StartedServer::Outcome::kInterrupted) return ScenarioOutcome::kInterrupted;
  const bool running = server.outcome == StartedServer::Outcome::kRunning;

  const std::vector<Route> measured_routes = routes();
  for (int c : concurrencies) {
    for (const Route& route : measured_routes) {
      if (!running) {
        rows.push_back(Row{route.label, c, std::nullopt, unavailable_cell(server)});
        continue;
      }
      LoadOptions load = load_options(context, server.port, c);
      load.request = route.request;
      load.expected_body = route.expected_body;
      load.websocket_path = route.websocket_path;
      const LoadResult result = run_reported_load(context, name + " " + route.label, load);
      if (result.interrupted) return ScenarioOutcome::kInterrupted;
      rows.push_back(Row{route.label, c, summarize(result), {}});
      note_if_exited(server, name, c, notes);
    }
  }
  if (!running) return ScenarioOutcome::kServerFailed;
  std::fprintf(stderr, "stopping %s ...\n", name.c_str());
  return ScenarioOutcome::kDone;
}

}  // namespace

ScenarioOutcome run_echo_scenario(const ScenarioContext& context) {
  const std::vector<int>& concurrencies = context.options.concurrencies_or(kDefaultConcurrencies);
  std::vector<Row> rows;
  std::vector<std::string> notes;
  const ScenarioOutcome outcome = measure_routes(context, concurrencies, rows, notes);
  if (outcome == ScenarioOutcome::kInterrupted || context.interrupted()) return ScenarioOutcome::kInterrupted;

  print_report_header(context, "keep-alive GET /noop and POST /echo (" + std::to_string(kEchoBody.size()) +
                                   "-byte JSON body), and the WebSocket commands noop and echo (the same value), one "
                                   "round trip at a time per connection; each run checks its first answer");
  print_echo_table(rows, concurrencies, kNoopRoute);
  print_notes(notes);
  return outcome;
}

}  // namespace edri::bench
