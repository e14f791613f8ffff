#include "supervisor/service_notify.hpp"

#include <spdlog/spdlog.h>
#include <systemd/sd-daemon.h>

#include <cstring>

namespace edri::supervisor {
namespace {

// A notification the service manager could not be sent is logged once
// per kind, never fatal: the server serves whoever supervises it.
void notify(const std::string& state) {
  const int r = ::sd_notify(0, state.c_str());
  if (r < 0)
    spdlog::warn("cannot notify the service manager ({}): {}", state.substr(0, state.find('\n')), std::strerror(-r));
}

}  // namespace

ServiceNotifier::ServiceNotifier(asio::io_context& io) : watchdog_(io) {
  std::uint64_t usec = 0;
  if (::sd_watchdog_enabled(0, &usec) > 0 && usec > 0) {
    interval_ = std::chrono::microseconds(usec / 2);
    ping();
  }
}

void ServiceNotifier::ready(const std::string& status) { notify("READY=1\nSTATUS=" + status); }

void ServiceNotifier::reloading() { notify("RELOADING=1\nSTATUS=reloading: a new generation starts"); }

void ServiceNotifier::stopping() {
  notify("STOPPING=1\nSTATUS=stopping: answering what is in flight");
  // Until the last child is gone, the service manager's stop timeout
  // (TimeoutStopSec) is the bound, not the watchdog.
}

void ServiceNotifier::ping() {
  notify("WATCHDOG=1");
  watchdog_.expires_after(interval_);
  watchdog_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) ping();
  });
}

}  // namespace edri::supervisor
