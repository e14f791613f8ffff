// A setting a plugin reads (Registry::setting): declared, so that the
// server knows it. It is then shown by --print-config, may be given in
// the plugin's section of the config file ([plugin.NAME] in
// `edri-server --config FILE`), and an EDRI_ variable no plugin declares
// and the server does not know stops start-up as a likely typo
// (docs/configuration.md).
#pragma once

#include <string>

namespace edri {

struct SettingDecl {
  // The name in the plugin's section of the config file: lower case
  // letters, digits and '_' ("db" in [plugin.notes]).
  std::string key;
  // The environment variable, which wins over the file ("EDRI_NOTES_DB").
  std::string variable;
  std::string default_value = {};
  std::string meaning = {};  // one line, for --print-config-toml
};

}  // namespace edri
