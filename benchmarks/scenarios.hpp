#pragma once

#include <csignal>
#include <string>

#include "options.hpp"

namespace edri::bench {

// What bench hands every scenario.
struct ScenarioContext {
  const Options& options;
  // What the run is measured on and the command line, taken as bench starts;
  // the first line of every report.
  std::string context_line;
  // Set by bench's SIGINT/SIGTERM handler; a scenario stops as soon as it can.
  const volatile std::sig_atomic_t* stop_requested = nullptr;

  bool interrupted() const { return stop_requested != nullptr && *stop_requested != 0; }
};

enum class ScenarioOutcome {
  kDone,
  kServerFailed,  // a server that is installed did not start; its rows say so
  kInterrupted,   // nothing was printed on stdout
};

// A scenario measures, with progress on stderr as it goes, then prints its
// report (header, table, notes) on stdout. Every server it starts is stopped
// before it returns.
using ScenarioRunner = ScenarioOutcome (*)(const ScenarioContext&);

ScenarioOutcome run_noop_scenario(const ScenarioContext& context);
ScenarioOutcome run_compare_scenario(const ScenarioContext& context);
ScenarioOutcome run_echo_scenario(const ScenarioContext& context);
ScenarioOutcome run_middleware_scenario(const ScenarioContext& context);
ScenarioOutcome run_access_log_scenario(const ScenarioContext& context);
ScenarioOutcome run_worker_scenario(const ScenarioContext& context);
ScenarioOutcome run_managers_scenario(const ScenarioContext& context);
ScenarioOutcome run_listener_scenario(const ScenarioContext& context);
ScenarioOutcome run_route_scenario(const ScenarioContext& context);
ScenarioOutcome run_payload_scenario(const ScenarioContext& context);
ScenarioOutcome run_slow_scenario(const ScenarioContext& context);
ScenarioOutcome run_startup_scenario(const ScenarioContext& context);
ScenarioOutcome run_session_scenario(const ScenarioContext& context);
ScenarioOutcome run_fanout_scenario(const ScenarioContext& context);
ScenarioOutcome run_cluster_scenario(const ScenarioContext& context);
ScenarioOutcome run_grpc_scenario(const ScenarioContext& context);
ScenarioOutcome run_wait_scenario(const ScenarioContext& context);
ScenarioOutcome run_techempower_scenario(const ScenarioContext& context);
ScenarioOutcome run_serialization_scenario(const ScenarioContext& context);
ScenarioOutcome run_inprocess_scenario(const ScenarioContext& context);

}  // namespace edri::bench
