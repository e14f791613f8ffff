// WebSocketFront: the listener's side of the WebSocket protocol
// (docs/websocket.md). It takes the upgrade, reads each message as a
// command (its fields checked like a request's, then sent as the command's
// event), keeps each connection's subscriptions, and hands a push to the
// connections of this listener that subscribed, framed once for all of
// them. It owns the queue of Beast's handlers, run once per loop turn
// (decision 0005).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "envelope/envelope.hpp"
#include "http/request_parser.hpp"
#include "listener/answers.hpp"
#include "listener/commands.hpp"
#include "listener/connection_table.hpp"
#include "listener/cors.hpp"
#include "listener/request_validator.hpp"
#include "listener/stream_hub.hpp"
#include "runtime/asio.hpp"
#include "runtime/config.hpp"

namespace edri::listener {

class WebSocketFront {
 public:
  WebSocketFront(const Config& config, Commands& commands, Answers& answers, const Cors* cors, StreamHub& streams);
  // Set once, before any connection: where pushes find their connections.
  void set_table(ConnectionTable& table) { table_ = &table; }

  // The upgrade request at EDRI_WEBSOCKET_PATH; `headers`: the response
  // header lines middleware added.
  // `access`: the handshake's access log record (logged 101 once the
  // upgrade is taken), or null.
  void upgrade(Connection& c, const http::HttpRequest& req, std::string_view headers, bool http10,
               std::unique_ptr<AccessRecord> access = nullptr);
  void message(Connection& c, std::string_view text);
  // A notification for some connections of this listener (its Targets):
  // WebSockets, and gRPC Connect calls that subscribed.
  void on_push(const envelope::EnvelopeView& v);
  // A control from the broker (kControlPushClose: these connections
  // missed a push and close).
  void on_control(const envelope::EnvelopeView& v);
  // Connection `c` closed: its subscriptions end.
  void closed(Connection& c);

  asio::io_context& io() { return io_; }
  void need_poll() { poll_needed_ = true; }
  bool poll_needed() const { return poll_needed_; }
  // Runs the handlers Beast posted.
  void poll();

 private:
  // A command's slot (WebSocketCommands::open_command), with its access
  // log record where the log is on: `name` the command's, `event` the
  // event it sends (empty: none), `bytes_in` the message's size, `row`
  // its latency row (plugin/call_rows.hpp).
  std::uint32_t open_command(Connection& c, std::string quoted, std::string_view name, std::string_view event,
                             std::size_t bytes_in, std::uint32_t row);
  void answer_invalid(Connection& c, std::uint32_t seq);
  void answer_refusal(Connection& c, std::uint32_t seq, const Commands::Refusal& r);

  const Config& config_;
  Commands& commands_;
  Answers& answers_;
  const Cors* cors_;
  StreamHub& streams_;  // stream.subscribe and stream.unsubscribe, on every WebSocket
  ConnectionTable* table_ = nullptr;
  asio::io_context io_{1};
  asio::executor_work_guard<asio::io_context::executor_type> io_work_{io_.get_executor()};
  bool poll_needed_ = false;
  ValidatedFields validated_;  // scratch, reused for every message
};

}  // namespace edri::listener
