// SlotInfo: what a request's slot knows about how its answer must go out,
// whichever protocol carries it (a Connection's HTTP/1.1 slots and its
// HTTP/2 streams alike): the framing flags, the metrics row, when it was
// opened, the header lines middleware added, and what a file answer
// depends on.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "listener/access_line.hpp"
#include "listener/static_files.hpp"

namespace edri::listener {

struct SlotInfo {
  // `route` of an answer given without a route (counted apart), and of one
  // not counted in the request metrics (a WebSocket command's).
  static constexpr std::uint32_t kNoRoute = UINT32_MAX;
  static constexpr std::uint32_t kUncounted = UINT32_MAX - 1;

  bool keep_alive = true;
  bool http10 = false;
  bool head = false;
  std::uint32_t route = kNoRoute;
  std::chrono::steady_clock::time_point opened;
  std::string headers;
  // Of a routed request: what a file answer (Response::file) depends on.
  StaticFiles::Conditions conditions;
  // The access log's record of its call (EDRI_ACCESS_LOG), else null.
  std::unique_ptr<AccessRecord> access;
  // A WebSocket command's latency row (plugin/call_rows.hpp).
  std::uint32_t call_row = 0;
};

}  // namespace edri::listener
