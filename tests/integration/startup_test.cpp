// Start-up refuses what it cannot serve, with a message that names the
// culprit and a non-zero exit status.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include <edri/plugin.hpp>

#include "support/http_client.hpp"
#include "support/server_process.hpp"

using namespace edri::test;

TEST_CASE("a plugin that cannot be used stops start-up, naming the file", "[startup]") {
  SECTION("missing file") {
    const auto r = run_server_to_exit({}, {{"EDRI_PLUGINS", "/nonexistent/plugin.so"}});
    CHECK(r.status != 0);
    CHECK(r.err.find("/nonexistent/plugin.so") != std::string::npos);
    CHECK(r.err.find("cannot load") != std::string::npos);
  }
  SECTION("a library that is not a plugin") {
    const auto path = test_plugin_path("not_a_plugin");
    const auto r = run_server_to_exit({}, {{"EDRI_PLUGINS", path}});
    CHECK(r.status != 0);
    CHECK(r.err.find(path) != std::string::npos);
    CHECK(r.err.find("not an edri plugin") != std::string::npos);
  }
  SECTION("another ABI version") {
    const auto path = test_plugin_path("wrong_abi");
    const auto r = run_server_to_exit({}, {{"EDRI_PLUGINS", path}});
    CHECK(r.status != 0);
    CHECK(r.err.find(path) != std::string::npos);
    CHECK(r.err.find("ABI version 999") != std::string::npos);
    CHECK(r.err.find("has " + std::to_string(edri::kPluginAbiVersion)) != std::string::npos);
  }
  SECTION("another toolchain") {
    const auto path = test_plugin_path("other_toolchain");
    const auto r = run_server_to_exit({}, {{"EDRI_PLUGINS", path}});
    CHECK(r.status != 0);
    CHECK(r.err.find(path) != std::string::npos);
    CHECK(r.err.find("built with gcc 4; libstdc++ 4") != std::string::npos);
    CHECK(r.err.find(std::string("this edri-server with ") + EDRI_TOOLCHAIN) != std::string::npos);
  }
  SECTION("a route to an undeclared event") {
    const auto path = test_plugin_path("bad_route");
    const auto r = run_server_to_exit({}, {{"EDRI_PLUGINS", path}});
    CHECK(r.status != 0);
    CHECK(r.err.find("undeclared event nowhere") != std::string::npos);
  }
  SECTION(
      "routes, fields and middleware the listener could not serve stop start-up, not a listener in a restart loop") {
    const auto path = test_plugin_path("bad_route");
    for (const auto& [fault, message] : std::vector<std::pair<std::string, std::string>>{
             {"param_type", "unknown parameter type 'integer' (int, str, uuid) (event bad.x)"},
             {"twice", "declared twice (event bad.y)"},
             {"builtin", "route GET /health (bad.health) would be hidden by the built-in endpoint of that path"},
             {"middleware", "middleware admins names undeclared event bad.admn"},
             {"default", "event bad.x: field limit: its default \"abc\" must be an integer"},
             {"pattern", "event bad.x: field lines[].sku: pattern \"([A-Z\" does not compile: missing ]"},
             {"one_of", "event bad.x: field state: one_of value 3 must be a string"},
             {"closed", "refuse_unknown_fields(bad.y), an event this plugin does not declare"},
             {"answers_event", "answers(bad.y), an event this plugin does not declare"},
             {"answers_status", "answers(bad.x, 42): a status is 100 to 599"},
             {"answers_body", "answers(bad.x, 200): id: pattern \"(\" does not compile"}}) {
      const auto r = run_server_to_exit({}, {{"EDRI_PLUGINS", path}, {"EDRI_TEST_ROUTE_FAULT", fault}});
      INFO(fault << ": " << r.err);
      CHECK(r.status == 3);
      CHECK(r.err.find(message) != std::string::npos);
    }
  }
  SECTION("a typed gRPC service that cannot be served") {
    const auto path = test_plugin_path("bad_grpc");
    for (const auto& [fault, message] : std::vector<std::pair<std::string, std::string>>{
             {"streams", "gRPC service bad.v1.Bad: method Watch streams; typed methods are unary"},
             {"unmapped", "gRPC service bad.v1.Bad: method Watch sends no event"},
             {"no_method", "gRPC service bad.v1.Bad: has no method Missing"},
             {"garbage", "gRPC service bad.v1.Bad: its descriptor set is not a serialized FileDescriptorSet"},
             {"no_service", "gRPC service bad.v1.Elsewhere: no such service in its descriptor set"}}) {
      const auto r = run_server_to_exit({}, {{"EDRI_PLUGINS", path}, {"EDRI_TEST_GRPC_FAULT", fault}});
      INFO(fault << ": " << r.err);
      CHECK(r.status == 3);
      CHECK(r.err.find(message) != std::string::npos);
    }
  }
  SECTION("a good plugin after a bad one still stops start-up") {
    const auto r =
        run_server_to_exit({}, {{"EDRI_PLUGINS", plugin_path("bench_app") + ":" + test_plugin_path("wrong_abi")}});
    CHECK(r.status != 0);
    CHECK(r.out.find("listening") == std::string::npos);
  }
}

