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

}  // namespace edri
