#include "support/network_host.hpp"

#include <unistd.h>

#include <cstdlib>
#include <stdexcept>

namespace edri::test {

namespace {

// Cleaning up: what is already gone is fine.
void quietly(const std::string& command) {
  if (std::system((command + " >/dev/null 2>&1").c_str()) != 0) return;
}

void ip(const std::string& args) {
  const std::string command = "/usr/sbin/ip " + args + " 2>&1";
  if (std::system(command.c_str()) != 0) throw std::runtime_error("failed: ip " + args);
}

}  // namespace

bool NetworkHost::available() {
  return ::geteuid() == 0 && ::access("/usr/sbin/ip", X_OK) == 0 &&
         std::system("/usr/sbin/ip netns list >/dev/null 2>&1") == 0;
}

NetworkHost::NetworkHost(int n) {
  const auto pid = std::to_string(::getpid());
  name_ = "edri-test-" + pid + "-" + std::to_string(n);
  // Interface names are at most 15 characters.
  const std::string outer = "et" + pid + "h" + std::to_string(n), inner = "et" + pid + "n" + std::to_string(n);
  const std::string net = "10.213." + std::to_string(::getpid() % 250) + ".";
  peer_ = net + std::to_string(4 * n + 1);
  address_ = net + std::to_string(4 * n + 2);
  ip("netns add " + name_);
  try {
    ip("link add " + outer + " type veth peer name " + inner);
    ip("link set " + inner + " netns " + name_);
    ip("addr add " + peer_ + "/30 dev " + outer);
    ip("link set " + outer + " up");
    ip("-n " + name_ + " addr add " + address_ + "/30 dev " + inner);
    ip("-n " + name_ + " link set " + inner + " up");
    ip("-n " + name_ + " link set lo up");
    ip("-n " + name_ + " route add default via " + peer_);
  } catch (...) {
    quietly("/usr/sbin/ip link del " + outer);
    quietly("/usr/sbin/ip netns del " + name_);
    throw;
  }
}

NetworkHost::~NetworkHost() { quietly("/usr/sbin/ip netns del " + name_); }

void NetworkHost::cut_off(const std::string& address) { ip("-n " + name_ + " route add blackhole " + address + "/32"); }

void NetworkHost::reconnect(const std::string& address) {
  ip("-n " + name_ + " route del blackhole " + address + "/32");
}

}  // namespace edri::test
