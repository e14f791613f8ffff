// What the supervisor tells a service manager, in systemd's notify
// protocol (sd_notify(3); a unit with Type=notify, docs/operations.md):
// READY=1 once every process serves, STOPPING=1 when a stop begins, and
// WATCHDOG=1 at half the unit's WatchdogSec while the supervisor's loop
// turns, so that a supervisor stuck in a turn is restarted. Not under
// systemd (no NOTIFY_SOCKET), each is a no-op.
#pragma once

#include <chrono>
#include <string>

#include "runtime/asio.hpp"

namespace edri::supervisor {

class ServiceNotifier {
 public:
  explicit ServiceNotifier(asio::io_context& io);
  void ready(const std::string& status);
  void stopping();
  void reloading();  // RELOADING=1; ready() ends it

 private:
  void ping();

  asio::steady_timer watchdog_;
  std::chrono::microseconds interval_{0};  // half of WATCHDOG_USEC; 0: no watchdog
};

}  // namespace edri::supervisor
