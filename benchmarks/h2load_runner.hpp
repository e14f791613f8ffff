// h2load (Debian nghttp2-client) as the load for REST over HTTP/2 in
// `bench grpc`: `-c C -m 1 -t 1 -D`, one stream per connection at a time
// from one thread, as the HTTP/1.1 load generator sends one request per
// connection at a time, with its summary read back; and for HTTP/1.1
// requests pipelined on each connection (`bench techempower`'s plaintext),
// which that generator does not send.
#pragma once

#include <csignal>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace edri::bench {

struct H2loadOptions {
  std::uint16_t port = 0;  // on 127.0.0.1, HTTP/2 cleartext with prior knowledge
  std::string path = "/noop";
  int concurrency = 1;
  double warmup_seconds = 1.0;
  double duration_seconds = 5.0;
  double rate = 0;         // requests/s over all connections (h2load --rps per client); 0: closed loop
  std::optional<int> cpu;  // pins h2load, as --client-cpu pins bench
  // HTTP/1.1 (--h1) instead of HTTP/2: `streams` is then how many
  // requests each connection pipelines (TechEmpower's plaintext: 16).
  bool http1 = false;
  int streams = 1;       // -m: streams (HTTP/2) or pipelined requests (HTTP/1.1) per connection
  int threads = 1;       // -t, at most `concurrency`
  bool verbose = false;  // h2load's stderr to bench's
  const volatile std::sig_atomic_t* stop_requested = nullptr;
};

struct H2loadResult {
  enum class Outcome { kDone, kNotInstalled, kFailed, kInterrupted };
  Outcome outcome = Outcome::kFailed;
  std::string message;  // why it is not kDone
  // "finished in ..., N req/s": requests that succeeded per second of the
  // measured duration (the warm-up left out).
  double requests_per_second = 0;
  std::uint64_t succeeded = 0;
  std::uint64_t errors = 0;   // failed + errored + timeout
  std::uint64_t non_2xx = 0;  // 3xx + 4xx + 5xx
};

bool h2load_installed();

// Runs h2load to its end (or until a stop is requested, when it is stopped).
H2loadResult run_h2load(const H2loadOptions& options);

// Reads the figures out of h2load's summary into `result`; false when its
// "finished in" line is not there.
bool parse_h2load_summary(std::string_view output, H2loadResult& result);

}  // namespace edri::bench
