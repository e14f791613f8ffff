// `edri-server --new NAME DIR`: a plugin project to start from, written
// into DIR: a CMake project built against the installed edri package
// (find_package(edri)), one plugin with one route whose query field is
// declared, a test of it through the test client (edri/testing.hpp), a
// README and a .gitignore. It builds and passes its test as written.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace edri {

// What --new refuses: a name that is not a plugin name, a folder that
// exists with something in it.
class NewProjectError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A project's name is its plugin's, domain's and events' prefix: a
// lower-case letter, then up to 63 of a-z, 0-9 and '_'.
bool is_project_name(const std::string& name);

// Writes the project; returns the paths written, in order. `version`:
// edri's ("0.1.0"), which the project's find_package asks for.
std::vector<std::string> write_new_project(const std::string& name, const std::string& dir, const std::string& version);

}  // namespace edri
