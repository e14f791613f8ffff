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
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "runtime/config.hpp"
#include "runtime/span_queue.hpp"
#include "runtime/trace_context.hpp"
#include "transport/unique_fd.hpp"

namespace edri {

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
    std::string process;    // the title of the process, a resource attribute
    std::vector<int> cpus;  // where the thread may run; empty: where its process runs
  };
  // nullptr when tracing is off (neither an endpoint nor a file).
  static std::unique_ptr<SpanExporter> open(const Config& config, std::string process, std::vector<int> cpus);
  explicit SpanExporter(Settings settings);
  ~SpanExporter();  // exports what is queued, then stops
  SpanExporter(const SpanExporter&) = delete;
  SpanExporter& operator=(const SpanExporter&) = delete;

  // Queues a finished span, or drops and counts it past the buffer.
  void submit(const SpanView& span);
  void submit(const SpanRecord& span);
  std::uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }
  std::uint64_t failed_batches() const { return failed_.load(std::memory_order_relaxed); }
  // Opens EDRI_TRACE_PATH again before the next write (SIGUSR1, for log
  // rotation); on failure it writes on to the file it has.
  void reopen();
  // What went wrong since the last call, for the owner's log (its logger
  // is its loop's alone); empty: nothing.
  std::string take_notice();

 private:
  void run();
  // What a POST came to. Retry: the receiver may take it later (no
  // answer, 429, 502, 503, 504: OTLP/HTTP's retryable failures).
  enum class Posted { Ok, Retry, Refused };
  // `post`: whether to POST it (false once a POST of this round failed:
  // a receiver that is down costs one timeout per round, not one per
  // batch, and a stop waits for at most one). Not posted, or a retryable
  // failure: it is held for a later round.
  void export_body(std::string& body, bool& post);
  Posted post(const std::string& body);
  // POSTs the held bodies, oldest first, once their backoff is over (or
  // `now`: the last round, at a stop); false when one failed again (the
  // round posts no more).
  bool post_held(bool now);
  // Keeps `body`, posted `tries` times so far, for a later POST; past
  // kHeldBatches the oldest is given up (counted in failed_).
  void hold(std::string body, unsigned tries);
  void notice(std::string text);
  void notice_locked(std::string text);  // with mutex_ held
  void reopen_file();                    // the same

  Settings settings_;
  UniqueFd file_;
  std::mutex mutex_;
  std::condition_variable wake_;
  SpanQueue queued_;     // guarded by mutex_
  std::string notice_;   // the same
  bool stop_ = false;    // the same
  bool reopen_ = false;  // the same
  std::atomic<std::uint64_t> dropped_{0};
  std::atomic<std::uint64_t> failed_{0};
  void* curl_ = nullptr;  // the thread's easy handle
  // The thread's: bodies a retryable failure left, oldest first, each
  // with its tries so far; when the next try may be, and the backoff.
  struct Held {
    std::string body;
    unsigned tries;
  };
  std::deque<Held> held_;
  std::chrono::steady_clock::time_point retry_at_{};
  std::chrono::milliseconds backoff_{0};
  std::thread thread_;
};

// Where /metrics reads a process's losses (its DoorbellState), if anywhere.
struct TraceCounts {
  std::atomic<std::uint64_t>* spans_dropped = nullptr;
  std::atomic<std::uint64_t>* batches_failed = nullptr;
};

// Logs what `exporter` has to say, and the spans it dropped since
// `dropped` (updated), and stores its counts in `counted`: on its owner's
// thread, now and then.
void log_trace_notices(SpanExporter& exporter, std::uint64_t& dropped, TraceCounts counted = {});

}  // namespace edri
