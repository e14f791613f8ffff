// AccessLog: a listener's access log (EDRI_ACCESS_LOG, docs/operations.md),
// one line per HTTP request, WebSocket command and gRPC call. The loop
// takes each call's record (begin) and formats its line when it ends
// (end); a LineWriter's thread writes the lines to the file (or stderr),
// so that a slow disk never stalls the loop: past EDRI_ACCESS_LOG_BUFFER
// bytes waiting, a line is dropped and counted
// (edri_access_log_dropped_total). SIGUSR1 reopens the file, for
// rotation. Several listeners append to one file: each write is whole
// lines, and O_APPEND keeps them apart.
//
// With tracing on (EDRI_TRACE_*) the same record is the listener's span
// of the call: begin() takes the client's `traceparent` or starts a
// trace, and end() hands a sampled span to the process's SpanExporter.
// An AccessLog is made when either is on.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "http/request_parser.hpp"
#include "listener/access_line.hpp"
#include "plugin/plugin_set.hpp"
#include "runtime/config.hpp"
#include "runtime/line_writer.hpp"
#include "runtime/span_exporter.hpp"

namespace edri::listener {

class AccessLog {
 public:
  using Counters = LineWriter::Counters;

  // nullptr when EDRI_ACCESS_LOG is off and tracing too. Throws std::runtime_error when
  // the file cannot be opened.
  // `writer_cpus`: where the writer thread may run (the CPUs the server
  // was given; none: where the listener runs).
  static std::unique_ptr<AccessLog> open(const Config& config, const plugin::PluginSet& plugins, Counters counters,
                                         const std::vector<int>& writer_cpus = {});
  // That the file can be opened: the supervisor's check at start-up, so
  // that a wrong path stops the server with a message. Throws.
  static void check(const Config& config);

  AccessLog(const Config& config, const plugin::PluginSet& plugins, Counters counters,
            const std::vector<int>& writer_cpus = {});

  // A call's record as it comes: `head`, where it has one, gives the
  // user agent, referer and trace id.
  std::unique_ptr<AccessRecord> begin(std::string_view protocol, std::string_view method, std::string_view target,
                                      std::string_view client, const http::HttpRequest* head);
  // The route of target `row` (the plugins' routes in order, then their
  // Server-Sent Events routes) and its domain.
  void set_route(AccessRecord& r, std::uint32_t row) const;
  // Where /metrics reads the spans the tracer dropped and the batches it
  // failed to export (the process's DoorbellState).
  void count_trace_losses_in(TraceCounts counted) { trace_counted_ = counted; }
  // The wall-clock time of `t`.
  std::chrono::system_clock::time_point wall_time(std::chrono::steady_clock::time_point t);
  // The domain of the event named `event` (empty: none).
  std::string_view domain_of(std::string_view event) const;
  // The call ended: its line is queued, or dropped; the record is kept
  // for a later call's begin (no allocation per call once warm).
  void end(std::unique_ptr<AccessRecord> r, const AccessOutcome& o);
  void end(std::unique_ptr<AccessRecord> r, int status, std::uint64_t bytes_out, int grpc_status = -1);
  // The files are opened again (SIGUSR1): the access log's writer and
  // the tracer each do it before their next write.
  void reopen() {
    if (writer_) writer_->reopen();
    if (tracer_) tracer_->reopen();
  }

 private:
  AccessFormatter formatter_;
  std::vector<std::string> route_paths_;    // by route row
  std::vector<std::string> route_domains_;  // the same
  // Found by a command's event name without a copy of it.
  struct NameHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, std::string, NameHash, std::equal_to<>> event_domains_;
  std::string line_;  // the loop's scratch
  // The loop's: records whose lines went, for reuse (their strings keep
  // their buffers); and the wall clock's offset from the steady one,
  // taken again each second, so that a call reads one clock.
  std::vector<std::unique_ptr<AccessRecord>> spare_;
  std::chrono::steady_clock::time_point synced_{};
  std::chrono::system_clock::duration wall_offset_{};
  // begin()'s: the call's trace, taken from `traceparent` or started.
  void start_trace(AccessRecord& r, const http::HttpRequest* head);
  // The call's span, its texts the record's (and span_name_'s): queued
  // without a copy but the queue's.
  void submit_span(const AccessRecord& r, const AccessOutcome& o);
  std::string span_name_;  // the loop's scratch
  double trace_sample_;
  std::uint64_t trace_dropped_ = 0;  // logged so far
  TraceCounts trace_counted_;
  std::unique_ptr<SpanExporter> tracer_;  // null: tracing off
  std::unique_ptr<LineWriter> writer_;    // null: EDRI_ACCESS_LOG=off. Last: it stops (writing what is queued) first
};

}  // namespace edri::listener
