// The gRPC load generator of `bench grpc`: edri's generic service
// (proto/edri/v1/edri.proto) driven with Event{type:"noop"} over HTTP/2
// cleartext, `concurrency` connections on one thread (one poll loop), as
// the HTTP/1.1 and WebSocket load generator drives its connections.
#pragma once

#include <csignal>
#include <cstdint>
#include <string>

#include "load_generator.hpp"

namespace edri::bench {

enum class GrpcMode {
  // Each connection makes one Call at a time, a new stream per call.
  kUnary,
  // Each connection opens one Connect stream and keeps exactly one Event in
  // flight on it: send, wait for its answer, send the next.
  kBidi,
};

struct GrpcLoadOptions {
  std::string host = "127.0.0.1";  // an IPv4 literal
  std::uint16_t port = 0;
  GrpcMode mode = GrpcMode::kUnary;
  int concurrency = 1;
  // Round trips per second over all connections, paced as LoadOptions::rate
  // paces requests (latency from each one's scheduled send); 0 is a closed
  // loop.
  double rate = 0;
  double warmup_seconds = 1.0;
  double duration_seconds = 5.0;
  // Polled at least every 50 ms so that a signal ends the run.
  const volatile std::sig_atomic_t* stop_requested = nullptr;
};

// `completed`: answers in the measured window that are what the noop
// command answers (grpc-status 0, one Event of type "noop", status 200,
// body {"ok":true}, and in bidi the id of the Event it answers). `errors`:
// every other answer, reset stream, failed connection or malformed frame
// in the window; `first_error` says what the first one was. `non_2xx` stays
// 0: a gRPC answer is right or an error.
LoadResult run_grpc_load(const GrpcLoadOptions& options);

}  // namespace edri::bench
