// The config file, the command line and the "did you mean" of unknown
// names, without a server: what each accepts, what it refuses and how it
// says so, and that neither overrides what the environment already says.
#include <stdlib.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "runtime/closest_name.hpp"
#include "runtime/command_line.hpp"
#include "runtime/config_file.hpp"

extern char** environ;

using edri::closest_name;
using edri::CommandLine;
using edri::ConfigError;
using edri::ConfigFile;
using edri::parse_command_line;

namespace {

// A file of `text` in the temporary folder, removed at the end.
struct TomlFile {
  std::string path;
  explicit TomlFile(const std::string& text) {
    path = (std::filesystem::temp_directory_path() / ("edri-config-test-" + std::to_string(::getpid()) + ".toml"))
               .string();
    std::ofstream(path) << text;
  }
  ~TomlFile() { std::filesystem::remove(path); }
};

// Unset on creation and on destruction: what a test sets goes with it.
struct Unset {
  std::vector<std::string> names;
  explicit Unset(std::vector<std::string> n) : names(std::move(n)) {
    for (const auto& name : names) ::unsetenv(name.c_str());
  }
  ~Unset() {
    for (const auto& name : names) ::unsetenv(name.c_str());
  }
};

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "(unset)";
}

}  // namespace

TEST_CASE("the nearest name is one a typo could have made", "[config]") {
  const std::vector<std::string> names{"port", "host", "plugins", "max_body_size"};
  CHECK(closest_name("prot", names) == "port");
  CHECK(closest_name("hots", names) == "host");
  CHECK(closest_name("plugin", names) == "plugins");
  CHECK(closest_name("max_bdy_size", names) == "max_body_size");
  CHECK_FALSE(closest_name("colour", names));
  CHECK_FALSE(closest_name("pots", names));  // two edits from port: too far for four letters
  CHECK(edri::did_you_mean("prot", names) == " (did you mean port?)");
  CHECK(edri::did_you_mean("zzzz", names).empty());
}

TEST_CASE("the command line names settings by key, with '-' or '_'", "[config]") {
  const auto line = parse_command_line(
      {"--port", "8081", "--access-log=json", "--max_body_size", "10", "--config", "f.toml", "--print-config"});
  CHECK(line.action == CommandLine::Action::PrintConfig);
  CHECK(line.config_file == "f.toml");
  REQUIRE(line.settings.size() == 3);
  CHECK(line.settings[0] == std::pair<std::string, std::string>{"EDRI_PORT", "8081"});
  CHECK(line.settings[1] == std::pair<std::string, std::string>{"EDRI_ACCESS_LOG", "json"});
  CHECK(line.settings[2] == std::pair<std::string, std::string>{"EDRI_MAX_BODY_SIZE", "10"});
  CHECK(parse_command_line({}).action == CommandLine::Action::Serve);
  CHECK(parse_command_line({"--environment", "production"}).settings[0].first == "ENVIRONMENT");
}

TEST_CASE("the command line refuses what it does not know, naming the nearest", "[config]") {
  CHECK(error_of([] { parse_command_line({"--prot", "1"}); }) == "--prot is not an option (did you mean --port?)");
  CHECK(error_of([] { parse_command_line({"--print-confg"}); }).find("did you mean --print-config?") !=
        std::string::npos);
  CHECK(error_of([] { parse_command_line({"--port"}); }) == "--port needs a value");
  CHECK(error_of([] { parse_command_line({"--port=http"}); }) == "--port=http: not an integer");
  CHECK(error_of([] { parse_command_line({"serve"}); }).find("'serve' is not an option") != std::string::npos);
}

TEST_CASE("a config file's values become the settings' text", "[config]") {
  const Unset unset({"EDRI_PORT", "EDRI_API_RESPONSE_TIMEOUT", "EDRI_WEBSOCKET_DEFLATE", "EDRI_CORS_ORIGINS",
                     "EDRI_DATABASES", "EDRI_DOMAIN_REPLICAS", "EDRI_HOST"});
  const TomlFile file(
      "# a comment\n"
      "port = 8081\n"
      "api_response_timeout = 2.5\n"
      "websocket_deflate = true\n"
      "cors_origins = [\"https://a.test\", \"https://b.test\"]\n"
      "databases = { a = \"sqlite:/tmp/a.db\", b = \"postgresql://u@127.0.0.1/b\" }\n"
      "domain_replicas = { notes = 2 }\n");
  ::setenv("EDRI_HOST", "127.0.0.2", 1);
  ConfigFile::read(file.path).export_settings();
  CHECK(env("EDRI_PORT") == "8081");
  CHECK(env("EDRI_API_RESPONSE_TIMEOUT") == "2.5");
  CHECK(env("EDRI_WEBSOCKET_DEFLATE") == "1");
  CHECK(env("EDRI_CORS_ORIGINS") == "https://a.test,https://b.test");
  CHECK(env("EDRI_DATABASES") == "a=sqlite:/tmp/a.db b=postgresql://u@127.0.0.1/b");
  CHECK(env("EDRI_DOMAIN_REPLICAS") == "notes=2");
  CHECK(env("EDRI_HOST") == "127.0.0.2");  // the environment's own value stays
  const auto c = edri::Config::from_env();
  CHECK(c.port == 8081);
  CHECK(c.databases.size() == 2);
}

