#include <stdlib.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "runtime/config.hpp"
#include "support/test_helpers.hpp"

using edri::Config;
using edri::ConfigError;
using edri::test::EnvVar;

TEST_CASE("defaults and overrides", "[config]") {
  {
    const auto c = Config::from_env();
    CHECK(c.port == 8080);
    CHECK(c.host == "127.0.0.1");
    CHECK_FALSE(c.production);
    CHECK(c.placement == Config::Placement::Auto);
    CHECK(c.describe().find("EDRI_CPUS=auto\n") != std::string::npos);
  }
  {
    EnvVar one("EDRI_CPUS", "one");
    CHECK(Config::from_env().placement == Config::Placement::One);
  }
  {
    CHECK(Config::from_env().listener_workers_auto);
    CHECK(Config::from_env().describe().find("EDRI_LISTENER_WORKERS=auto\n") != std::string::npos);
    EnvVar three("EDRI_LISTENER_WORKERS", "3");
    const auto c = Config::from_env();
    CHECK_FALSE(c.listener_workers_auto);
    CHECK(c.listener_workers == 3);
    CHECK(c.describe().find("EDRI_LISTENER_WORKERS=3\n") != std::string::npos);
  }
  EnvVar a("EDRI_PORT", "0"), b("EDRI_PLUGINS", "a.so:b.so,c.so"), d("ENVIRONMENT", "production"),
      e("EDRI_CPUS", "0-2,5");
  const auto c = Config::from_env();
  CHECK(c.port == 0);
  CHECK(c.plugins == std::vector<std::string>{"a.so", "b.so", "c.so"});
  CHECK(c.production);
  CHECK(c.placement == Config::Placement::List);
  CHECK(c.cpus == std::vector<int>{0, 1, 2, 5});
  CHECK(c.describe().find("EDRI_CPUS=0,1,2,5\n") != std::string::npos);
}

TEST_CASE("invalid values name their variable", "[config]") {
  for (const auto& [name, value] :
       std::vector<std::pair<std::string, std::string>>{{"EDRI_PORT", "-1"},
                                                        {"EDRI_PORT", "80x"},
                                                        {"EDRI_MAX_BODY_SIZE", "big"},
                                                        {"EDRI_API_RESPONSE_TIMEOUT", "0"},
                                                        {"EDRI_SCHED", "fifo"},
                                                        {"EDRI_LISTENER_WORKERS", "65"},
                                                        {"EDRI_LISTENER_WORKERS", "many"},
                                                        {"EDRI_SERVER_TIMING", "maybe"},
                                                        {"EDRI_RING_BYTES", "12288"},
                                                        {"EDRI_WEBSOCKET_PATH", "ws"},
                                                        {"EDRI_WEBSOCKET_MAX_MESSAGE", "10"}}) {
    EnvVar v(name, value.c_str());
    INFO(name << "=" << value);
    CHECK_THROWS_WITH(Config::from_env(), Catch::Contains(name));
  }
}

TEST_CASE("a body limit that cannot fit a ring is refused", "[config]") {
  EnvVar a("EDRI_RING_BYTES", "65536"), b("EDRI_MAX_BODY_SIZE", "60000");
  CHECK_THROWS_AS(Config::from_env(), ConfigError);
}

TEST_CASE("WebSocket settings", "[config]") {
  {
    const auto c = Config::from_env();
    CHECK(c.websocket_path == "/ws");
    CHECK(c.websocket_max_message == 512 * 1024);
  }
  EnvVar a("EDRI_WEBSOCKET_PATH", ""), b("EDRI_WEBSOCKET_MAX_MESSAGE", "2048");
  const auto c = Config::from_env();
  CHECK(c.websocket_path.empty());
  CHECK(c.websocket_max_message == 2048);
  CHECK(c.describe().find("EDRI_WEBSOCKET_MAX_MESSAGE=2048\n") != std::string::npos);
  EnvVar r("EDRI_RING_BYTES", "65536"), m("EDRI_WEBSOCKET_MAX_MESSAGE", "60000");
  CHECK_THROWS_WITH(Config::from_env(), Catch::Contains("EDRI_WEBSOCKET_MAX_MESSAGE"));
}

TEST_CASE("words: an alias is accepted, the message offers the words", "[config]") {
  {
    EnvVar v("EDRI_LOG_LEVEL", "warning");
    CHECK(Config::from_env().log_level == "warn");
  }
  EnvVar s("EDRI_SCHED", "fifo");
  CHECK_THROWS_WITH(Config::from_env(), "EDRI_SCHED=fifo: must be batch or other");
  EnvVar l("EDRI_LOG_LEVEL", "loud");
  CHECK_THROWS_WITH(Config::from_env(),
                    "EDRI_LOG_LEVEL=loud: must be trace, debug, info, warn, error, critical or off");
}

