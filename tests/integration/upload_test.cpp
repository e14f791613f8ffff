// Uploads: a request body larger than EDRI_UPLOAD_THRESHOLD is written to a
// file under EDRI_UPLOAD_FILES_PATH as it arrives; the handler sees it
// mapped, may keep it, and the file is removed when the request ends.
// multipart/form-data bodies are split into their parts. Limits hold while
// the body arrives.
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "support/http_client.hpp"
#include "support/server_process.hpp"
#include "support/test_helpers.hpp"

using namespace edri::test;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

std::string fnv(std::string_view d) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : d) h = (h ^ c) * 1099511628211ull;
  return std::to_string(h);
}

std::string pattern(std::size_t n, unsigned seed = 7) {
  std::string s(n, '\0');
  for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * seed + i / 4096) % 256);
  return s;
}

std::size_t files_in(const std::string& dir) {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++n;
  return n;
}

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

json post(HttpClient& c, const std::string& body, const std::string& type = "application/octet-stream",
          const std::string& extra = {}) {
  c.send_raw("POST /upload HTTP/1.1\r\nHost: x\r\nContent-Type: " + type +
             "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n" + extra + "\r\n" + body);
  const auto r = c.read_response();
  INFO(r.body);
  REQUIRE(r.status == 200);
  return json::parse(r.body);
}

}  // namespace

TEST_CASE("a large body is written to a file as it arrives, mapped for the handler and removed after", "[upload]") {
  TempDir uploads;
  ServerProcess server({test_plugin_path("test_app")},
                       {{"EDRI_UPLOAD_FILES_PATH", uploads.path.string()}, {"EDRI_MAX_BODY_SIZE", "50000000"}});
  HttpClient c(server.port(), 20000);
  // Small: in memory, as before.
  auto j = post(c, pattern(1000));
  CHECK(j["size"] == 1000);
  CHECK(j["file"] == "");
  // 5 MB (the default threshold is 1 MiB): a file, named for its listener.
  const std::string big = pattern(5000000);
  j = post(c, big);
  CHECK(j["size"] == 5000000);
  CHECK(j["sum"] == fnv(big));
  CHECK(j["type"] == "application/octet-stream");
  const std::string file = j["file"];
  CHECK(file.rfind(uploads.path.string() + "/edri-upload-" + std::to_string(server.child("listener")) + "-", 0) == 0);
  CHECK(j["file_existed"] == true);
  CHECK(eventually([&] { return files_in(uploads.path.string()) == 0; }));

  // Chunked, 3 MB in 256 kB chunks: the same.
  const std::string chunked_body = pattern(3000000, 13);
  std::string req = "POST /upload HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
  for (std::size_t at = 0; at < chunked_body.size(); at += 262144) {
    const auto part = chunked_body.substr(at, 262144);
    char hex[16];
    std::snprintf(hex, sizeof hex, "%zx", part.size());
    req += std::string(hex) + "\r\n" + part + "\r\n";
  }
  c.send_raw(req + "0\r\n\r\n");
  auto r = c.read_response();
  REQUIRE(r.status == 200);
  j = json::parse(r.body);
  CHECK(j["size"] == 3000000);
  CHECK(j["sum"] == fnv(chunked_body));
  CHECK(j["file"] != "");
  CHECK(eventually([&] { return files_in(uploads.path.string()) == 0; }));
}

TEST_CASE("a handler keeps an upload by moving it: what it does not keep is removed", "[upload]") {
  TempDir uploads, kept;
  ServerProcess server({test_plugin_path("test_app")},
                       {{"EDRI_UPLOAD_FILES_PATH", uploads.path.string()}, {"EDRI_MAX_BODY_SIZE", "50000000"}});
  HttpClient c(server.port(), 20000);
  const std::string big = pattern(4000000);
  const std::string dest = kept.path.string() + "/kept.bin";
  auto j = post(c, big, "application/octet-stream", "X-Keep-To: " + dest + "\r\n");
  CHECK(j["kept"] == true);
  CHECK(read_all(dest) == big);
  CHECK(eventually([&] { return files_in(uploads.path.string()) == 0; }));
  // A small body is kept by writing it out.
  j = post(c, "small body", "text/plain", "X-Keep-To: " + kept.path.string() + "/small.txt\r\n");
  CHECK(j["kept"] == true);
  CHECK(read_all(kept.path.string() + "/small.txt") == "small body");
}

