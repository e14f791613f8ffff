// Every table a connection talks to (connection_owner.hpp), each operation
// doing nothing: a test derives from it and records what it watches.
#pragma once

#include "listener/connection_owner.hpp"

namespace edri::testing {

using namespace edri::listener;

struct QuietTables : ConnectionOwner, WebSocketOwner, GrpcOwner, LiveOwner, StreamProducers, ConnectionCounts {
  void request(Connection&, http::HttpRequest&) override {}
  void refuse(Connection&, int, std::string_view) override {}
  void wants_flush(Connection&) override {}
  void answer_abandoned(Connection&, std::uint32_t) override {}
  void closed(Connection&) override {}
  void websocket_message(Connection&, std::string_view) override {}
  void wants_poll() override {}
  void grpc_open(Connection&, std::int32_t, http::HttpRequest&) override {}
  void grpc_body(Connection&, std::int32_t, std::string_view, bool) override {}
  void grpc_closed(Connection&, std::int32_t) override {}
  void grpc_push(Connection&, std::uint64_t, std::string_view) override {}
  void grpc_stream_frame(Connection&, std::int32_t, std::string_view) override {}
  bool grpc_stream_behind(Connection&, std::int32_t) override { return false; }
  void grpc_want_drain(Connection&, std::int32_t) override {}
  void events_drained(Connection&, std::int32_t) override {}
  void events_closed(Connection&, std::int32_t) override {}
  void stream_drained(Connection&) override {}
  void stream_credit(const StreamRef&, std::uint64_t) override {}
  void stream_cancel(const StreamRef&) override {}
  void held_changed(std::size_t, std::size_t) override {}
  void shed() override {}
  void proxy_header_refused(Connection&, std::string_view) override {}

  // A context whose every table is this one.
  ConnectionContext context(const Config& config, EventLoop& loop, asio::io_context& io, const bool& draining) {
    return ConnectionContext{config, loop, io, {}, draining, *this, *this, *this, *this, *this, *this};
  }
};

}  // namespace edri::testing
