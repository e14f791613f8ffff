// What one generation of processes runs: its settings, its plugins (loaded
// from copies taken when it was planned) and the environment its processes
// start with. The supervisor starts one at start-up and another on each
// reload (SIGHUP); main.cpp plans them, with every check start-up makes.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "plugin/plugin_set.hpp"
#include "runtime/config.hpp"

namespace edri::supervisor {

struct GenerationPlan {
  Config config;
  std::unique_ptr<plugin::PluginSet> plugins;
  std::vector<std::string> environment;  // KEY=VALUE, what each of its processes starts with
  std::string code_dir;                  // the plugins' copies; removed when the generation ends
};

// Plans the next generation: the config file read again, the plugins
// copied and loaded. Throws (ConfigError, PluginError, ...) what start-up
// would stop on.
using PlanGeneration = std::function<GenerationPlan()>;

}  // namespace edri::supervisor
