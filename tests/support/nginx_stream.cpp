#include "support/nginx_stream.hpp"

#include <filesystem>

namespace edri::test {

namespace {

constexpr const char* kNginx = "/usr/sbin/nginx";
constexpr const char* kStreamModule = "/usr/lib/nginx/modules/ngx_stream_module.so";

}  // namespace

std::string NginxStream::missing() {
  if (!std::filesystem::exists(kNginx)) return std::string(kNginx) + " (Debian nginx-light)";
  if (!std::filesystem::exists(kStreamModule)) return std::string(kStreamModule) + " (Debian libnginx-mod-stream)";
  return {};
}

NginxStream::NginxStream(std::uint16_t upstream_port, const std::string& source)
    : nginx_(
          [&](std::uint16_t port, const std::string&) {
            return "stream {\n  server {\n    listen 127.0.0.1:" + std::to_string(port) +
                   ";\n    proxy_pass 127.0.0.1:" + std::to_string(upstream_port) +
                   ";\n    proxy_protocol on;\n    proxy_bind " + source + ";\n  }\n}\n";
          },
          std::string("load_module ") + kStreamModule + ";\n") {}

}  // namespace edri::test
