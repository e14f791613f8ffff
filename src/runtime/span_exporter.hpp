// SpanExporter: a process's finished spans (docs/operations.md, Traces),
// written as OTLP JSON (the OpenTelemetry protocol's JSON encoding of an
// ExportTraceServiceRequest) by a thread of its own: POSTed to an
// OTLP/HTTP endpoint (EDRI_TRACE_OTLP_ENDPOINT) and/or appended to a file
// as one request per line (EDRI_TRACE_PATH), a batch at a time (every
// 200 ms, or 512 spans). A role's loop only queues a span: it never
// waits on the export. Past EDRI_TRACE_BUFFER spans waiting, a span is
// dropped and counted; a failed POST drops its batch and is counted, and
// so do the round's later batches (they are still written to the file).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "runtime/config.hpp"
#include "runtime/trace_context.hpp"
#include "transport/unique_fd.hpp"

namespace edri {

// OTLP's span kinds.
enum class SpanKind : std::uint8_t { Internal = 1, Server = 2, Client = 3 };

// A string or an integer, by a static key (a semantic-convention name).
struct SpanAttribute {
  SpanAttribute(const char* k, std::string t) : key(k), text(std::move(t)) {}
  SpanAttribute(const char* k, std::int64_t n) : key(k), number(n), is_number(true) {}
  const char* key;
  std::string text;
  std::int64_t number = 0;
  bool is_number = false;
};

struct SpanRecord {
  TraceContext context;  // its trace, its own span id and flags
  SpanId parent{};       // all zeros: the trace's root
  SpanKind kind = SpanKind::Internal;
  std::string name;
  std::uint64_t start_ns = 0;  // Unix time
  std::uint64_t end_ns = 0;
  bool error = false;  // OTLP status ERROR (else UNSET)
  std::vector<SpanAttribute> attributes;
};

// The current Unix time in nanoseconds.
std::uint64_t unix_now_ns();

// `spans` as one OTLP JSON ExportTraceServiceRequest, its resource
// named `service` with the process's title and pid.
std::string otlp_json(const std::vector<SpanRecord>& spans, std::string_view service, std::string_view process);

class SpanExporter {
 public:
  struct Settings {
    std::string endpoint;  // http(s) URL of an OTLP/HTTP receiver's /v1/traces; empty: none
    std::string path;      // file of OTLP JSON lines; empty: none
    std::size_t buffer = 8192;
    std::string process;  // the title of the process, a resource attribute
  };
  // nullptr when tracing is off (neither an endpoint nor a file).
  static std::unique_ptr<SpanExporter> open(const Config& config, std::string process);
  explicit SpanExporter(Settings settings);
  ~SpanExporter();  // exports what is queued, then stops
  SpanExporter(const SpanExporter&) = delete;
  SpanExporter& operator=(const SpanExporter&) = delete;

  // Queues a finished span, or drops and counts it past the buffer.
  void submit(SpanRecord span);
  std::uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }
  std::uint64_t failed_batches() const { return failed_.load(std::memory_order_relaxed); }
  // What went wrong since the last call, for the owner's log (its logger
  // is its loop's alone); empty: nothing.
  std::string take_notice();

 private:
  void run();
  // `post`: whether to POST it (false once a POST of this round failed:
  // a receiver that is down costs one timeout per round, not one per
  // batch, and a stop waits for at most one).
  void export_batch(const std::vector<SpanRecord>& spans, bool& post);
  bool post(const std::string& body);
  void notice(std::string text);

  Settings settings_;
  UniqueFd file_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<SpanRecord> queued_;  // guarded by mutex_
  std::string notice_;              // the same
  bool stop_ = false;               // the same
  std::atomic<std::uint64_t> dropped_{0};
  std::atomic<std::uint64_t> failed_{0};
  void* curl_ = nullptr;  // the thread's easy handle
  std::thread thread_;
};

// Logs what `exporter` has to say, and the spans it dropped since
// `dropped` (updated): on its owner's thread, now and then. `counted`:
// where /metrics reads the process's drops (its DoorbellState), if any.
void log_trace_notices(SpanExporter& exporter, std::uint64_t& dropped, std::atomic<std::uint64_t>* counted = nullptr);

}  // namespace edri
