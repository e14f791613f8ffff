// Answers: from envelopes back to answers. Every answer a connection gets is
// built here, protocol-neutral, and handed to the connection's AnswerSink,
// which frames it: a handler's response (bytes, a blob, a file, a stream), a
// hop's problem, or one the listener gives itself; the response-side
// middleware runs on it and the metrics count it. A WebSocket command's
// answer takes the same path (its sink makes it a command message), a gRPC
// call's goes to GrpcFront.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <edri/plugin.hpp>

#include "envelope/envelope.hpp"
#include "http/response_writer.hpp"
#include "listener/access_log.hpp"
#include "listener/answer_sink.hpp"
#include "listener/connection.hpp"
#include "listener/connection_table.hpp"
#include "listener/event_sender.hpp"
#include "listener/static_files.hpp"
#include "runtime/config.hpp"
#include "transport/blob_arena.hpp"
#include "transport/shm_layout.hpp"

namespace edri::listener {

class GrpcFront;

class Answers {
 public:
  struct Metrics {
    transport::ListenerMetricsHeader& header;
    std::atomic<std::uint64_t>* request_counters;  // row-major, kStatusColumns per row
    std::uint32_t unrouted_row;                    // of answers given without a route
    std::atomic<std::uint64_t>* route_latency;     // row-major, kRouteLatencyCells per row
    std::atomic<std::uint64_t>* call_latency;      // the same, by plugin::CallRows row
  };
  Answers(const Config& config, ConnectionTable& table, EventSender& sender, transport::BlobArena* blobs,
          std::vector<MiddlewareDecl> middlewares, Metrics metrics);

  // Set once, before any connection: where gRPC events' answers go.
  void set_grpc(GrpcFront& grpc) { grpc_ = &grpc; }
  // Set once, before any connection, where EDRI_ACCESS_LOG is on.
  void set_access_log(AccessLog* log) { access_log_ = log; }
  AccessLog* access_log() const { return access_log_; }
  // A response (or a hop's problem) for a request of this listener.
  void on_response(const envelope::EnvelopeView& v);
  // The answer `v` (not a gRPC call's) for its slot of `sink`; `blob`: its
  // body in the blob area, claimed (`blob_lost`: it named one no longer
  // there).
  void deliver(AnswerSink& sink, const envelope::EnvelopeView& v, transport::BlobLease blob, bool blob_lost);
  // A piece of a streamed answer after its head.
  void on_stream_piece(const envelope::EnvelopeView& v);

  // Answers slot `seq` of `sink` (a connection's answers()): `headers` are
  // header lines ("Name: value\r\n"...) of this answer, before the slot's
  // middleware lines and what response-side middleware adds.
  void reply(AnswerSink& sink, std::uint32_t seq, int status, std::string_view content_type, std::string_view body,
             std::string_view headers = {});
  void problem(AnswerSink& sink, std::uint32_t seq, int status, std::string_view detail, std::string_view headers = {});
  // A static file's answer (from disk, or its small body).
  void reply_static(AnswerSink& sink, std::uint32_t seq, StaticFiles::Answer&& a, std::string_view headers);
  // A slot of its own, answered with a problem at once.
  void answer_locally(Connection& c, bool keep_alive, bool http10, bool head, int status, std::string_view detail,
                      std::string_view headers = {}, std::unique_ptr<AccessRecord> access = nullptr);
  // A connection refused past EDRI_MAX_CONNECTIONS, in the metrics.
  void count_refusal();

 private:
  // The same with a body of `length` bytes sent after the head: a
  // FileBody (from disk) or a BlobLease (from the blob area).
  void reply_body(AnswerSink& sink, std::uint32_t seq, int status, std::string_view content_type, AnswerBody body,
                  std::size_t length, std::string_view headers);
  void reply_stream(AnswerSink& sink, std::uint32_t seq, int status, std::string_view content_type,
                    const envelope::StreamHead& sh, std::uint64_t id, std::string_view headers);
  void reply_file(AnswerSink& sink, const envelope::EnvelopeView& v);
  // extra_headers_ = the handler's header lines (and Server-Timing).
  void collect_headers(const envelope::EnvelopeView& v);
  // composed_ = `headers`, then the slot's middleware lines, then what
  // response-side middleware adds for `status`.
  void compose_headers(const SlotInfo& info, int status, std::string_view headers);
  // Counts the answer (and logs it), whose body is `bytes_out` bytes.
  void record(SlotInfo& info, int status, std::uint64_t bytes_out);

  const Config& config_;
  ConnectionTable& table_;
  EventSender& sender_;
  transport::BlobArena* blobs_;
  GrpcFront* grpc_ = nullptr;
  AccessLog* access_log_ = nullptr;
  std::vector<MiddlewareDecl> middlewares_;
  bool has_response_middleware_ = false;
  Metrics metrics_;
  // Scratch, reused for every answer:
  std::string extra_headers_;
  std::string composed_;
  ResponseHeaders response_headers_;
};

}  // namespace edri::listener
