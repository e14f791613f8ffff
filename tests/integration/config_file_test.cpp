// The config file (edri-server --config FILE, docs/configuration.md):
// the server's settings and each plugin's section in TOML, under the
// environment and the command line; and every name the server does not
// know (a key, a section, a variable, an option) stopping start-up with
// the nearest one it does.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "support/http_client.hpp"
#include "support/server_process.hpp"
#include "support/test_helpers.hpp"

using namespace edri::test;
using nlohmann::json;

namespace {

std::string write_file(const TempDir& dir, const std::string& name, const std::string& text) {
  const auto path = (dir.path / name).string();
  std::ofstream(path) << text;
  return path;
}

// --print-config's value of `variable`, with this file and these words.
std::string printed(const std::string& variable, const std::vector<std::string>& args,
                    const std::map<std::string, std::string>& env = {}) {
  std::vector<std::string> all = args;
  all.emplace_back("--print-config");
  const auto r = run_server_to_exit(all, env);
  REQUIRE(r.status == 0);
  const auto at = r.out.find(variable + "=");
  REQUIRE(at != std::string::npos);
  return r.out.substr(at + variable.size() + 1, r.out.find('\n', at) - at - variable.size() - 1);
}

}  // namespace

TEST_CASE("a config file sets the server's settings and a plugin's section", "[config]") {
  TempDir dir;
  const auto db = (dir.path / "from-file.db").string();
  const auto log = (dir.path / "access.log").string();
  const auto file = write_file(dir, "edri.toml",
                               "max_body_size = 300\n"
                               "access_log = \"json\"\n"
                               "access_log_path = \"" +
                                   log +
                                   "\"\n"
                                   "compression_types = [\"text/plain\"]\n"
                                   "[plugin.notes]\n"
                                   "db = \"" +
                                   db + "\"\n");
  ServerProcess server{{plugin_path("notes")}, {}, {}, {"--config", file}};
  // A 413 closes its connection: each request on a connection of its own.
  CHECK(HttpClient(server.port())
            .request("POST", "/notes", json{{"title", "t"}, {"body", std::string(400, 'b')}}.dump())
            .status == 413);
  CHECK(HttpClient(server.port()).request("POST", "/notes", json{{"title", "t"}, {"body", "small"}}.dump()).status ==
        201);
  CHECK(std::filesystem::exists(db));  // the plugin's section reached the notes manager
  CHECK(eventually([&] { return file_lines(log).size() == 2; }));
  CHECK(json::parse(file_lines(log).back())["status"] == 201);
}

TEST_CASE("the command line wins over the environment, which wins over the file", "[config]") {
  TempDir dir;
  const auto file = write_file(dir, "edri.toml",
                               "max_body_size = 100\nmax_pipeline = 7\nwebsocket_deflate = true\n"
                               "databases = { a = \"sqlite:/tmp/a.db\", b = \"sqlite:/tmp/b.db\" }\n");
  const std::vector<std::string> args = {"--config", file};
  CHECK(printed("EDRI_MAX_BODY_SIZE", args) == "100");
  CHECK(printed("EDRI_WEBSOCKET_DEFLATE", args) == "1");
  CHECK(printed("EDRI_DATABASES", args) == "a=sqlite:/tmp/a.db b=sqlite:/tmp/b.db");
  CHECK(printed("EDRI_MAX_BODY_SIZE", args, {{"EDRI_MAX_BODY_SIZE", "200"}}) == "200");
  CHECK(printed("EDRI_MAX_PIPELINE", args, {{"EDRI_MAX_BODY_SIZE", "200"}}) == "7");
  CHECK(printed("EDRI_MAX_BODY_SIZE", {"--config", file, "--max-body-size", "300"}, {{"EDRI_MAX_BODY_SIZE", "200"}}) ==
        "300");
  CHECK(printed("EDRI_MAX_BODY_SIZE", {"--max_body_size=400"}) == "400");
}

TEST_CASE("the file print-config-toml writes configures the same server", "[config]") {
  TempDir dir;
  const std::map<std::string, std::string> env = {{"EDRI_PLUGINS", plugin_path("notes")},
                                                  {"EDRI_MAX_BODY_SIZE", "1234"},
                                                  {"EDRI_CORS_ORIGINS", "https://a.test,https://b.test"},
                                                  {"EDRI_NOTES_DB", "/tmp/x \"quoted\".db"}};
  const auto toml = run_server_to_exit({"--print-config-toml"}, env);
  REQUIRE(toml.status == 0);
  CHECK(toml.out.find("[plugin.notes]\ndb = ") != std::string::npos);
  const auto file = write_file(dir, "round.toml", toml.out);
  const auto from_env = run_server_to_exit({"--print-config"}, env);
  const auto from_file = run_server_to_exit({"--config", file, "--print-config"}, {});
  REQUIRE(from_file.status == 0);
  CHECK(from_file.out == from_env.out);
}

TEST_CASE("a name the server does not know stops start-up with the nearest it does", "[config]") {
  TempDir dir;
  const auto plugins = plugin_path("notes");
  struct Case {
    std::string file;
    std::vector<std::string> args;
    std::map<std::string, std::string> env;
    std::string said;
  };
  const std::vector<Case> cases = {
      {"prot = 8081\n", {}, {}, "prot is not a setting (did you mean port?)"},
      {"port = \"http\"\n", {}, {}, "edri.toml: port=http: not an integer"},
      {"compression = \"yes\"\nmax_pipeline = true\n", {}, {}, "max_pipeline is not a flag"},
      {"port = 80\nport = 81\n", {}, {}, "not valid TOML"},
      {"[plugin.note]\ndb = \"x\"\n", {}, {}, "[plugin.note]: no plugin loaded has that name (did you mean notes?)"},
      {"[plugin.notes]\nbd = \"x\"\n",
       {},
       {},
       "[plugin.notes] bd: not a setting plugin notes declares (did you mean db?)"},
      {"", {"--prot", "1"}, {}, "--prot is not an option (did you mean --port?)"},
      {"", {"--port"}, {}, "--port needs a value"},
      {"", {}, {{"EDRI_PROT", "1"}}, "EDRI_PROT (did you mean EDRI_PORT?)"},
      {"", {}, {{"EDRI_NOTES_BD", "x"}}, "EDRI_NOTES_BD (did you mean EDRI_NOTES_DB?)"},
  };
  for (const auto& c : cases) {
    INFO(c.said);
    std::vector<std::string> args = c.args;
    if (!c.file.empty()) {
      args.emplace_back("--config");
      args.push_back(write_file(dir, "edri.toml", c.file));
    }
    auto env = c.env;
    env.emplace("EDRI_PLUGINS", plugins);
    env.emplace("EDRI_NOTES_DB", (dir.path / "n.db").string());
    const auto r = run_server_to_exit(args, env);
    CHECK(r.status == 2);
    CHECK(r.err.find(c.said) != std::string::npos);
    CHECK(r.out.find("listening") == std::string::npos);
  }
}
