// SlotInfo: what a request's slot knows about how its answer must go out,
// whichever protocol carries it (a Connection's HTTP/1.1 slots and its
// HTTP/2 streams alike): the framing flags, the metrics row, when it was
// opened, the header lines middleware added, and what a file answer
// depends on.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "listener/static_files.hpp"

namespace edri::listener {

struct SlotInfo {
  bool keep_alive;
  bool http10;
  bool head;
  std::uint32_t route;
  std::chrono::steady_clock::time_point opened;
  std::string headers;
  // Of a routed request: what a file answer (Response::file) depends on.
  StaticFiles::Conditions conditions;
};

}  // namespace edri::listener
