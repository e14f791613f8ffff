#include "runtime/config_file.hpp"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <toml.hpp>

#include "runtime/closest_name.hpp"

namespace edri {
namespace {

// Ordered tables, so that the first of two errors is the first in the file.
using TomlValue = toml::basic_value<toml::discard_comments, std::map, std::vector>;

[[noreturn]] void refuse(const std::string& why, const TomlValue& v, const std::string& here) {
  throw ConfigError(toml::format_error(why, v, here, {}, false));
}

// A string, integer or float as a setting's text; a boolean as 1 or 0.
std::optional<std::string> scalar_text(const TomlValue& v) {
  if (v.is_string()) return v.as_string().str;
  if (v.is_integer()) return std::to_string(v.as_integer());
  if (v.is_floating()) return fmt::format("{}", v.as_floating());
  if (v.is_boolean()) return std::string(v.as_boolean() ? "1" : "0");
  return std::nullopt;
}

// An array as a ','-separated list, the environment variable's form.
std::optional<std::string> list_text(const TomlValue& v) {
  if (!v.is_array()) return std::nullopt;
  std::string out;
  for (const auto& item : v.as_array()) {
    const auto text = scalar_text(item);
    if (!text) refuse("a list of settings holds plain values (text, numbers)", item, "this is not one");
    out += (out.empty() ? "" : ",") + *text;
  }
  return out;
}

// A table as "name=value" pairs (EDRI_DATABASES, EDRI_DOMAIN_REPLICAS).
std::string pairs_text(const TomlValue& v, char separator) {
  std::string out;
  for (const auto& [name, item] : v.as_table()) {
    const auto text = scalar_text(item);
    if (!text) refuse("a value of this table is text or a number", item, "this is not one");
    out += (out.empty() ? "" : std::string(1, separator)) + name + "=" + *text;
  }
  return out;
}

std::string setting_text(const Setting& s, const std::string& key, const TomlValue& v) {
  if (v.is_boolean() && !s.binding.takes_boolean)
    refuse(key + " is not a flag: give its value as text or a number", v, "true or false");
  if (auto text = scalar_text(v)) return *text;
  if (auto text = list_text(v)) return *text;
  if (v.is_table() && s.binding.pair_separator) return pairs_text(v, s.binding.pair_separator);
  refuse(key + " takes text, a number" + (s.binding.takes_boolean ? ", a boolean" : "") + " or a list", v,
         "not one of these");
}

// Set in the environment, where an empty value may count as unset.
bool in_environment(const char* name, bool empty_is_a_value) {
  const char* v = std::getenv(name);
  return v && (*v || empty_is_a_value);
}

TomlValue parse_file(const std::string& path) {
  try {
    return toml::parse<toml::discard_comments, std::map, std::vector>(path);
  } catch (const toml::syntax_error& e) {
    throw ConfigError(std::string("the config file is not valid TOML: ") + e.what());
  } catch (const std::exception& e) {
    throw ConfigError("cannot read the config file " + path + ": " + e.what());
  }
}

std::map<std::string, std::string> plugin_section(const std::string& plugin, const TomlValue& section) {
  if (!section.is_table()) refuse("[plugin." + plugin + "] is a table of the plugin's settings", section, "here");
  std::map<std::string, std::string> out;
  for (const auto& [key, v] : section.as_table()) {
    auto text = scalar_text(v);
    if (!text) text = list_text(v);
    if (!text) refuse("plugin." + plugin + "." + key + " takes text, a number, a boolean or a list", v, "here");
    out.emplace(key, std::move(*text));
  }
  return out;
}

}  // namespace

ConfigFile ConfigFile::read(const std::string& path) {
  const TomlValue root = parse_file(path);
  ConfigFile file;
  file.path_ = path;
  for (const auto& [key, v] : root.as_table()) {
    if (key == "plugin") {
      if (!v.is_table()) refuse("plugin is a table: [plugin.NAME] for each plugin's settings", v, "here");
      for (const auto& [plugin, section] : v.as_table()) file.plugins_.emplace(plugin, plugin_section(plugin, section));
      continue;
    }
    const Setting* s = setting_by_key(key);
    if (!s) refuse(key + " is not a setting" + did_you_mean(key, setting_keys()), v, "unknown key");
    const std::string text = setting_text(*s, key, v);
    check_setting_value(*s, path + ": " + key, text);
    file.settings_.emplace_back(s, text);
  }
  return file;
}

void ConfigFile::export_settings() const {
  for (const auto& [s, text] : settings_)
    if (!in_environment(s->name, s->binding.empty_is_a_value)) ::setenv(s->name, text.c_str(), 1);
}

void ConfigFile::export_plugin_setting(const std::string& plugin, const std::string& key,
                                       const std::string& variable) const {
  const auto section = plugins_.find(plugin);
  if (section == plugins_.end()) return;
  const auto value = section->second.find(key);
  if (value != section->second.end() && !in_environment(variable.c_str(), false))
    ::setenv(variable.c_str(), value->second.c_str(), 1);
}

void ConfigFile::check_plugin_sections(const std::map<std::string, std::vector<std::string>>& declared) const {
  std::vector<std::string> plugins;
  for (const auto& [name, keys] : declared) plugins.push_back(name);
  for (const auto& [plugin, values] : plugins_) {
    const auto it = declared.find(plugin);
    if (it == declared.end())
      throw ConfigError(path_ + ": [plugin." + plugin + "]: no plugin loaded has that name" +
                        did_you_mean(plugin, plugins));
    for (const auto& [key, text] : values)
      if (std::find(it->second.begin(), it->second.end(), key) == it->second.end())
        throw ConfigError(path_ + ": [plugin." + plugin + "] " + key + ": not a setting plugin " + plugin +
                          " declares" + did_you_mean(key, it->second));
  }
}

}  // namespace edri
