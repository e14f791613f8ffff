// The worker process: `edri-server --worker`, started by a manager's
// WorkerProcesses. Loads the plugins, maps the pool's memory (contract:
// worker_pool_layout.hpp) and runs the tasks of the manager's domain one at
// a time until the manager stops it or dies.
#pragma once

namespace edri::manager {

// Returns the process's exit status.
int run_worker_process();

}  // namespace edri::manager
