// NginxProcess: a real nginx (Debian nginx-light) started by a test on a
// free loopback port, as this user, one process in the foreground, its
// config and logs in a temporary folder; stopped by PID, and the folder
// removed, when it goes. What it serves is the caller's config.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>

#include "support/test_helpers.hpp"

namespace edri::test {

class NginxProcess {
 public:
  // The blocks of nginx.conf after its head (daemon, master, pid, error
  // log), given nginx's port and folder.
  using Config = std::function<std::string(std::uint16_t port, const std::string& dir)>;

  // Throws when nginx does not start.
  explicit NginxProcess(const Config& config, const std::string& head = {});
  ~NginxProcess();
  NginxProcess(const NginxProcess&) = delete;
  NginxProcess& operator=(const NginxProcess&) = delete;

  std::uint16_t port() const { return port_; }
  const TempDir& dir() const { return dir_; }

 private:
  void wait_until_listening();

  TempDir dir_;
  std::uint16_t port_ = 0;
  pid_t pid_ = -1;
};

}  // namespace edri::test
