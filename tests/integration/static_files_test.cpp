// Static files from EDRI_ASSETS_PATH and from a plugin's assets folder:
// types, validators (304), ranges (206/416), HEAD, index.html, and no way
// out of the folder.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "support/http_client.hpp"
#include "support/server_process.hpp"
#include "support/test_helpers.hpp"

using namespace edri::test;
namespace fs = std::filesystem;

TEST_CASE("static files from EDRI_ASSETS_PATH", "[static]") {
  TempDir root, outside;
  root.write("hello.txt", "0123456789");
  root.write("docs/index.html", "<p>docs</p>");
  root.write("site.css", "a{}");
  outside.write("secret.txt", "do not serve");
  fs::create_symlink(outside.path / "secret.txt", root.path / "link-out.txt");
  ServerProcess server({test_plugin_path("test_app")}, {{"EDRI_ASSETS_PATH", root.path.string()}});
  HttpClient c(server.port());

  auto r = c.get("/hello.txt");
  REQUIRE(r.status == 200);
  CHECK(r.body == "0123456789");
  CHECK(r.header("content-type") == "text/plain; charset=utf-8");
  CHECK(r.header("accept-ranges") == "bytes");
  const auto etag = r.header("etag");
  const auto modified = r.header("last-modified");
  CHECK(etag.rfind("W/\"", 0) == 0);
  CHECK(!modified.empty());
  CHECK(c.get("/site.css").header("content-type") == "text/css; charset=utf-8");

  SECTION("validators answer 304") {
    r = c.request("GET", "/hello.txt", {}, "If-None-Match: " + etag + "\r\n");
    CHECK(r.status == 304);
    CHECK(r.body.empty());
    CHECK(c.request("GET", "/hello.txt", {}, "If-None-Match: \"other\"\r\n").status == 200);
    CHECK(c.request("GET", "/hello.txt", {}, "If-Modified-Since: " + modified + "\r\n").status == 304);
    CHECK(c.request("GET", "/hello.txt", {}, "If-Modified-Since: Thu, 01 Jan 1970 00:00:00 GMT\r\n").status == 200);
  }
  SECTION("ranges") {
    r = c.request("GET", "/hello.txt", {}, "Range: bytes=2-5\r\n");
    CHECK(r.status == 206);
    CHECK(r.body == "2345");
    CHECK(r.header("content-range") == "bytes 2-5/10");
    r = c.request("GET", "/hello.txt", {}, "Range: bytes=-3\r\n");
    CHECK(r.body == "789");
    r = c.request("GET", "/hello.txt", {}, "Range: bytes=7-\r\n");
    CHECK(r.body == "789");
    r = c.request("GET", "/hello.txt", {}, "Range: bytes=50-60\r\n");
    CHECK(r.status == 416);
    CHECK(r.header("content-range") == "bytes */10");
    CHECK(c.request("GET", "/hello.txt", {}, "Range: bytes=0-1,4-5\r\n").status == 200);  // several: whole file
  }
  SECTION("HEAD and directories") {
    r = c.request("HEAD", "/hello.txt");
    CHECK(r.status == 200);
    CHECK(r.header("content-length") == "10");
    CHECK(r.body.empty());
    CHECK(c.get("/docs/").body == "<p>docs</p>");
    CHECK(c.get("/docs").body == "<p>docs</p>");
  }
  SECTION("nothing outside the folder") {
    const std::vector<std::string> paths{"/../" + outside.path.filename().string() + "/secret.txt",
                                         "/%2e%2e/etc/passwd",
                                         "/docs/../../etc/passwd",
                                         "/link-out.txt",
                                         "/hello.txt%00.html",
                                         "/nope.txt"};
    for (const auto& path : paths) {
      INFO(path);
      r = c.get(path);
      CHECK(r.status == 404);
      CHECK(r.body.find("do not serve") == std::string::npos);
    }
  }
  SECTION("routes come first") { CHECK(c.get("/hello/world").body.find("world") != std::string::npos); }
}

TEST_CASE("a plugin's assets folder", "[static]") {
  ServerProcess server({test_plugin_path("test_app")});
  HttpClient c(server.port());
  auto r = c.get("/app/");
  CHECK(r.status == 200);
  CHECK(r.header("content-type") == "text/html; charset=utf-8");
  CHECK(r.body.find("plugin's assets folder") != std::string::npos);
  CHECK(c.get("/app").status == 200);
  CHECK(c.get("/app/style.css").header("content-type") == "text/css; charset=utf-8");
  CHECK(c.get("/app/missing.js").status == 404);
}

TEST_CASE("EDRI_ASSETS_PATH must be a folder", "[static]") {
  const auto r =
      run_server_to_exit({}, {{"EDRI_PLUGINS", test_plugin_path("test_app")}, {"EDRI_ASSETS_PATH", "/nonexistent"}});
  CHECK(r.status == 2);
  CHECK(r.err.find("EDRI_ASSETS_PATH") != std::string::npos);
}
