#pragma once

#include <csignal>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "histogram.hpp"
#include "http_request.hpp"

namespace edri::bench {

struct LoadOptions {
  std::string host = "127.0.0.1";
  std::uint16_t port = 0;
  HttpRequest request;
  // When not empty, connection i sends requests[i % size] instead of
  // `request` (one load spread over several routes).
  std::vector<HttpRequest> requests;
  // When set, the body of the first response in the measured window must be
  // exactly this; a different one counts as an error. Once per run is enough
  // to catch a server that is fast because it answers the wrong thing.
  std::optional<std::string> expected_body;
  // When set, each connection opens a WebSocket at this path and then sends
  // `request.body` as one text message per round trip, waiting for the one
  // message that answers it (an answer without "response" counts as non-2xx).
  std::optional<std::string> websocket_path;
  int concurrency = 1;
  // Requests per second over all connections; 0 is a closed loop (each
  // connection sends as soon as its previous answer is in). With a rate the
  // load is open: connection i sends on its own schedule, one request every
  // concurrency / rate seconds, whether or not the server kept up, and a
  // request's latency runs from when the schedule meant it to go, not from
  // when a busy connection could send it. A stall then shows in the
  // percentiles as the queue it caused for every request behind it, instead
  // of as one slow sample (coordinated omission).
  double rate = 0;
  double warmup_seconds = 1.0;
  double duration_seconds = 5.0;
  // Polled while the run is in progress so a signal ends it within ~50 ms.
  const volatile std::sig_atomic_t* stop_requested = nullptr;
  // Called on the load thread as the measured window opens and as it closes
  // (the latter not when the run is interrupted), so that something measured
  // outside bench, such as the server's CPU time, covers the same window as
  // the request count. Keep them short: no request progresses meanwhile.
  std::function<void()> on_window_start;
  std::function<void()> on_window_end;
};

struct LoadResult {
  std::uint64_t completed = 0;  // responses received inside the measured window
  std::uint64_t non_2xx = 0;    // of those, the ones whose status was not 2xx
  std::uint64_t errors = 0;     // connect/read/write failures and malformed responses
  // With a rate: requests in the window that went out more than a
  // millisecond after their scheduled time, because the connection was
  // still waiting on an earlier answer (or the client itself was late).
  std::uint64_t sent_late = 0;
  double measured_seconds = 0;
  bool interrupted = false;
  std::string first_error;   // the first failure seen, to tell the user why
  LatencyHistogram latency;  // of every completed response, in nanoseconds

  double requests_per_second() const {
    return measured_seconds > 0 ? static_cast<double>(completed) / measured_seconds : 0.0;
  }
};

// Keep-alive load: `concurrency` connections on one thread, each sending
// the next request as soon as the previous response is complete (closed
// loop) or, with a rate, at its scheduled time or as soon after it as the
// previous response allows (open loop). Requests completing during the
// warm-up are discarded.
LoadResult run_load(const LoadOptions& options);

// One GET on a fresh connection; true when it answers 200 within the timeout.
// Used to tell when a freshly started server is really serving.
bool probe_http_ok(const std::string& host, std::uint16_t port, const std::string& path, double timeout_seconds);

}  // namespace edri::bench
