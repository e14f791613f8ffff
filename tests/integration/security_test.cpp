// What an attacker on the same host or on the wire must not get: another
// instance's shared memory, a plugin that is not the configured file, or a
// plugin file anyone could have replaced. (Internal error text in
// production: http_test; static files outside their folder:
// static_files_test; shared memory mode 0600: pipeline_test.)
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <iterator>

#include "support/http_client.hpp"
#include "support/server_process.hpp"
#include "support/test_helpers.hpp"

using namespace edri::test;
namespace fs = std::filesystem;

TEST_CASE("two instances each have their own shared memory, 0600, and never touch each other's", "[security]") {
  ServerProcess first({plugin_path("bench_app")});
  const auto first_segments = shm_segments(first.segment_prefix());
  REQUIRE(first_segments.size() == 1);
  {
    // The second start cleans up what dead instances left; a live one's
    // segment is not that.
    ServerProcess second({plugin_path("bench_app")});
    const auto second_segments = shm_segments(second.segment_prefix());
    REQUIRE(second_segments.size() == 1);
    CHECK(second_segments != first_segments);
    CHECK(shm_segments(first.segment_prefix()) == first_segments);
    for (const auto& name : {first_segments[0], second_segments[0]}) {
      struct stat st {};
      REQUIRE(::stat(("/dev/shm/" + name).c_str(), &st) == 0);
      CHECK((st.st_mode & 0777) == 0600);
    }
    CHECK(http_get(first.port(), "/noop").status == 200);
    CHECK(http_get(second.port(), "/noop").status == 200);
    // Each names its own segment in its processes' environment only: the
    // second's children never map the first's.
    for (const auto& c : second.children()) {
      const auto maps = read_file("/proc/" + std::to_string(c.pid) + "/maps");
      CHECK(maps.find(first_segments[0]) == std::string::npos);
      CHECK(maps.find(second_segments[0]) != std::string::npos);
    }
  }
  CHECK(shm_segments(first.segment_prefix()) == first_segments);
  CHECK(http_get(first.port(), "/noop").status == 200);
}

TEST_CASE("plugins load only from the file configured, and not when anyone may have written it", "[security]") {
  SECTION("a bare name would be searched for in the library path: refused") {
    const auto r = run_server_to_exit({}, {{"EDRI_PLUGINS", "test_app.so"},
                                           {"LD_LIBRARY_PATH", fs::path(test_plugin_path("test_app")).parent_path()}});
    CHECK(r.status != 0);
    CHECK(r.err.find("not a path") != std::string::npos);
  }
  TempDir dir;
  const auto copy = dir.path / "test_app.so";
  fs::copy_file(test_plugin_path("test_app"), copy);
  // What test_app serves and renders lives beside it.
  const auto plugins = fs::path(test_plugin_path("test_app")).parent_path();
  for (const char* folder : {"test_app_assets", "templates"})
    fs::copy(plugins / folder, dir.path / folder, fs::copy_options::recursive);
  SECTION("a world-writable plugin file: refused") {
    fs::permissions(copy, fs::perms::others_write, fs::perm_options::add);
    const auto r = run_server_to_exit({}, {{"EDRI_PLUGINS", copy.string()}});
    CHECK(r.status != 0);
    CHECK(r.err.find("anyone may write it") != std::string::npos);
  }
  SECTION("in a world-writable folder: refused") {
    fs::permissions(dir.path, fs::perms::others_all, fs::perm_options::add);
    const auto r = run_server_to_exit({}, {{"EDRI_PLUGINS", copy.string()}});
    CHECK(r.status != 0);
    CHECK(r.err.find("may be written by anyone") != std::string::npos);
  }
  SECTION("the same file, private: served") {
    ServerProcess server({copy.string()});
    CHECK(http_get(server.port(), "/hello/safe").status == 200);
  }
}
