// The settings: one row per environment variable of the server, from
// which Config::from_env reads, Config::describe prints (--print-config)
// and the docs' table is made (--print-config-markdown).
#pragma once

#include <string>
#include <vector>

#include "runtime/setting_parsers.hpp"

namespace edri {

struct Setting {
  const char* name;
  // The docs' default column, markdown: a value in backticks (what
  // describe() shows for a default Config), else words ("unset").
  const char* default_text;
  Binding binding;
  const char* meaning;  // the docs' meaning column, markdown, one line
};

// In the docs' order.
const std::vector<Setting>& settings();

// docs/configuration.md's table: the header row, then one row per setting.
std::string settings_markdown();

// Every setting as a config file (--print-config-toml): `key = "value"`
// as in effect; a secret, and one left at its default (where the default
// may be no value the setting takes: manager_replicas 0), commented out.
std::string settings_toml(const Config& c);

// `"text"`: a TOML basic string.
std::string toml_string(std::string_view text);

// A setting's key in the config file and on the command line: its
// variable in lower case, less EDRI_ (EDRI_ACCESS_LOG: access_log, and
// --access-log or --access_log).
std::string setting_key(const Setting& s);
const Setting* setting_by_key(const std::string& key);  // null when none
std::vector<std::string> setting_keys();                // in the table's order
std::vector<std::string> setting_names();               // the variables

// Checks `text` as a value of `s` given at `where` ("--port",
// "edri.toml: port"): throws ConfigError "where=text: why" for a value the
// setting refuses, before it goes into the environment under s.name.
void check_setting_value(const Setting& s, const std::string& where, const std::string& text);

// Throws ConfigError naming each EDRI_ variable of the environment that is
// neither a setting nor one of `also_known` (the plugins' declared
// variables), with the nearest name: EDRI_PROT is a typo, not a choice.
// EDRI_INTERNAL_* are the supervisor's to its children.
void check_unknown_variables(const std::vector<std::string>& also_known);

}  // namespace edri
