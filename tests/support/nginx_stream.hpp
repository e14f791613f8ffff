// NginxStream: a real nginx (Debian nginx-light and libnginx-mod-stream)
// started by a test as a TCP proxy in front of a server on this host, the
// way a load balancer that speaks the PROXY protocol stands in front of
// edri: it listens on a free loopback port and hands each connection to
// the server with `proxy_protocol on` (a v1 header first), connecting from
// `source` (a loopback address of its own, so that the server tells the
// proxy from its clients). It runs as this user, one process, with its
// config and logs in a temporary folder; stopped by PID, and the folder
// removed, when it goes.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "support/test_helpers.hpp"

namespace edri::test {

class NginxStream {
 public:
  // Whether nginx and its stream module are installed (scripts/setup.sh);
  // empty when they are, else what is missing.
  static std::string missing();

  // Throws when nginx does not start.
  NginxStream(std::uint16_t upstream_port, const std::string& source);
  ~NginxStream();
  NginxStream(const NginxStream&) = delete;
  NginxStream& operator=(const NginxStream&) = delete;

  std::uint16_t port() const { return port_; }

 private:
  void write_config(std::uint16_t upstream_port, const std::string& source) const;
  void wait_until_listening();

  TempDir dir_;
  std::uint16_t port_ = 0;
  pid_t pid_ = -1;
};

}  // namespace edri::test