TEST_CASE("lists drop empty pieces, an origin must look like one", "[config]") {
  {
    EnvVar p("EDRI_PLUGINS", ":a.so,,b.so:"), o("EDRI_CORS_ORIGINS", " https://a.example , *,");
    const auto c = Config::from_env();
    CHECK(c.plugins == std::vector<std::string>{"a.so", "b.so"});
    CHECK(c.cors_origins == std::vector<std::string>{"https://a.example", "*"});
    CHECK(c.describe().find("EDRI_CORS_ORIGINS=https://a.example,*\n") != std::string::npos);
  }
  EnvVar o("EDRI_CORS_ORIGINS", "a.example");
  CHECK_THROWS_WITH(Config::from_env(), Catch::Contains("EDRI_CORS_ORIGINS: 'a.example' is not an origin"));
}

TEST_CASE("settings checked together name the one that does not fit", "[config]") {
  {
    EnvVar a("EDRI_OUTPUT_BUFFER", "1048576"), b("EDRI_OUTPUT_BUFFER_TOTAL", "65536");
    CHECK_THROWS_WITH(Config::from_env(), Catch::StartsWith("EDRI_OUTPUT_BUFFER_TOTAL=65536"));
  }
  {
    EnvVar a("EDRI_BLOB_BYTES", "65536"), b("EDRI_UPLOAD_THRESHOLD", "100000");
    CHECK_THROWS_WITH(Config::from_env(), Catch::StartsWith("EDRI_UPLOAD_THRESHOLD=100000"));
  }
  {
    EnvVar on("EDRI_PROXY_PROTOCOL", "on");
    CHECK_THROWS_WITH(Config::from_env(), Catch::StartsWith("EDRI_PROXY_PROTOCOL=on needs EDRI_TRUSTED_PROXIES"));
    EnvVar trusted("EDRI_TRUSTED_PROXIES", "10.0.0.0/8");
    CHECK(Config::from_env().proxy_protocol);
  }
  char path[] = "/tmp/edri-config-test-XXXXXX";
  const int fd = ::mkstemp(path);
  REQUIRE(fd >= 0);
  {
    EnvVar cert("EDRI_SSL_CERTIFICATE", path);
    CHECK_THROWS_WITH(Config::from_env(), "EDRI_SSL_KEY is not set but EDRI_SSL_CERTIFICATE is");
  }
  ::close(fd);
  ::unlink(path);
}

TEST_CASE("paths that must exist", "[config]") {
  {
    EnvVar t("EDRI_TEMPLATE_PATH", "/nonexistent/templates");
    CHECK_THROWS_WITH(Config::from_env(), "EDRI_TEMPLATE_PATH=/nonexistent/templates: not a directory");
  }
  EnvVar k("EDRI_SSL_KEY", "/nonexistent/key.pem");
  CHECK_THROWS_WITH(Config::from_env(), "EDRI_SSL_KEY=/nonexistent/key.pem: not a readable file");
}

TEST_CASE("an integer out of range says so, with the range", "[config]") {
  for (const auto& [value, message] : std::vector<std::pair<std::string, std::string>>{
           {"99999", "EDRI_PORT=99999: out of range: must be between 0 and 65535"},
           {"-1", "EDRI_PORT=-1: out of range: must be between 0 and 65535"},
           {"99999999999999999999999", "EDRI_PORT=99999999999999999999999: out of range: must be between 0 and 65535"},
           {"80x", "EDRI_PORT=80x: not an integer"},
           {"+80", "EDRI_PORT=+80: not an integer"},
           {"-", "EDRI_PORT=-: not an integer"}}) {
    EnvVar v("EDRI_PORT", value.c_str());
    CHECK_THROWS_WITH(Config::from_env(), message);
  }
  EnvVar v("EDRI_PORT", "65535");
  CHECK(Config::from_env().port == 65535);
}

TEST_CASE("a body limit of 0 is refused", "[config]") {
  {
    EnvVar v("EDRI_MAX_BODY_SIZE", "0");
    CHECK_THROWS_WITH(Config::from_env(),
                      Catch::StartsWith("EDRI_MAX_BODY_SIZE=0: out of range: must be between 1 and"));
  }
  EnvVar v("EDRI_MAX_BODY_SIZE", "1");
  CHECK(Config::from_env().max_body_size == 1);
}

TEST_CASE("EDRI_CPUS may name only CPUs the server may use", "[config]") {
  CHECK_NOTHROW(Config::from_env().check_cpus_allowed({0}));  // auto: nothing named
  EnvVar v("EDRI_CPUS", "0-2,5,99");
  const auto c = Config::from_env();  // the machine is not asked here
  CHECK_NOTHROW(c.check_cpus_allowed({0, 1, 2, 3, 4, 5, 99}));
  CHECK_NOTHROW(c.check_cpus_allowed({}));  // unknown: the children's affinity calls say
  CHECK_THROWS_WITH(c.check_cpus_allowed({0, 1}), "EDRI_CPUS=0-2,5,99: the server may use CPUs 0-1 only, not 2,5,99");
  CHECK_THROWS_WITH(c.check_cpus_allowed({0, 2, 3, 4, 6}),
                    "EDRI_CPUS=0-2,5,99: the server may use CPUs 0,2-4,6 only, not 1,5,99");
}
