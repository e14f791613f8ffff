// edri-server(1), made from the settings table (runtime/settings.hpp) as
// docs/configuration.md is: --print-manpage writes it, the build installs
// it (share/man/man1/edri-server.1.gz), and the .deb carries it.
#pragma once

#include <string>
#include <string_view>

namespace edri {

// The page in man(7) troff; `version` for its footer ("0.1.0").
std::string manpage(std::string_view version);

// A markdown line of the settings table as troff text: `code` in bold
// (its '-' a minus), backslashes escaped, a leading '.' or '\'' kept from being a request.
std::string troff_text(std::string_view markdown);

}  // namespace edri
