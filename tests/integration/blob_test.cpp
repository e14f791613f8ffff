// Large bodies through the blob area: written once into shared memory, the
// channels carry a handle, the last reader frees it, and the blobs of a
// process that dies come back.
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <csignal>
#include <nlohmann/json.hpp>
#include <string>

#include "support/http_client.hpp"
#include "support/server_process.hpp"
#include "support/test_helpers.hpp"

using namespace edri::test;
using nlohmann::json;

namespace {

// edri_blob_bytes{state="used"} from /metrics.
long blob_bytes_used(std::uint16_t port) {
  const auto body = http_get(port, "/metrics").body;
  const std::string key = "edri_blob_bytes{state=\"used\"} ";
  const auto at = body.find(key);
  return at == std::string::npos ? -1 : std::stol(body.substr(at + key.size()));
}

// Asks for `path` on a connection with a tiny receive window and never reads.
int stalled(std::uint16_t port, const std::string& path) {
  const int fd = connect_small_window(port);
  const std::string req = "GET " + path + " HTTP/1.1\r\nHost: x\r\n\r\n";
  REQUIRE(::send(fd, req.data(), req.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(req.size()));
  return fd;
}

}  // namespace

TEST_CASE("bodies larger than a channel record travel through the blob area, both ways", "[blob]") {
  ServerProcess server({test_plugin_path("test_app")}, {{"EDRI_MAX_BODY_SIZE", "8000000"}});
  HttpClient c(server.port(), 20000);
  // 5 MB from a handler: five times what a 4 MiB ring's record may carry.
  auto r = c.get("/bytes/5000000");
  REQUIRE(r.status == 200);
  REQUIRE(r.body.size() == 5000000);
  bool intact = true;
  for (std::size_t i = 0; i < r.body.size(); ++i) intact = intact && r.body[i] == static_cast<char>(i % 251);
  CHECK(intact);
  // A 900 kB request body (below EDRI_UPLOAD_THRESHOLD: in the blob area)
  // to the handler and back.
  std::string big = "[";
  while (big.size() < 900000) big += "\"abcdefghijklmnopqrstuvwxyz0123456789\",";
  big.back() = ']';
  r = c.request("POST", "/echo", big);
  CHECK(r.status == 200);
  CHECK(r.body == big);
  // Small bodies stay in the record, and every blob was freed by its last reader.
  CHECK(c.get("/bytes/100").body.size() == 100);
  CHECK(eventually([&] { return blob_bytes_used(server.port()) == 0; }));
}

TEST_CASE("a holder that dies gives its blobs back: a full blob area is a clear 503", "[blob]") {
  ServerProcess server({test_plugin_path("test_app")}, {{"EDRI_BLOB_BYTES", "8388608"}});
  CHECK(blob_bytes_used(server.port()) == 0);
  // The listener holds a 6 MB answer for a client that does not read it.
  const int fd = stalled(server.port(), "/bytes/6000000");
  REQUIRE(eventually([&] { return blob_bytes_used(server.port()) >= 6000000; }));
  // No room for another one meanwhile: 503, and the server goes on.
  auto r = http_get(server.port(), "/bytes/6000000");
  CHECK(r.status == 503);
  CHECK(json::parse(r.body)["detail"].get<std::string>().find("blob area is full") != std::string::npos);
  r = http_get(server.port(), "/bytes/20000000");
  CHECK(r.status == 500);
  CHECK(json::parse(r.body)["detail"].get<std::string>().find("EDRI_BLOB_BYTES") != std::string::npos);
  CHECK(http_get(server.port(), "/hello/small").status == 200);

  // Kill the holder: the supervisor frees what it held, and the space
  // serves the next large answer.
  const pid_t listener = server.child("listener");
  ::kill(listener, SIGKILL);
  CHECK(eventually([&] { return blob_bytes_used(server.port()) == 0; }, std::chrono::milliseconds(10000)));
  CHECK(server.log().find("of blobs held by pid " + std::to_string(listener)) != std::string::npos);
  ::close(fd);
  r = http_get(server.port(), "/bytes/6000000");
  CHECK(r.status == 200);
  CHECK(r.body.size() == 6000000);
}

TEST_CASE("a client that goes away frees the blob it was being sent", "[blob]") {
  ServerProcess server({test_plugin_path("test_app")});
  const int fd = stalled(server.port(), "/bytes/4000000");
  REQUIRE(eventually([&] { return blob_bytes_used(server.port()) >= 4000000; }));
  ::close(fd);
  CHECK(eventually([&] { return blob_bytes_used(server.port()) == 0; }));
}
