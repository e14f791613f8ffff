// NetworkHost: a host of its own on this machine, for tests that must see
// instances on different networks: a network namespace joined to this one
// by a veth pair (a /30 of 10.213.0.0/16). Needs root and `ip` (iproute2);
// available() says whether this machine allows it. Everything it made is
// removed by its destructor (deleting the namespace deletes the pair).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace edri::test {

class NetworkHost {
 public:
  static bool available();
  // The `n`th host of this test process (0..63).
  explicit NetworkHost(int n);
  ~NetworkHost();
  NetworkHost(const NetworkHost&) = delete;
  NetworkHost& operator=(const NetworkHost&) = delete;

  // Its address, and the address of this (the root) side of its link.
  const std::string& address() const { return address_; }
  const std::string& peer() const { return peer_; }
  // What runs a program on this host (ServerProcess's wrapper).
  std::vector<std::string> runner() const { return {"/usr/sbin/ip", "netns", "exec", name_}; }
  // From this host, packets to `address` vanish (a cable pulled between
  // them), or go again.
  void cut_off(const std::string& address);
  void reconnect(const std::string& address);

 private:
  std::string name_, address_, peer_;
};

}  // namespace edri::test
