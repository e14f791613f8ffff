// ConnectionOwner: what a Connection needs from the listener around it, and
// nothing more. A connection reads and writes its client; everything it
// cannot decide alone (what a request means, that it has output to write,
// that it closed) it says through this, the way WebSocketSession talks to
// its Connection. No part of the listener behind it is known to it.
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

  virtual const Config& config() const = 0;
  virtual EventLoop& events() = 0;
  // The queue WebSocket sessions post Beast's handlers to (decision 0005).
  virtual asio::io_context& io() = 0;
  virtual http::ParserLimits parser_limits() const = 0;
  virtual bool draining() const = 0;

  // What the client sent: a whole request, one it must be refused (with
  // `status`, and the connection closes after), or a WebSocket message.
  virtual void request(Connection& c, http::HttpRequest& req) = 0;
  virtual void refuse(Connection& c, int status, std::string_view reason) = 0;
  virtual void websocket_message(Connection& c, std::string_view text) = 0;
  // gRPC over HTTP/2 (docs/grpc.md): a call's head on `stream`, its body's
  // bytes as they come (`end`: the client is done), and its end (answered,
  // cancelled, or cut with the connection).
  virtual void grpc_open(Connection& c, std::int32_t stream, http::HttpRequest& head) = 0;
  virtual void grpc_body(Connection& c, std::int32_t stream, std::string_view bytes, bool end) = 0;
  virtual void grpc_closed(Connection& c, std::int32_t stream) = 0;
  // Server-Sent Events over HTTP/2: the client of events stream `stream`
  // took all it was sent (as asked); the stream ended.
  virtual void events_drained(Connection& c, std::int32_t stream) = 0;
  virtual void events_closed(Connection& c, std::int32_t stream) = 0;

  // The connection has output to write this turn; a WebSocket session has
  // handlers to run; the connection closed (it goes at the end of the turn).
  virtual void wants_flush(Connection& c) = 0;
  virtual void wants_poll() = 0;
  virtual void closed(Connection& c) = 0;
  // The answer to slot `seq` will not be wanted (an HTTP/2 stream or gRPC
  // call reset before it came; kEverySlot: the client closed, or the
  // connection is closing, with answers due): a handler waiting for it
  // may stop.
  static constexpr std::uint32_t kEverySlot = UINT32_MAX;
  virtual void answer_abandoned(Connection& c, std::uint32_t seq) = 0;

  // The bytes the connection holds for its client changed (the listener's
  // EDRI_OUTPUT_BUFFER_TOTAL); it was closed for falling behind.
  virtual void held_changed(std::size_t before, std::size_t after) = 0;
  virtual void shed() = 0;
  // A trusted proxy's connection came without a valid PROXY protocol
  // header (`why`); it closes unanswered.
  virtual void proxy_header_refused(Connection& c, std::string_view why) = 0;

  // A streamed answer's client took `bytes` more (its producer may make as
  // many), or went away (its producer stops).
  virtual void stream_credit(const StreamRef& s, std::uint64_t bytes) = 0;
  virtual void stream_cancel(const StreamRef& s) = 0;
  // A connection that asked (Connection::want_drain) took all its output.
  virtual void stream_drained(Connection& c) = 0;
};

}  // namespace edri::listener
