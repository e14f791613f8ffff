// Segment: one server instance's shared memory (layout: shm_layout.hpp),
// created by the supervisor, opened by the children.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "transport/channel.hpp"
#include "transport/shm_layout.hpp"
#include "transport/topology.hpp"

namespace boost::interprocess {
class mapped_region;
}

namespace edri::transport {

class Segment {
 public:
  // Creates a new segment (mode 0600) laid out for `topology`, its pages
  // reserved in /dev/shm at once. Throws on failure, including when the
  // name is taken, and leaves nothing behind; std::system_error with
  // ENOSPC when /dev/shm has no room for it.
  // `plugin_metric_bytes`: room for the plugins' metrics (shm_layout.hpp);
  // `call_rows`: the listeners' latency rows besides their routes'.
  static Segment create(const std::string& name, const Topology& topology, std::size_t ring_bytes,
                        std::uint32_t route_count = 0, std::size_t plugin_metric_bytes = 0,
                        std::uint32_t call_rows = 0);
  // Maps an existing segment and checks its header. Throws on mismatch.
  static Segment open(const std::string& name);
  // Removes a segment by name; true if it existed.
  static bool remove(const std::string& name);
  // Removes the segments of instances whose supervisor no longer runs.
  // Returns the names removed.
  static std::vector<std::string> remove_stale(const std::string& prefix = "edri.");

  Segment(Segment&&) noexcept;
  Segment& operator=(Segment&&) noexcept;
  ~Segment();

  const std::string& name() const { return name_; }
  SegmentHeader& header() const { return *reinterpret_cast<SegmentHeader*>(base_); }
  DoorbellState& doorbell(std::uint32_t slot) const;
  ChannelControl& control(std::uint32_t channel) const;
  std::size_t ring_bytes() const { return header().ring_bytes; }

  // Listener i's request metrics block.
  ListenerMetricsHeader& listener_metrics(std::uint32_t listener) const;
  // Its counter for (route row, status column).
  std::atomic<std::uint64_t>& request_counter(std::uint32_t listener, std::uint32_t row, std::size_t column) const;
  // The first of row `row`'s kRouteLatencyCells (shm_layout.hpp).
  std::atomic<std::uint64_t>& route_latency(std::uint32_t listener, std::uint32_t row) const;
  // The first of call row `row`'s kRouteLatencyCells, after the routes'.
  std::atomic<std::uint64_t>& call_latency(std::uint32_t listener, std::uint32_t row) const;

  // The plugins' metrics' area: plugin_metric_bytes at create, page aligned.
  std::byte* plugin_metrics() const { return base_ + header().plugin_metrics_offset; }
  std::size_t plugin_metrics_bytes() const { return header().plugin_metrics_bytes; }

  ChannelProducer producer(std::uint32_t channel) const;
  ChannelConsumer consumer(std::uint32_t channel) const;

 private:
  Segment(std::string name, std::unique_ptr<boost::interprocess::mapped_region> region);
  std::byte* ring_data(std::uint32_t channel) const;

  std::string name_;
  std::unique_ptr<boost::interprocess::mapped_region> region_;
  std::byte* base_ = nullptr;
};

}  // namespace edri::transport
