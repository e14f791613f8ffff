// What `edri-server` is asked on its command line when a user starts it:
// an action, a config file, and settings by key (--port 8081), from the
// same table as the environment (settings.cpp). Children are started
// with --child= or --worker and never come here.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "runtime/config_file.hpp"

namespace edri {

struct CommandLine {
  enum class Action { Serve, PrintConfig, PrintConfigMarkdown, PrintConfigToml, PrintManpage, Help, Version, New };
  Action action = Action::Serve;
  // --new NAME DIR: a plugin project to start from (runtime/new_project.hpp).
  std::string new_name, new_dir;
  std::string config_file;  // --config FILE
  // (variable, text) of each --KEY VALUE or --KEY=VALUE, in order: each
  // wins over the environment and the file.
  std::vector<std::pair<std::string, std::string>> settings;
};

// Throws ConfigError for an unknown option (naming the nearest), a
// missing value, or a value its setting refuses.
CommandLine parse_command_line(const std::vector<std::string>& args);

// Puts the command line's settings into the environment, over what is
// there, then the config file's under them: what every process reads.
// The file, when one is named, for its plugins' sections.
std::optional<ConfigFile> apply_command_line(const CommandLine& line);

}  // namespace edri
