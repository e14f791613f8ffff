// GrpcFront: gRPC on the listener's HTTP/2 (../shared/specs/grpc.md,
// docs/grpc.md). The generic service edri.v1.Edri reaches what WebSocket
// commands reach, through the same Commands: Call sends one event and
// answers with its answer; Connect sends each Event as it comes and
// answers them in order, with the pushes of the subscriptions made on it
// between them. A plugin's typed service's unary method sends its event
// with the request message as JSON fields, and answers the handler's JSON
// as its response message (grpc::ServiceCatalog transcodes). Server
// reflection (v1 and v1alpha) describes every service.
// grpc.health.v1.Health/Check says whether the server serves. What the edge or a hop refuses ends a Call with a gRPC
// status; what a handler answers, whatever its status, is an OK Call whose Event carries it. On Connect every refusal
// is an Event (status and problem), and the stream goes on. grpc-timeout is kept here: past it the call ends
// DEADLINE_EXCEEDED and a late answer is dropped.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <google/protobuf/message_lite.h>

#include "envelope/envelope.hpp"
#include "grpc/service_catalog.hpp"
#include "grpc/status.hpp"
#include "listener/access_log.hpp"
#include "listener/commands.hpp"
#include "listener/connection.hpp"
#include "listener/connection_table.hpp"
#include "listener/grpc_calls.hpp"
#include "listener/stream_hub.hpp"
#include "runtime/config.hpp"
#include "runtime/event_loop.hpp"

namespace edri::v1 {
class Event;
}

namespace edri::listener {

class GrpcFront {
 public:
  GrpcFront(const Config& config, const grpc::ServiceCatalog& services, Commands& commands, StreamHub& streams,
            EventLoop& events);
  // Set once, before any connection: where deadlines find their calls.
  void set_table(ConnectionTable& table) { table_ = &table; }
  // Set once, before any connection, where EDRI_ACCESS_LOG is on.
  void set_access_log(AccessLog* log) { access_log_ = log; }
  // Set once, before any connection: where calls are counted by code.
  // `call_latency`: the listener's first call latency row (plugin/call_rows.hpp).
  void set_metrics(transport::ListenerMetricsHeader& metrics, std::atomic<std::uint64_t>* call_latency) {
    metrics_ = &metrics;
    call_latency_ = call_latency;
  }

  // From the connection (ConnectionOwner::grpc_*).
  void open(Connection& c, std::int32_t stream, http::HttpRequest& head);
  void body(Connection& c, std::int32_t stream, std::string_view bytes, bool end);
  void closed(Connection& c, std::int32_t stream);
  // The connection goes: its calls' deadlines are forgotten.
  void connection_closed(Connection& c);

  // True when answer `seq` of `c` is a gRPC call's event's: it comes here
  // (gRPC runs on HTTP/2 only, so this front alone knows the link).
  static bool owns(const Connection& c, std::uint32_t seq) { return c.http2() && GrpcCalls::is_call_seq(seq); }
  // An answer to event `seq` of `c` (a handler's, or a hop's problem);
  // `body` from the Body section or the blob area.
  void answer(Connection& c, const envelope::EnvelopeView& v, std::string_view body);
  // The listener answers event `seq` itself (no answer came in time, or
  // the process that had it died).
  void refused(Connection& c, std::uint32_t seq, int status, std::string_view detail);
  // A push of notification `type` to connection `c`: to each Connect call
  // on it that subscribed. `json`: {"command":name,"event":payload}.
  void push(Connection& c, std::uint64_t type, std::string_view json);
  // SIGTERM: a Connect call takes no more events and ends UNAVAILABLE once
  // its answers are out; health checks say NOT_SERVING.
  void drain(Connection& c);

  // Live streams subscribed on a Connect call (stream.subscribe): a
  // frame's JSON as an Event of type "stream"; whether the call's client
  // took all it was sent; a wake once it has (StreamHub::call_drained).
  void stream_frame(Connection& c, std::int32_t call, std::string_view json);
  bool stream_behind(Connection& c, std::int32_t call);
  void want_drain(Connection& c, std::int32_t call);

