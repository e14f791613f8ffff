// Outbound HTTP from a coroutine handler (Context::fetch, decision 0030)
// through the real server, against a real nginx: connections reused per
// origin, the request id sent along, HTTP/2 and verified TLS where nginx
// offers them; and a server that never answers, an answer over the
// limit, a refused port, a certificate from the wrong authority.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>

#include "support/http_client.hpp"
#include "support/nginx_process.hpp"
#include "support/server_process.hpp"
#include "support/test_helpers.hpp"
#include "support/tls_client.hpp"

using namespace edri::test;
using nlohmann::json;

namespace {

// nginx serving small.txt and big.txt, logging each request's connection
// number, its place on that connection, its protocol and X-Request-Id;
// with `tls`, over TLS (and HTTP/2) with that certificate.
NginxProcess files_server(const SelfSignedCertificate* tls = nullptr) {
  return NginxProcess([tls](std::uint16_t port, const std::string& dir) {
    std::string conf =
        "http {\n  log_format calls '$connection $connection_requests $server_protocol $http_x_request_id';\n";
    conf += "  access_log " + dir + "/access.log calls;\n  server {\n";
    if (tls)
      conf += "    listen 127.0.0.1:" + std::to_string(port) + " ssl http2;\n    ssl_certificate " + tls->certificate +
              ";\n    ssl_certificate_key " + tls->key + ";\n";
    else
      conf += "    listen 127.0.0.1:" + std::to_string(port) + ";\n";
    conf += "    root " + dir + "/www;\n  }\n}\n";
    std::filesystem::create_directories(dir + "/www");
    std::ofstream(dir + "/www/small.txt") << "hello from nginx";
    std::ofstream(dir + "/www/big.txt") << std::string(1000, 'b');
    return conf;
  });
}

std::vector<std::vector<std::string>> access_log(const NginxProcess& nginx) {
  std::vector<std::vector<std::string>> lines;
  std::istringstream in(read_file((nginx.dir().path / "access.log").string()));
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line);
    std::vector<std::string> w;
    for (std::string x; words >> x;) w.push_back(x);
    lines.push_back(w);
  }
  return lines;
}

json fetch(const ServerProcess& server, const std::string& path) {
  const auto r = http_get(server.port(), path);
  REQUIRE(r.status == 200);
  return json::parse(r.body);
}

}  // namespace

TEST_CASE("outbound HTTP from a handler reuses its connection and sends the request id", "[http_client]") {
  NginxProcess nginx = files_server();
  ServerProcess server({test_plugin_path("coroutines")});
  const std::string path = "/co/fetch/" + std::to_string(nginx.port()) + "/small.txt";
  for (int i = 0; i < 5; ++i) {
    const auto j = fetch(server, path);
    CHECK(j["status"] == 200);
    CHECK(j["body"] == "hello from nginx");
    CHECK(j["server"].get<std::string>().rfind("nginx", 0) == 0);
  }
  const auto lines = access_log(nginx);
  REQUIRE(lines.size() == 5);
  std::set<std::string> connections;
  for (const auto& w : lines) {
    REQUIRE(w.size() == 4);
    connections.insert(w[0]);
    CHECK(w[2] == "HTTP/1.1");
    CHECK(w[3].size() == 33);  // the edri request's id, 16 hex digits, '-', 16 more
  }
  CHECK(connections.size() == 1);  // one connection, five requests on it
  CHECK(lines.back()[1] == "5");
}

TEST_CASE("outbound HTTP ends with a clear error: no answer, too large, refused", "[http_client]") {
  NginxProcess nginx = files_server();
  ServerProcess server({test_plugin_path("coroutines")});
  // A server that takes connections (the kernel's backlog) and never answers.
  const int silent = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(silent, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  REQUIRE(::listen(silent, 8) == 0);
  socklen_t len = sizeof a;
  ::getsockname(silent, reinterpret_cast<sockaddr*>(&a), &len);
  const auto silent_port = std::to_string(ntohs(a.sin_port));

  auto j = fetch(server, "/co/fetch-within/300/" + silent_port + "/x");
  CHECK(j["status"] == 0);
  CHECK(j["error"].get<std::string>().find("timed out") != std::string::npos);
  j = fetch(server, "/co/fetch-max/10/" + std::to_string(nginx.port()) + "/big.txt");
  CHECK(j["status"] == 0);
  CHECK(j["error"] == "the answer passed 10 bytes");
  ::close(silent);  // nothing listens there now
  j = fetch(server, "/co/fetch/" + silent_port + "/x");
  CHECK(j["status"] == 0);
  CHECK_FALSE(j["error"].get<std::string>().empty());
}

TEST_CASE("outbound HTTPS is verified, and speaks HTTP/2 where the server offers it", "[http_client]") {
  SelfSignedCertificate cert, other;
  NginxProcess nginx = files_server(&cert);
  const std::string path = "/co/fetchs/" + std::to_string(nginx.port()) + "/small.txt";
  {
    ServerProcess server({test_plugin_path("coroutines")}, {{"EDRI_HTTP_CLIENT_CA_FILE", cert.certificate}});
    const auto j = fetch(server, path);
    CHECK(j["status"] == 200);
    CHECK(j["body"] == "hello from nginx");
    const auto lines = access_log(nginx);
    REQUIRE(lines.size() == 1);
    CHECK(lines[0][2] == "HTTP/2.0");
  }
  ServerProcess server({test_plugin_path("coroutines")}, {{"EDRI_HTTP_CLIENT_CA_FILE", other.certificate}});
  const auto j = fetch(server, path);
  CHECK(j["status"] == 0);
  CHECK(j["error"].get<std::string>().find("certificate") != std::string::npos);
}