TEST_CASE("an invalid setting stops start-up, naming the variable", "[startup]") {
  const auto plugins = plugin_path("bench_app");
  for (const auto& [var, value] : std::vector<std::pair<std::string, std::string>>{{"EDRI_PORT", "http"},
                                                                                   {"EDRI_PORT", "70000"},
                                                                                   {"EDRI_API_RESPONSE_TIMEOUT", "-1"},
                                                                                   {"EDRI_LISTENER_WORKERS", "0"},
                                                                                   {"EDRI_RING_BYTES", "5000"},
                                                                                   {"EDRI_CPUS", "1-0"},
                                                                                   {"EDRI_LOG_LEVEL", "loud"},
                                                                                   {"EDRI_ACCESS_LOG", "verbose"}}) {
    INFO(var << "=" << value);
    const auto r = run_server_to_exit({}, {{"EDRI_PLUGINS", plugins}, {var, value}});
    CHECK(r.status == 2);
    CHECK(r.err.find(var) != std::string::npos);
  }
  const auto r = run_server_to_exit({}, {});
  CHECK(r.status == 2);
  CHECK(r.err.find("EDRI_PLUGINS") != std::string::npos);
}

TEST_CASE("print-config shows the effective configuration", "[startup]") {
  const auto r =
      run_server_to_exit({"--print-config"}, {{"EDRI_MAX_BODY_SIZE", "1234"}, {"ENVIRONMENT", "production"}});
  CHECK(r.status == 0);
  CHECK(r.out.find("EDRI_MAX_BODY_SIZE=1234\n") != std::string::npos);
  CHECK(r.out.find("ENVIRONMENT=production\n") != std::string::npos);
  CHECK(r.out.find("EDRI_PORT=0\n") != std::string::npos);
}

TEST_CASE("print-config-markdown prints every setting as a table row", "[startup]") {
  const auto r = run_server_to_exit({"--print-config-markdown"}, {{"EDRI_PORT", "not a port"}});
  CHECK(r.status == 0);  // the table, not the environment's values
  CHECK(r.out.rfind("| variable | default | meaning |\n|---|---|---|\n", 0) == 0);
  CHECK(r.out.find("| `EDRI_PORT` | `8080` | ") != std::string::npos);
  CHECK(r.out.find("| `ENVIRONMENT` | `development` | ") != std::string::npos);
}

TEST_CASE("EDRI_LOG_FORMAT=json: each line the server logs is a JSON object naming its process and none twice",
          "[startup]") {
  std::string log;
  {
    ServerProcess server({plugin_path("bench_app")}, {{"EDRI_LOG_FORMAT", "json"}, {"EDRI_LOG_LEVEL", "debug"}});
    CHECK(http_get(server.port(), "/noop").status == 200);
    CHECK(server.stop() == 0);
    log = server.log();
  }
  std::istringstream lines(log);
  std::set<std::string> processes, said;
  int n = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("edri: listening on", 0) == 0) continue;  // stdout's one line, in the same file
    INFO(line);
    const auto j = nlohmann::json::parse(line);
    CHECK(j["time"].get<std::string>().back() == 'Z');
    processes.insert(j["process"].get<std::string>());
    // The same news twice from one process is noise (the managers'
    // subscriptions were, at debug).
    CHECK(said.insert(j["process"].get<std::string>() + " " + j["message"].get<std::string>()).second);
    ++n;
  }
  CHECK(n > 5);
  CHECK(processes.count("supervisor") == 1);
  CHECK(processes.count("listener") == 1);
  CHECK(processes.count("manager bench") == 1);
}
