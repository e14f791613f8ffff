// HTTPS when EDRI_SSL_CERTIFICATE and EDRI_SSL_KEY are set.
#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>

#include "support/http_client.hpp"
#include "support/server_process.hpp"
#include "support/tls_client.hpp"

using namespace edri::test;
using nlohmann::json;

TEST_CASE("HTTPS through the whole pipeline", "[tls]") {
  SelfSignedCertificate cert;
  ServerProcess server({test_plugin_path("test_app")},
                       {{"EDRI_SSL_CERTIFICATE", cert.certificate}, {"EDRI_SSL_KEY", cert.key}});
  {
    TlsClient c(server.port());
    auto r = c.request("GET", "/hello/secure");
    CHECK(r.status == 200);
    CHECK(json::parse(r.body)["hello"] == "secure");
    // Keep-alive over TLS, a body, and a large answer across records.
    r = c.request("POST", "/echo", R"({"a":[1,2,3]})");
    CHECK(json::parse(r.body) == json{{"a", {1, 2, 3}}});
    r = c.request("GET", "/bytes/100000");
    CHECK(r.body.size() == 100000);
    CHECK(c.request("GET", "/nope").status == 404);
  }
  SECTION("plain HTTP on the TLS port is dropped; the server carries on") {
    HttpClient plain(server.port());
    plain.send_raw("GET /hello/x HTTP/1.1\r\nHost: x\r\n\r\n");
    CHECK(plain.closed_by_peer());
    TlsClient again(server.port());
    CHECK(again.request("GET", "/hello/again").status == 200);
  }
}

TEST_CASE("a bad certificate setting stops start-up, naming it", "[tls]") {
  SelfSignedCertificate cert, other;
  const auto plugins = test_plugin_path("test_app");
  auto r = run_server_to_exit({}, {{"EDRI_PLUGINS", plugins}, {"EDRI_SSL_CERTIFICATE", cert.certificate}});
  CHECK(r.status == 2);
  CHECK(r.err.find("EDRI_SSL_KEY") != std::string::npos);
  r = run_server_to_exit(
      {}, {{"EDRI_PLUGINS", plugins}, {"EDRI_SSL_CERTIFICATE", cert.certificate}, {"EDRI_SSL_KEY", other.key}});
  CHECK(r.status == 2);
  CHECK(r.err.find("EDRI_SSL_KEY=" + other.key) != std::string::npos);  // OpenSSL: key values mismatch
  std::ofstream(cert.dir + "/junk.pem") << "not a certificate";
  r = run_server_to_exit(
      {}, {{"EDRI_PLUGINS", plugins}, {"EDRI_SSL_CERTIFICATE", cert.dir + "/junk.pem"}, {"EDRI_SSL_KEY", cert.key}});
  CHECK(r.status == 2);
  CHECK(r.err.find("EDRI_SSL_CERTIFICATE") != std::string::npos);
}
