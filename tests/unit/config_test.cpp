#include <stdlib.h>

#include <catch2/catch.hpp>

#include "runtime/config.hpp"

using edri::Config;
using edri::ConfigError;

namespace {
struct EnvVar {
  std::string name;
  EnvVar(std::string n, const char* v) : name(std::move(n)) { ::setenv(name.c_str(), v, 1); }
  ~EnvVar() { ::unsetenv(name.c_str()); }
};
}  // namespace

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
