#include "runtime/new_project.hpp"

#include <filesystem>
#include <fstream>
#include <utility>

namespace edri {

namespace {

namespace fs = std::filesystem;

// @NAME@ and @VERSION@ in the files below are the project's.
constexpr const char* kCMakeLists = R"(# @NAME@: an edri plugin and its test (made by edri-server --new).
#   cmake -S . -B build -DCMAKE_PREFIX_PATH=<edri's prefix: /usr for the .deb>
#   cmake --build build && ctest --test-dir build --output-on-failure
cmake_minimum_required(VERSION 3.20)
project(@NAME@ CXX)

# edri::api (the plugin API) and edri::testing (the test client).
find_package(edri @VERSION@ REQUIRED COMPONENTS testing)
find_package(Catch2 2 REQUIRED)

# build/@NAME@.so, what EDRI_PLUGINS names.
edri_add_plugin(@NAME@ SOURCES @NAME@.cpp)

enable_testing()
add_executable(@NAME@_test @NAME@_test.cpp)
target_link_libraries(@NAME@_test PRIVATE edri::testing Catch2::Catch2)
target_compile_definitions(@NAME@_test PRIVATE PLUGIN_FILE="$<TARGET_FILE:@NAME@>")
add_dependencies(@NAME@_test @NAME@)
add_test(NAME @NAME@_test COMMAND @NAME@_test)
)";

constexpr const char* kPlugin = R"(// @NAME@: an edri plugin (made by edri-server --new).
#include <edri/plugin.hpp>

#include <string>

namespace {

// The event's name, written once: the route and its answers refer to it.
constexpr edri::EventName kHello{"@NAME@.hello"};

// ?name=Ann: 1 to 64 characters, "world" when none is given. The server
// checks it before the handler runs: anything else is a 422 naming it.
const auto name = edri::query<std::string>("name").length(1, 64).default_to("world");

// What GET /@NAME@/hello answers: {"hello":"Ann"}, described once for
// the answer and for /openapi.json.
struct Greeting {
  std::string hello;
};
const edri::Model<Greeting> greeting{edri::member(&Greeting::hello, "hello")};

edri::Response hello(const edri::Request& req, edri::Context&) {
  return edri::Response::json(greeting.to_json(Greeting{req.get(name)}));
}

void register_@NAME@(edri::Registry& r) {
  r.domain("@NAME@");
  r.get("/@NAME@/hello", kHello, hello, {name});
  r.answers(kHello, 200, "the greeting", greeting);
}

}  // namespace

EDRI_PLUGIN("@NAME@", register_@NAME@)
)";

constexpr const char* kTest = R"(// @NAME@.so's route, tested in this process by edri's test client: the
// route table, the declared field's check and the handler, no server.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>

#include <edri/testing.hpp>

#include <string>

using edri::testing::body_json;
using nlohmann::json;

TEST_CASE("GET /@NAME@/hello greets by name, or the world") {
  edri::testing::TestClient client({PLUGIN_FILE});
  CHECK(body_json(client.get("/@NAME@/hello?name=Ann")) == json{{"hello", "Ann"}});
  CHECK(body_json(client.get("/@NAME@/hello")) == json{{"hello", "world"}});
}

TEST_CASE("a name of over 64 characters is refused before the handler runs") {
  edri::testing::TestClient client({PLUGIN_FILE});
  const edri::Response r = client.get("/@NAME@/hello?name=" + std::string(65, 'x'));
  CHECK(r.status.code == 422);
  CHECK(body_json(r).at("errors")[0].at("field") == "name");
}
)";

constexpr const char* kReadme = R"(# @NAME@

An edri plugin, made by `edri-server --new @NAME@`.

Build it and run its test (`-DCMAKE_PREFIX_PATH` names where edri is
installed: `/usr` for the .deb, else the prefix of `cmake --install`):

    cmake -S . -B build -DCMAKE_PREFIX_PATH=/usr
    cmake --build build && ctest --test-dir build --output-on-failure

Serve it, reloaded each time a build writes `build/@NAME@.so`:

    EDRI_PLUGINS=$PWD/build/@NAME@.so edri-server --reload-on-change on
    curl 'http://127.0.0.1:8080/@NAME@/hello?name=Ann'
    curl 'http://127.0.0.1:8080/openapi.json'

`@NAME@.cpp` declares the route and its field; `@NAME@_test.cpp` tests
it with the test client (`edri/testing.hpp`), in-process. edri's
docs/writing-a-plugin.md (installed in /usr/share/doc/edri) goes on from
here: coroutines, databases, WebSocket commands, gRPC, middleware.
)";

constexpr const char* kGitignore = "build/\n";

std::string filled(std::string text, const std::string& name, const std::string& version) {
  for (const auto& [key, value] : {std::pair<std::string, std::string>{"@NAME@", name}, {"@VERSION@", version}})
    for (auto at = text.find(key); at != std::string::npos; at = text.find(key, at + value.size()))
      text.replace(at, key.size(), value);
  return text;
}

void check_folder(const fs::path& dir) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) return;
  if (!fs::is_directory(dir, ec)) throw NewProjectError(dir.string() + " exists and is not a folder");
  if (!fs::is_empty(dir, ec)) throw NewProjectError(dir.string() + " exists and is not empty: nothing was written");
}

}  // namespace

bool is_project_name(const std::string& name) {
  if (name.empty() || name.size() > 64 || name[0] < 'a' || name[0] > 'z') return false;
  for (const char c : name)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  return true;
}

std::vector<std::string> write_new_project(const std::string& name, const std::string& dir,
                                           const std::string& version) {
  if (!is_project_name(name))
    throw NewProjectError("'" + name + "' is not a project name: a lower-case letter, then up to 63 of a-z 0-9 _");
  const fs::path root(dir);
  check_folder(root);
  fs::create_directories(root);
  const std::pair<std::string, const char*> files[] = {{"CMakeLists.txt", kCMakeLists},
                                                       {name + ".cpp", kPlugin},
                                                       {name + "_test.cpp", kTest},
                                                       {"README.md", kReadme},
                                                       {".gitignore", kGitignore}};
  std::vector<std::string> written;
  for (const auto& [file, text] : files) {
    const fs::path path = root / file;
    std::ofstream out(path);
    out << filled(text, name, version);
    if (!out.flush()) throw NewProjectError("cannot write " + path.string());
    written.push_back(path.string());
  }
  return written;
}

}  // namespace edri
