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
#include "http/route_table.hpp"
#include "listener/answers.hpp"
#include "listener/connection_table.hpp"
#include "listener/cors.hpp"
#include "listener/event_sender.hpp"
#include "listener/request_validator.hpp"
#include "listener/stream_hub.hpp"
#include "plugin/plugin_set.hpp"
#include "runtime/asio.hpp"
#include "runtime/config.hpp"

namespace edri::listener {

class WebSocketFront {
 public:
  // `validators`: one per event of `plugins` (null: no fields declared).
  WebSocketFront(const Config& config, const plugin::PluginSet& plugins,
                 const std::vector<std::shared_ptr<const RequestValidator>>& validators, Answers& answers,
                 EventSender& sender, const Cors* cors, StreamHub& streams);
  // Set once, before any connection: where pushes find their connections.
  void set_table(ConnectionTable& table) { table_ = &table; }

  // The upgrade request at EDRI_WEBSOCKET_PATH; `headers`: the response
  // header lines middleware added.
  void upgrade(Connection& c, const http::HttpRequest& req, std::string_view headers, bool http10);
  void message(Connection& c, std::string_view text);
  // A notification for some connections of this listener (its Targets).
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
  struct Command {
    enum class Kind : std::uint8_t { Event, Subscribe, Unsubscribe } kind;
    std::uint64_t type;  // the event's type, or the notification's
    std::shared_ptr<const RequestValidator> validator;
    std::vector<std::pair<std::string, http::ParamType>> path_params;  // of the event's first route
    std::string quoted_name;                                           // as JSON, for every answer
    bool replay = false;                                               // Registry::replay
  };

  void command(Connection& c, std::uint32_t seq, const Command& cmd, nlohmann::json& msg);
  void subscription(Connection& c, std::uint32_t seq, const Command& cmd, const nlohmann::json& msg);
  // The event's path parameters from the message's fields (their errors
  // first, as a request's would be).
  void check_path_params(const Command& cmd, const nlohmann::json& msg);
  void answer_invalid(Connection& c, std::uint32_t seq);

  const Config& config_;
  Answers& answers_;
  EventSender& sender_;
  const Cors* cors_;
  StreamHub& streams_;  // stream.subscribe and stream.unsubscribe, on every WebSocket
  ConnectionTable* table_ = nullptr;
  asio::io_context io_{1};
  asio::executor_work_guard<asio::io_context::executor_type> io_work_{io_.get_executor()};
  bool poll_needed_ = false;
  std::unordered_map<std::string, Command> commands_;
  std::unordered_map<std::uint64_t, std::string> push_names_;  // notification type -> quoted JSON name
  // Scratch, reused for every message:
  ValidatedFields validated_;
  std::vector<std::pair<std::string, std::string>> decoded_params_;
};

}  // namespace edri::listener