TEST_CASE("multipart/form-data bodies reach the handler as parts, large or small", "[upload]") {
  TempDir uploads, kept;
  ServerProcess server({test_plugin_path("test_app")},
                       {{"EDRI_UPLOAD_FILES_PATH", uploads.path.string()}, {"EDRI_MAX_BODY_SIZE", "50000000"}});
  HttpClient c(server.port(), 20000);
  for (const std::size_t size : {std::size_t{2000}, std::size_t{3000000}}) {
    const std::string data = pattern(size, 11);
    const std::string boundary = "----edri-test-7MA4YWxkTrZu0gW";
    const std::string body = "--" + boundary +
                             "\r\nContent-Disposition: form-data; name=\"title\"\r\n\r\nhello; world\r\n--" + boundary +
                             "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a;b.bin\"\r\n"
                             "Content-Type: application/x-test\r\n\r\n" +
                             data + "\r\n--" + boundary + "--\r\n";
    const std::string dest = kept.path.string() + "/part-" + std::to_string(size);
    auto j = post(c, body, "multipart/form-data; boundary=\"" + boundary + "\"", "X-Keep-To: " + dest + "\r\n");
    INFO(j.dump());
    REQUIRE(j["parts"].size() == 2);
    CHECK(j["parts"][0]["name"] == "title");
    CHECK(j["parts"][0]["filename"] == "");
    CHECK(j["parts"][0]["text"] == "hello; world");
    CHECK(j["parts"][1]["name"] == "file");
    CHECK(j["parts"][1]["filename"] == "a;b.bin");
    CHECK(j["parts"][1]["type"] == "application/x-test");
    CHECK(j["parts"][1]["size"] == size);
    CHECK(j["parts"][1]["sum"] == fnv(data));
    CHECK(j["file"] == (size > 1048576 ? j["file"] : json("")));
    CHECK((size > 1048576) == (j["file"] != ""));
    CHECK(j["kept"] == true);
    CHECK(read_all(dest) == data);
  }
  CHECK(eventually([&] { return files_in(uploads.path.string()) == 0; }));
  // A malformed one never reaches the handler.
  const std::string bad = "--xyz\r\nno-colon\r\n\r\n";
  c.send_raw("POST /upload HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=xyz\r\nContent-Length: " +
             std::to_string(bad.size()) + "\r\n\r\n" + bad);
  auto r = c.read_response();
  CHECK(r.status == 400);
  CHECK(r.body.find("multipart") != std::string::npos);
}

TEST_CASE("the body limit holds while the body arrives: 413 before the rest is sent, and nothing left behind",
          "[upload]") {
  TempDir uploads;
  ServerProcess server({test_plugin_path("test_app")},
                       {{"EDRI_UPLOAD_FILES_PATH", uploads.path.string()}, {"EDRI_MAX_BODY_SIZE", "2000000"}});
  {
    // A declared length past the limit: answered at the headers.
    HttpClient c(server.port(), 5000);
    c.send_raw("POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 3000000\r\n\r\n");
    const auto r = c.read_response();
    CHECK(r.status == 413);
    CHECK(c.closed_by_peer());
  }
  {
    // Chunked: 3 chunks of 1 MB and no end. The 413 comes once the limit is
    // passed; a server that buffered to the end would never answer.
    HttpClient c(server.port(), 5000);
    const std::string mb = pattern(1000000);
    std::string req = "POST /upload HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
    for (int i = 0; i < 3; ++i) req += "f4240\r\n" + mb + "\r\n";
    c.send_raw(req);
    const auto r = c.read_response();
    CHECK(r.status == 413);
  }
  // The partial file of the refused body is gone.
  CHECK(eventually([&] { return files_in(uploads.path.string()) == 0; }));
  CHECK(http_get(server.port(), "/hello/there").status == 200);
}

TEST_CASE("upload files of a listener that dies, or of an earlier run, are removed", "[upload]") {
  TempDir uploads;
  // Left by a listener of an earlier run: its pid is no process now.
  const std::string stale = uploads.path.string() + "/edri-upload-2147483000-1";
  std::ofstream(stale) << "left behind";
  ServerProcess server({test_plugin_path("test_app")},
                       {{"EDRI_UPLOAD_FILES_PATH", uploads.path.string()}, {"EDRI_MAX_BODY_SIZE", "50000000"}});
  CHECK_FALSE(fs::exists(stale));
  // Half of a 10 MB body, then the listener is killed.
  HttpClient c(server.port(), 5000);
  c.send_raw("POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 10000000\r\n\r\n" + pattern(5000000));
  REQUIRE(eventually([&] { return files_in(uploads.path.string()) == 1; }));
  const pid_t listener = server.child("listener");
  ::kill(listener, SIGKILL);
  CHECK(eventually([&] { return files_in(uploads.path.string()) == 0; }));
  CHECK(eventually(
      [&] { return server.log().find("upload files left by pid " + std::to_string(listener)) != std::string::npos; }));
  CHECK(eventually([&] { return http_get(server.port(), "/hello/there").status == 200; }));
}

TEST_CASE("an upload directory that cannot be used stops start-up", "[upload]") {
  TempDir dir;
  const std::string file = dir.path.string() + "/not-a-dir";
  std::ofstream(file) << "x";
  const auto r = run_server_to_exit(
      {}, {{"EDRI_PLUGINS", test_plugin_path("test_app")}, {"EDRI_UPLOAD_FILES_PATH", file + "/uploads"}});
  CHECK(r.status != 0);
  CHECK(r.err.find("EDRI_UPLOAD_FILES_PATH") != std::string::npos);
}

TEST_CASE("a large JSON body to a route that declares it is checked from its file", "[upload]") {
  TempDir uploads;
  ServerProcess server({test_plugin_path("test_app")},
                       {{"EDRI_UPLOAD_FILES_PATH", uploads.path.string()}, {"EDRI_MAX_BODY_SIZE", "8000000"}});
  HttpClient c(server.port(), 20000);
  std::string big = "[";
  while (big.size() < 3000000) big += "\"abcdefghijklmnopqrstuvwxyz0123456789\",";
  big.back() = ']';
  auto r = c.request("POST", "/json-echo", big);
  CHECK(r.status == 200);
  CHECK(r.body == big);
  // Not JSON: refused by the listener, from the file, before any manager.
  big.back() = ',';
  r = c.request("POST", "/json-echo", big);
  CHECK(r.status == 400);
  CHECK(eventually([&] { return files_in(uploads.path.string()) == 0; }));
}
