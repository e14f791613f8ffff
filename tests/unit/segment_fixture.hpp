// A private shared-memory segment for one test, removed when it ends.
#pragma once

#include <unistd.h>

#include <atomic>
#include <string>

#include "transport/segment.hpp"
#include "transport/topology.hpp"

struct SegmentFixture {
  static std::string unique_name() {
    static std::atomic<int> n{0};
    return "edri-test." + std::to_string(::getpid()) + "." + std::to_string(n++);
  }
  // `route_count`: rows of the listeners' request metrics, one per route;
  // `call_rows`: their other latency rows (plugin/call_rows.hpp).
  explicit SegmentFixture(std::size_t ring_bytes, std::uint32_t listeners = 1, std::uint32_t managers = 1,
                          std::uint32_t route_count = 0, std::uint32_t call_rows = 0)
      : topology(listeners, managers),
        name(unique_name()),
        segment(edri::transport::Segment::create(name, topology, ring_bytes, route_count, 0, call_rows)) {}
  ~SegmentFixture() { edri::transport::Segment::remove(name); }

  edri::transport::Topology topology;
  std::string name;
  edri::transport::Segment segment;
};
