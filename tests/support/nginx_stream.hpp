// NginxStream: a real nginx (Debian nginx-light and libnginx-mod-stream)
// started by a test as a TCP proxy in front of a server on this host, the
// way a load balancer that speaks the PROXY protocol stands in front of
// edri: it listens on a free loopback port and hands each connection to
// the server with `proxy_protocol on` (a v1 header first), connecting from
// `source` (a loopback address of its own, so that the server tells the
// proxy from its clients). An NginxProcess.
#pragma once

#include <cstdint>
#include <string>

#include "support/nginx_process.hpp"

namespace edri::test {

class NginxStream {
 public:
  // Whether nginx and its stream module are installed (scripts/setup.sh);
  // empty when they are, else what is missing.
  static std::string missing();

  // Throws when nginx does not start.
  NginxStream(std::uint16_t upstream_port, const std::string& source);

  std::uint16_t port() const { return nginx_.port(); }

 private:
  NginxProcess nginx_;
};

}  // namespace edri::test
