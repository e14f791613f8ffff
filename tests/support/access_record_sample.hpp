// One access log record of an HTTP/1.1 request, for the formatter's unit
// tests and micro-benchmark: received 2026-12-06T07:45:12.345Z.
#pragma once

#include <chrono>

#include "listener/access_line.hpp"

namespace edri::test {

inline listener::AccessRecord sample_access_record() {
  listener::AccessRecord r;
  r.received = std::chrono::system_clock::time_point(std::chrono::milliseconds(1796543112345));
  r.started = std::chrono::steady_clock::time_point(std::chrono::seconds(100));
  r.protocol = "http/1.1";
  r.method = "GET";
  r.target = "/items/7?x=1";
  r.route = "/items/{id:int}";
  r.domain = "shop";
  r.client = "10.0.0.1";
  r.request_id = "abc-1";
  r.user_agent = "curl/8";
  r.bytes_in = 3;
  return r;
}

}  // namespace edri::test
