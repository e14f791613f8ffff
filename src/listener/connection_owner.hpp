// What a Connection needs from the listener around it, and nothing more. A
// connection reads and writes its client; everything it cannot decide alone
// it says through these. They are small tables of operations, one per
// concern, each implemented by the part of the listener that serves it (as
// NGINX Unit's per-protocol operations tables are), so no part of the
// listener behind them is known to a connection:
//
//   ConnectionOwner   a request came or must be refused; the connection
//                     has output this turn, its answers will not be
//                     wanted, it closed
//   WebSocketOwner    a WebSocket message; Beast has handlers to run
//   GrpcOwner         gRPC calls over HTTP/2 (docs/grpc.md), and what
//                     pushes and live streams send to Connect calls
//   LiveOwner         live streams' subscribers took what they were sent
//                     (docs/streams.md)
//   StreamProducers   a streamed answer's client took bytes, or went
//   ConnectionCounts  the output held over all connections, and what was
//                     shed or refused, for the bound and the metrics
//
// ConnectionContext carries them, with the settings and the loop.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "http/request_parser.hpp"
#include "listener/stream_ref.hpp"
#include "runtime/asio.hpp"
#include "runtime/config.hpp"
#include "runtime/event_loop.hpp"

namespace edri::listener {

class Connection;

class ConnectionOwner {
 public:
  virtual ~ConnectionOwner() = default;
  // What the client sent: a whole request (HTTP/1.1, or an HTTP/2
  // stream's), or one that must be refused (with `status`; on HTTP/1.1 the
  // connection closes after).
  virtual void request(Connection& c, http::HttpRequest& req) = 0;
  virtual void refuse(Connection& c, int status, std::string_view reason) = 0;
  // The connection has output to write this turn.
  virtual void wants_flush(Connection& c) = 0;
  // The answer to slot `seq` will not be wanted (an HTTP/2 stream or gRPC
  // call reset before it came; kEverySlot: the client closed, or the
  // connection is closing, with answers due): a handler waiting for it
  // may stop.
  static constexpr std::uint32_t kEverySlot = UINT32_MAX;
  virtual void answer_abandoned(Connection& c, std::uint32_t seq) = 0;
  // The connection closed (it goes at the end of the turn).
  virtual void closed(Connection& c) = 0;
};

class WebSocketOwner {
 public:
  virtual ~WebSocketOwner() = default;
  virtual void websocket_message(Connection& c, std::string_view text) = 0;
  // A WebSocket session has handlers to run (decision 0005).
  virtual void wants_poll() = 0;
};

class GrpcOwner {
 public:
  virtual ~GrpcOwner() = default;
  // A call's head on `stream`, its body's bytes as they come (`end`: the
  // client is done), and its end (answered, cancelled, or cut with the
  // connection).
  virtual void grpc_open(Connection& c, std::int32_t stream, http::HttpRequest& head) = 0;
  virtual void grpc_body(Connection& c, std::int32_t stream, std::string_view bytes, bool end) = 0;
  virtual void grpc_closed(Connection& c, std::int32_t stream) = 0;
  // A push of notification `type` (`json`: {"command":name,"event":..})
  // to each Connect call on `c` that subscribed.
  virtual void grpc_push(Connection& c, std::uint64_t type, std::string_view json) = 0;
  // A live stream's frame for Connect call `stream` (its JSON); whether
  // its client has not taken what it was sent before; LiveOwner's
  // events_drained once it has.
  virtual void grpc_stream_frame(Connection& c, std::int32_t stream, std::string_view json) = 0;
  virtual bool grpc_stream_behind(Connection& c, std::int32_t stream) = 0;
  virtual void grpc_want_drain(Connection& c, std::int32_t stream) = 0;
};

class LiveOwner {
 public:
  virtual ~LiveOwner() = default;
  // Server-Sent Events over HTTP/2: the client of events stream `stream`
  // took all it was sent (as asked); the stream ended.
  virtual void events_drained(Connection& c, std::int32_t stream) = 0;
  virtual void events_closed(Connection& c, std::int32_t stream) = 0;
  // A connection that asked (Connection::want_drain) took all its output.
  virtual void stream_drained(Connection& c) = 0;
};

class StreamProducers {
 public:
  virtual ~StreamProducers() = default;
  // A streamed answer's client took `bytes` more (its producer may make as
  // many), or went away (its producer stops).
  virtual void stream_credit(const StreamRef& s, std::uint64_t bytes) = 0;
  virtual void stream_cancel(const StreamRef& s) = 0;
};

class ConnectionCounts {
 public:
  virtual ~ConnectionCounts() = default;
  // The bytes a connection holds for its client changed (the listener's
  // EDRI_OUTPUT_BUFFER_TOTAL); one was closed for falling behind.
  virtual void held_changed(std::size_t before, std::size_t after) = 0;
  virtual void shed() = 0;
  // A trusted proxy's connection came without a valid PROXY protocol
  // header (`why`); it closes unanswered.
  virtual void proxy_header_refused(Connection& c, std::string_view why) = 0;
};

// What every connection of a listener shares: its settings and loop, and
// the tables above.
struct ConnectionContext {
  const Config& config;
  EventLoop& events;
  // The queue WebSocket sessions post Beast's handlers to (decision 0005).
  asio::io_context& io;
  http::ParserLimits parser_limits;
  const bool& draining;
  ConnectionOwner& owner;
  WebSocketOwner& websocket;
  GrpcOwner& grpc;
  LiveOwner& live;
  StreamProducers& producers;
  ConnectionCounts& counts;
};

}  // namespace edri::listener
