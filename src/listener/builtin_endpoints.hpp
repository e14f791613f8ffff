// BuiltinEndpoints: /health, /ready and /metrics (their paths are
// settings), answered by a listener from the shared-memory segment alone
// (no other process is asked, so the answer comes even when the pipeline
// behind the listener is stuck). With EDRI_ADMIN_SOCKET they answer there
// alone; /health names pids only there.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "plugin/call_rows.hpp"
#include "plugin/plugin_set.hpp"
#include "runtime/config.hpp"
#include "transport/blob_arena.hpp"
#include "transport/segment.hpp"
#include "transport/topology.hpp"

namespace edri::listener {

class BuiltinEndpoints {
 public:
  struct Answer {
    int status;
    std::string content_type;
    std::string body;
  };

  BuiltinEndpoints(const Config& config, const transport::Segment& segment, const transport::Topology& topology,
                   const plugin::PluginSet& plugins, const std::vector<std::string>& manager_domains);

  // The blob area whose use /metrics reports (none: not reported).
  void set_blobs(const transport::BlobArena* blobs) { blobs_ = blobs; }
  void set_placement(std::string summary, bool spread, std::uint32_t spin) {
    placement_ = {std::move(summary), spread, spin};
  }

  // The answer for `path` on a connection of the admin socket (`admin`)
  // or not, or nothing where no built-in endpoint answers it.
  std::optional<Answer> handle(std::string_view path, bool admin) const;

  // Whether `path` is a built-in endpoint's on a public connection (one
  // that is not the admin socket's), where it would hide a route.
  static bool serves_publicly(const Config& config, std::string_view path);

 private:
  // Prometheus label values escape backslash, quote and newline.
  static std::string label(std::string_view v);
  struct ProcessView {
    std::string name;
    std::uint32_t pid;
    bool alive;
    std::uint32_t restarts;
    std::uint32_t failures = 0;          // quick deaths in a row (a crash loop from 3)
    std::uint32_t restart_delay_ms = 0;  // until its next start, while it is down
    bool stopped = false;                // alive but stopped (SIGSTOP): serving nothing
    std::uint64_t stalled_ms = 0;        // awake in one loop turn for this long, past EDRI_HEALTH_STALL
    bool serving() const { return alive && !stopped && stalled_ms == 0; }
  };
  std::vector<ProcessView> processes() const;
  // How long the process of `d` has been in one loop turn, if past
  // EDRI_HEALTH_STALL; else 0.
  std::uint64_t stalled_for(const transport::DoorbellState& d) const;
  Answer health(bool pids) const;
  Answer ready() const;
  Answer metrics() const;
  // Sums the listeners' kRouteLatencyCells (shm_layout.hpp) found by
  // `cells_of(listener)` and writes them as histogram `name`, with
  // `labels` ("route=\"...\"", or none); nothing when none was counted.
  using CellsOf = std::function<const std::atomic<std::uint64_t>*(std::uint32_t)>;
  void latency(std::ostringstream& o, std::string_view name, const std::string& labels, const CellsOf& cells_of) const;
  // The switch's counters (docs/cluster.md), where the instance has one.
  void cluster_metrics(std::ostringstream& o) const;
  // What each process's loop did, and its CPU (builtin_loop_metrics.cpp).
  void loop_metrics(std::ostringstream& o) const;
  // Each domain's queue and waiting requests, its managers summed.
  void domain_metrics(std::ostringstream& o) const;

  const Config& config_;
  const transport::Segment& segment_;
  const transport::Topology& topology_;
  const plugin::PluginSet& plugins_;
  std::vector<std::string> slot_names_;    // by process slot
  std::vector<std::string> slot_domains_;  // the same: a manager's domain, else empty
  std::vector<std::string> domains_;       // those of the managers, each once, in order
  std::vector<std::string> route_labels_;  // by route row: "GET /notes/{id:int}"
  plugin::CallRows call_rows_;             // WebSocket commands' and gRPC methods' rows
  const transport::BlobArena* blobs_ = nullptr;
  struct Placement {
    std::string summary;
    bool spread = false;
    std::uint32_t spin = 0;
  } placement_;
};

}  // namespace edri::listener