 private:
  // The call on `stream` of `c`, or null.
  static GrpcCall* find_call(Connection& c, std::int32_t stream);
  // `m` serialized straight after its prefix: one buffer, no copy.
  static std::string framed(const google::protobuf::MessageLite& m);
  struct Where {
    Http2Link& link;
    std::int32_t stream;
    GrpcCall& call;
  };
  void take_messages(Connection& c, Where w);
  // A message with the compressed flag: inflated within EDRI_MAX_BODY_SIZE
  // where the call agreed gzip, else the call fails.
  void take_compressed(Connection& c, Where w, std::string_view bytes);
  void on_message(Connection& c, Where w, std::string_view bytes);
  void health(Where w, std::string_view bytes);
  void reflection(Where w, std::string_view bytes);
  // A typed method's request: its message as the fields of its event.
  void typed(Connection& c, Where w, std::string_view bytes);
  // A typed method's answer: the handler's JSON as its response message,
  // or a handler's 4xx/5xx as a gRPC status.
  void typed_answer(Where w, int status, std::string_view content_type, std::string_view body,
                    const envelope::EnvelopeView* v);
  // Sends `cmd` for event `seq` of `call`, with the call's metadata (or
  // `from`) and what is left of its deadline; a refusal is its answer
  // (false).
  bool send_command(Connection& c, std::uint32_t seq, const Commands::Command& cmd, nlohmann::json& fields,
                    const GrpcCall& call, const http::HttpRequest* from = nullptr);
  void event(Connection& c, Where w, v1::Event& ev);
  // stream.subscribe and stream.unsubscribe on Connect: answered by the
  // stream's frames; only a refusal is an answer.
  void live_stream(Connection& c, Where w, const v1::Event& ev, const nlohmann::json& fields);
  // An Event outside the answers' order (a push, a stream's frame) for a
  // call; the call ends if its client is too far behind to take it.
  void send_unordered(Connection& c, Where w, const std::string& framed);
  // The answer to event `seq`: a handler's (`refusal` false) or the
  // edge's and hops' (true).
  void deliver(Connection& c, std::uint32_t seq, int status, std::string_view content_type, std::string_view body,
               const envelope::EnvelopeView* v, bool refusal);
  // The first message sends the answer's head, with `metadata` lines.
  void send_message(Where w, std::string framed, std::string_view metadata = {});
  void finish(Where w, grpc::Code code, std::string_view message);
  // The call ended with `code`: counted, and its access log line written.
  // Called where `finished` turns true, so once a call.
  void ended(GrpcCall& call, grpc::Code code);
  // finish() for a message the call cannot take: on a call with events
  // still unanswered, once their answers went (no more messages taken).
  void fail(Where w, grpc::Code code, std::string_view message);
  // A Connect call whose client is done (or whose server stops) ends once
  // its last answer went.
  void finish_if_drained(Where w);
  void set_deadline(Connection& c, std::int32_t stream, GrpcCall& call, std::chrono::nanoseconds timeout);
  void forget_deadline(GrpcCall& call);
  void arm_timer();
  void on_timer();
  // Subscriptions of a call that ends, unless another call on the
  // connection keeps them.
  void drop_subscriptions(Connection& c, Http2Link& link, GrpcCall& call);

  const Config& config_;
  const grpc::ServiceCatalog& services_;
  Commands& commands_;
  StreamHub& streams_;
  ConnectionTable* table_ = nullptr;
  AccessLog* access_log_ = nullptr;
  transport::ListenerMetricsHeader* metrics_ = nullptr;
  std::atomic<std::uint64_t>* call_latency_ = nullptr;
  Deadlines deadlines_;
  EventLoop::Timer timer_;
  bool draining_ = false;
  // Scratch, reused:
  ValidatedFields validated_;
  http::HttpRequest with_meta_;
};

}  // namespace edri::listener
