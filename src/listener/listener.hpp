// Listener: HTTP/1.1 on one side, envelopes on the other.
//
// Accepts connections on the socket the supervisor bound, parses requests,
// resolves routes and checks path parameter types at the edge (a bad
// request never crosses a process boundary), and sends each routed request
// to the broker as an envelope. Responses come back through the broker and
// are written to the connection that asked, in order.
//
// WebSocket connections (at EDRI_WEBSOCKET_PATH) speak the JSON command
// protocol of docs/websocket.md: each text message names a command; the
// listener checks its fields like a request's and sends it as the
// command's event; answers go back in order, and pushes of subscribed
// notifications arrive from the broker in between.
#pragma once

#include <cstdint>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "runtime/asio.hpp"

#include "envelope/envelope.hpp"
#include "http/request_parser.hpp"
#include "http/response_writer.hpp"
#include "http/route_table.hpp"
#include "listener/builtin_endpoints.hpp"
#include "listener/connection.hpp"
#include "listener/cors.hpp"
#include "listener/request_validator.hpp"
#include "listener/static_files.hpp"
#include "listener/tls.hpp"
#include "plugin/plugin_set.hpp"
#include "runtime/config.hpp"
#include "runtime/event_loop.hpp"
#include "runtime/process_loop.hpp"
#include "runtime/successor_watch.hpp"

namespace edri::listener {

class Connection;

class Listener {
 public:
  // `unix_fd`: the EDRI_UNIX_SOCKET listening socket, or -1.
  Listener(ProcessLoop& loop, const Config& config, const plugin::PluginSet& plugins, std::uint16_t index,
           int listen_fd, int unix_fd = -1);
  ~Listener();

  void start();

  // Used by Connection.
  void dispatch(Connection& c, http::HttpRequest& req);
  // Sends the response for slot `seq`: runs response-side middleware and
  // adds the headers request-side middleware left in the slot.
  void reply(Connection& c, std::uint32_t seq, int status, std::string_view content_type, std::string_view body,
             std::string_view headers);
  // The same with a body of `length` bytes sent after the head: a
  // FileBody (from disk) or a BlobLease (from the blob area).
  template <class Body>
  void reply_body(Connection& c, std::uint32_t seq, int status, std::string_view content_type, Body body,
                  std::size_t length, std::string_view headers);
  void problem(Connection& c, std::uint32_t seq, int status, std::string_view detail, std::string_view headers);
  void answer_locally(Connection& c, bool keep_alive, bool http10, bool head, int status, std::string_view detail,
                      std::string_view extra_headers = {});
  void mark_dirty(Connection& c);
  void release(Connection& c);
  // A connection's held_bytes() changed from `before` to `after`.
  void held_changed(std::size_t before, std::size_t after);
  // A connection was closed for falling too far behind (metrics).
  void client_shed();
  bool draining() const { return draining_; }
  const Config& config() const { return config_; }
  EventLoop& events() { return loop_.events(); }
  http::ParserLimits parser_limits() const;

  // WebSocket: the queue of Beast's completion handlers, run once per turn.
  asio::io_context& io() { return io_; }
  void need_poll() { poll_needed_ = true; }
  void ws_message(Connection& c, std::string_view text);
  // A streamed answer's producer may make `bytes` more (its client took
  // them), or must stop (its client is gone).
  void stream_credit(const Connection::StreamRef& s, std::uint64_t bytes);
  void stream_cancel(const Connection::StreamRef& s);

 private:
  struct Target {
    std::uint64_t event_type;
    std::shared_ptr<const RequestValidator> validator;  // null: no fields declared
    bool replay = false;                                // Registry::replay
  };

  struct WsCommand {
    enum class Kind : std::uint8_t { Event, Subscribe, Unsubscribe } kind;
    std::uint64_t type;  // the event's type, or the notification's
    std::shared_ptr<const RequestValidator> validator;
    std::vector<std::pair<std::string, http::ParamType>> path_params;  // of the event's first route
    std::string quoted_name;                                           // as JSON, for every answer
    bool replay = false;                                               // Registry::replay
  };

