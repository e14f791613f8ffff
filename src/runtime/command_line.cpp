#include "runtime/command_line.hpp"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <optional>

#include "runtime/closest_name.hpp"
#include "runtime/config.hpp"
#include "runtime/settings.hpp"

namespace edri {
namespace {

using Action = CommandLine::Action;

const std::map<std::string, Action>& actions() {
  static const std::map<std::string, Action> table = {{"--print-config", Action::PrintConfig},
                                                      {"--print-config-markdown", Action::PrintConfigMarkdown},
                                                      {"--print-config-toml", Action::PrintConfigToml},
                                                      {"--print-manpage", Action::PrintManpage},
                                                      {"--help", Action::Help},
                                                      {"-h", Action::Help},
                                                      {"--version", Action::Version}};
  return table;
}

// Every option, for "did you mean": the actions, --config, each setting.
std::vector<std::string> option_names() {
  std::vector<std::string> names;
  for (const auto& [name, action] : actions()) names.push_back(name);
  names.emplace_back("--config");
  names.emplace_back("--new");
  for (auto key : setting_keys()) {
    std::replace(key.begin(), key.end(), '_', '-');
    names.push_back("--" + key);
  }
  return names;
}

// "--access-log" and "--access_log" name the key access_log.
std::string key_of(std::string option) {
  option.erase(0, 2);
  std::replace(option.begin(), option.end(), '-', '_');
  return option;
}

}  // namespace

CommandLine parse_command_line(const std::vector<std::string>& args) {
  CommandLine line;
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string option = args[i];
    if (const auto a = actions().find(option); a != actions().end()) {
      line.action = a->second;
      continue;
    }
    if (option == "--new") {
      if (i + 2 >= args.size()) throw ConfigError("--new needs a project name and a folder: --new NAME DIR");
      line.action = Action::New;
      line.new_name = args[++i];
      line.new_dir = args[++i];
      continue;
    }
    if (option.rfind("--", 0) != 0 || option.size() == 2)
      throw ConfigError("'" + option + "' is not an option (edri-server --help)");
    std::optional<std::string> value;
    if (const auto eq = option.find('='); eq != std::string::npos) {
      value = option.substr(eq + 1);
      option.resize(eq);
    }
    const Setting* s = option == "--config" ? nullptr : setting_by_key(key_of(option));
    if (!s && option != "--config")
      throw ConfigError(option + " is not an option" + did_you_mean(option, option_names()));
    if (!value && i + 1 == args.size()) throw ConfigError(option + " needs a value");
    if (!value) value = args[++i];
    if (!s) {
      line.config_file = *value;
      continue;
    }
    check_setting_value(*s, option, *value);
    line.settings.emplace_back(s->name, *value);
  }
  return line;
}

std::optional<ConfigFile> apply_command_line(const CommandLine& line) {
  for (const auto& [name, value] : line.settings) ::setenv(name.c_str(), value.c_str(), 1);
  if (line.config_file.empty()) return std::nullopt;
  auto file = ConfigFile::read(line.config_file);
  file.export_settings();
  return file;
}

}  // namespace edri
