// Loopback ports for the servers bench and the tests start themselves
// (nats-server): one the kernel has free now, and whether one takes
// connections yet.
#pragma once

#include <cstdint>

namespace edri::bench {

// A port the kernel has just given out and taken back (0 if none).
std::uint16_t free_loopback_port();
// True when 127.0.0.1:port accepts a TCP connection.
bool loopback_port_accepts(std::uint16_t port);

}  // namespace edri::bench