  // The upgrade request at EDRI_WEBSOCKET_PATH.
  void ws_upgrade(Connection& c, const http::HttpRequest& req, bool http10);
  void ws_command(Connection& c, std::uint32_t seq, const WsCommand& cmd, nlohmann::json& msg);
  // Answers command slot `seq` with a handler's (or a hop's) response.
  void ws_answer(Connection& c, std::uint32_t seq, int status, std::string_view content_type, std::string_view body);
  void ws_error(Connection& c, std::uint32_t seq, int status, std::string_view detail);
  bool send_control(Connection& c, std::uint64_t code, std::uint32_t seq, std::span<const std::byte> payload);
  void poll_io();
  // Over EDRI_OUTPUT_BUFFER_TOTAL: closes the clients furthest behind until
  // the listener is under it again.
  void shed_output();
  // A notification for some WebSocket connections of this listener
  // (its Targets section): framed once, sent to each.
  void on_push(const envelope::EnvelopeView& v);
  // The broker could not queue a push for these connections: they close.
  void close_pushed(const envelope::EnvelopeView& v);
  // A header addressed back to slot `seq` of connection `c`.
  envelope::EnvelopeHeader origin_header(const Connection& c, envelope::Kind kind, std::uint64_t type,
                                         std::uint32_t seq);
  // The declared query, header and cookie fields that passed, as sections.
  void add_validated(envelope::EnvelopeWriter& w) const;
  void accept_all();
  // Accepts every waiting connection of `fd`; false when it must retry later.
  bool accept_from(int fd, const TlsContext* tls);
  void record(const Connection::SlotInfo& info, int status);
  // composed_ = `headers`, then the slot's middleware headers, then what
  // response-side middleware adds for `status`.
  void compose_headers(const Connection::SlotInfo& info, int status, std::string_view headers);
  // Sends a static-file answer (from disk, or its small body).
  void reply_static(Connection& c, std::uint32_t seq, StaticFiles::Answer&& a, std::string_view headers);
  // Built-in (request id, CORS) then plugin middleware; false when one of
  // them answered the request.
  bool run_request_middleware(Connection& c, const http::HttpRequest& req, Method method, std::string_view path,
                              std::string_view query, bool keep_alive, bool http10);
  void on_response(std::span<const std::byte> record);
  void on_stream_piece(const envelope::EnvelopeView& v);
  // The head of a streamed answer for slot `seq`.
  void reply_stream(Connection& c, std::uint32_t seq, int status, std::string_view content_type,
                    const envelope::StreamHead& sh, std::uint64_t id, std::string_view headers);
  void stream_control(const Connection::StreamRef& s, std::uint64_t code, std::span<const std::byte> payload);
  // True: work is left for the next turn (a WebSocket session to poll).
  bool after_drain();
  void sweep_overdue();
  // The broker died: requests sent before that and still unanswered once
  // its successor has served for kLostAnswerGrace died with it (those it
  // never took excepted): 503.
  void answer_lost();
  // SIGTERM: stop accepting, drain every connection, stop the loop when
  // none is left or at EDRI_SHUTDOWN_TIMEOUT.
  void begin_drain();
  // Answers 503 on a connection past EDRI_MAX_CONNECTIONS and closes it.
  void refuse(UniqueFd fd, bool tls);
  void stop_if_drained();
  // A closed connection gives its id back at once (release), so this is
  // every connection not closed yet.
  std::size_t open_connections() const { return connections_.size() - free_ids_.size(); }
  Connection* find(std::uint32_t id, std::uint32_t generation);

  ProcessLoop& loop_;
  const Config& config_;
  // Before the connections: their WebSocket sessions post into it.
  asio::io_context io_{1};
  asio::executor_work_guard<asio::io_context::executor_type> io_work_{io_.get_executor()};
  bool poll_needed_ = false;
  std::unordered_map<std::string, WsCommand> ws_commands_;
  std::unordered_map<std::uint64_t, std::string> push_names_;  // notification type -> quoted JSON name
  transport::Outbox& to_broker_;
  std::uint16_t index_;
  http::RouteTable routes_;
  std::vector<Target> targets_;
  UniqueFd listen_fd_;  // our own duplicate of the supervisor's socket
  UniqueFd unix_fd_;    // and of its Unix domain socket, if any
  EventLoop::Timer accept_retry_;
  EventLoop::Timer sweep_;
  SuccessorWatch lost_watch_;
  std::size_t connection_cap_;  // this listener's share of EDRI_MAX_CONNECTIONS
  EventLoop::Timer drain_deadline_;
  bool draining_ = false;
  std::uint64_t refusals_ = 0;
  // (connection, generation, seq) of requests the dead broker never took.
  std::set<std::tuple<std::uint32_t, std::uint32_t, std::uint32_t>> left_for_successor_;
  http::ResponseWriter writer_;
  std::vector<std::unique_ptr<Connection>> connections_;
  std::vector<std::uint32_t> generations_;
  std::vector<std::uint32_t> free_ids_;
  std::vector<Connection*> dirty_;
  std::size_t held_total_ = 0;  // sum of the connections' held_bytes()
  std::vector<std::unique_ptr<Connection>> graveyard_;
  std::uint64_t next_request_ = 0;
  std::unique_ptr<TlsContext> tls_;  // null: plain HTTP
  BuiltinEndpoints builtins_;
  StaticFiles static_files_;
  std::uint32_t unrouted_row_;  // metrics row of answers given without a route
  // This listener's block of the shared metrics, resolved once.
  transport::ListenerMetricsHeader& metrics_;
  std::atomic<std::uint64_t>* request_counters_;  // row-major, kStatusColumns per row
  std::vector<MiddlewareDecl> middlewares_;
  bool has_response_middleware_ = false;
  std::unique_ptr<Cors> cors_;
  std::uint32_t instance_tag_;  // distinguishes request ids across restarts
  std::uint64_t request_ids_ = 0;
  // Scratch, reused for every request:
  std::string extra_headers_;
  std::string composed_;
  std::string request_id_;
  ValidatedFields validated_;
  std::vector<std::pair<std::string, std::string>> decoded_params_;
  ResponseHeaders request_headers_;
  ResponseHeaders response_headers_;
  Request view_;
};

}  // namespace edri::listener
