// ConfigFile: `edri-server --config FILE`, the settings in a TOML file
// (docs/configuration.md, docs/decisions/0045).
//
// A top-level key is a setting of the table in settings.cpp by its key
// (`port` for EDRI_PORT); [plugin.NAME] holds the settings plugin NAME
// declared (Registry::setting). The file is read by the supervisor alone:
// it puts each value into the environment, unless the environment has
// one, and its children read the environment as before. So the
// environment overrides the file, and the command line both.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "runtime/settings.hpp"

namespace edri {

class ConfigFile {
 public:
  // Reads and checks the file: its syntax, every key a setting (else an
  // error naming the nearest), every value one its setting takes. Throws
  // ConfigError.
  static ConfigFile read(const std::string& path);

  // Puts each setting the file gives into the environment, unless the
  // environment has it (set, and not empty where empty means unset).
  void export_settings() const;
  // The same for `variable`, plugin `plugin`'s setting `key`.
  void export_plugin_setting(const std::string& plugin, const std::string& key, const std::string& variable) const;
  // Throws ConfigError for a [plugin.NAME] section of no plugin loaded, or
  // a key its plugin did not declare: `declared` is each plugin's keys.
  void check_plugin_sections(const std::map<std::string, std::vector<std::string>>& declared) const;

 private:
  std::string path_;
  std::vector<std::pair<const Setting*, std::string>> settings_;  // each with its text
  std::map<std::string, std::map<std::string, std::string>> plugins_;
};

}  // namespace edri
