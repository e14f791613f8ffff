// edri-server --new NAME DIR (runtime/new_project.hpp): what it writes and
// what it refuses. CI builds such a project against the installed package
// and runs its test (scripts/test.sh).
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "runtime/command_line.hpp"
#include "runtime/config.hpp"
#include "runtime/new_project.hpp"
#include "support/test_helpers.hpp"

namespace {

namespace fs = std::filesystem;
using edri::test::TempDir;

std::string read(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

}  // namespace

TEST_CASE("edri-server --new writes a project named through and through", "[new_project]") {
  TempDir tmp;
  const auto dir = tmp.path / "greeter";
  const auto written = edri::write_new_project("greeter", dir.string(), "0.1.0");
  CHECK(written.size() == 5);
  for (const char* file : {"CMakeLists.txt", "greeter.cpp", "greeter_test.cpp", "README.md", ".gitignore"}) {
    INFO(file);
    REQUIRE(fs::exists(dir / file));
    CHECK(read(dir / file).find('@') == std::string::npos);  // every placeholder filled
  }
  CHECK(read(dir / "CMakeLists.txt").find("find_package(edri 0.1.0 REQUIRED COMPONENTS testing)") != std::string::npos);
  CHECK(read(dir / "greeter.cpp").find("EDRI_PLUGIN(\"greeter\", register_greeter)") != std::string::npos);
  CHECK(read(dir / "greeter_test.cpp").find("client.get(\"/greeter/hello?name=Ann\")") != std::string::npos);
}

TEST_CASE("edri-server --new refuses a name that is no plugin name and a folder with files", "[new_project]") {
  TempDir tmp;
  for (const char* bad : {"", "Greeter", "1greeter", "greet-er", "greet.er", "a b"}) {
    INFO(bad);
    CHECK_THROWS_AS(edri::write_new_project(bad, (tmp.path / "x").string(), "0.1.0"), edri::NewProjectError);
  }
  CHECK_FALSE(fs::exists(tmp.path / "x"));
  std::ofstream(tmp.path / "mine.txt") << "kept";
  CHECK_THROWS_WITH(edri::write_new_project("greeter", tmp.path.string(), "0.1.0"),
                    Catch::Contains("is not empty: nothing was written"));
  CHECK(read(tmp.path / "mine.txt") == "kept");
  CHECK_FALSE(fs::exists(tmp.path / "CMakeLists.txt"));
}

TEST_CASE("the command line takes --new NAME DIR", "[new_project]") {
  const auto line = edri::parse_command_line({"--new", "greeter", "/tmp/greeter"});
  CHECK(line.action == edri::CommandLine::Action::New);
  CHECK(line.new_name == "greeter");
  CHECK(line.new_dir == "/tmp/greeter");
  CHECK_THROWS_AS(edri::parse_command_line({"--new", "greeter"}), edri::ConfigError);
}