TEST_CASE("a config file's errors name the file, the key and the nearest setting", "[config]") {
  const auto read = [](const std::string& text) { return error_of([&] { ConfigFile::read(TomlFile(text).path); }); };
  CHECK(read("prot = 1\n").find("prot is not a setting (did you mean port?)") != std::string::npos);
  CHECK(read("prot = 1\n").find("1 | prot = 1") != std::string::npos);  // the line, shown
  CHECK(read("port = 99999\n").find(".toml: port=99999: out of range") != std::string::npos);
  CHECK(read("port = true\n").find("port is not a flag") != std::string::npos);
  CHECK(read("cors_origins = [[\"a\"]]\n").find("a list of settings holds plain values") != std::string::npos);
  CHECK(read("max_pipeline = { a = 1 }\n").find("max_pipeline takes text, a number or a list") != std::string::npos);
  CHECK(read("port = \n").find("not valid TOML") != std::string::npos);
  CHECK(read("plugin = 3\n").find("[plugin.NAME]") != std::string::npos);
  CHECK(error_of([] { ConfigFile::read("/nonexistent/edri.toml"); }).find("cannot read the config file") !=
        std::string::npos);
}

TEST_CASE("a plugin's section goes to the variables its plugin declared", "[config]") {
  const Unset unset({"EDRI_NOTES_DB"});
  const TomlFile text("[plugin.notes]\ndb = \"/tmp/n.db\"\nsize = 3\n");
  const auto file = ConfigFile::read(text.path);
  CHECK(error_of([&] { file.check_plugin_sections({{"notes", {"db", "size"}}}); }) == "no error");
  CHECK(error_of([&] {
          file.check_plugin_sections({{"notes", {"db"}}});
        }).find("[plugin.notes] size: not a setting plugin notes declares") != std::string::npos);
  CHECK(error_of([&] {
          file.check_plugin_sections({{"notez", {"db"}}});
        }).find("[plugin.notes]: no plugin loaded has that name (did you mean notez?)") != std::string::npos);
  file.export_plugin_setting("notes", "db", "EDRI_NOTES_DB");
  CHECK(env("EDRI_NOTES_DB") == "/tmp/n.db");
  ::setenv("EDRI_NOTES_DB", "/tmp/env.db", 1);
  file.export_plugin_setting("notes", "db", "EDRI_NOTES_DB");
  CHECK(env("EDRI_NOTES_DB") == "/tmp/env.db");
}

TEST_CASE("an EDRI_ variable nobody declared is refused, with the nearest", "[config]") {
  const Unset unset({"EDRI_PROT", "EDRI_NOTES_BD"});
  // What the environment this test runs in holds (a harness's variable).
  std::vector<std::string> present;
  for (char** e = environ; *e; ++e)
    if (std::string_view(*e).rfind("EDRI_", 0) == 0) present.emplace_back(*e, std::strcspn(*e, "="));
  CHECK(error_of([&] { edri::check_unknown_variables(present); }) == "no error");
  ::setenv("EDRI_PROT", "1", 1);
  ::setenv("EDRI_NOTES_BD", "x", 1);
  present.emplace_back("EDRI_NOTES_DB");
  const auto said = error_of([&] { edri::check_unknown_variables(present); });
  CHECK(said.find("EDRI_PROT (did you mean EDRI_PORT?)") != std::string::npos);
  CHECK(said.find("EDRI_NOTES_BD (did you mean EDRI_NOTES_DB?)") != std::string::npos);
  ::unsetenv("EDRI_PROT");
  ::setenv("EDRI_INTERNAL_TOPOLOGY", "x", 1);  // the supervisor's, to its children
  present.emplace_back("EDRI_NOTES_BD");
  CHECK(error_of([&] { edri::check_unknown_variables(present); }) == "no error");
  ::unsetenv("EDRI_INTERNAL_TOPOLOGY");
}
