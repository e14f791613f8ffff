// Listener: HTTP/1.1, HTTP/2, WebSocket and gRPC on one side, envelopes on
// the other.
//
// The listener process's parts, each in its own file:
//
//   ConnectionTable  the client connections: accepting, finding one for an
//                    answer, flushing, the bound over all their output
//   Connection       one client: its socket (ClientSocket), what it owes
//                    (OutputQueue), the protocol it speaks, and where its
//                    answers go (AnswerSink: Http1Answers, Http2Link,
//                    WebSocketCommands); decision 0033
//   HttpFront        a request: middleware, the route, edge checks, the
//                    event sent on its way (through an Exchange)
//   Commands         what a WebSocket message or a gRPC Event may name
//   WebSocketFront   the upgrade, commands, subscriptions, pushes
//   GrpcFront        gRPC calls over HTTP/2: Call, Connect, health, typed
//                    services and reflection (grpc::ServiceCatalog)
//   Answers          envelopes back to answers, built once for every
//                    protocol: responses, problems, streams
//   StreamHub        live streams: their state, subscribers and frames
//   EventSender      what leaves for the broker
//
// This class builds them, wires them to the process loop (records from the
// broker, the end of each turn, signals, a dead broker) and implements the
// tables every Connection talks to (connection_owner.hpp), each forwarded
// to the part that serves it. It also keeps the time: answers that never
// came, idle limits, the graceful stop.
#pragma once

#include <cstdint>
#include <memory>
#include <set>
#include <span>
#include <tuple>

#include "listener/answers.hpp"
#include "listener/builtin_endpoints.hpp"
#include "listener/commands.hpp"
#include "listener/connection_owner.hpp"
#include "listener/connection_table.hpp"
#include "listener/cors.hpp"
#include "listener/event_sender.hpp"
#include "listener/gate.hpp"
#include "listener/grpc_front.hpp"
#include "listener/http_front.hpp"
#include "listener/stream_hub.hpp"
#include "listener/tls.hpp"
#include "listener/websocket_front.hpp"
#include "plugin/plugin_set.hpp"
#include "runtime/config.hpp"
#include "runtime/event_loop.hpp"
#include "runtime/process_loop.hpp"
#include "runtime/successor_watch.hpp"
#include "transport/unique_fd.hpp"

namespace edri::listener {

class Listener final : public ConnectionOwner,
                       public WebSocketOwner,
                       public GrpcOwner,
                       public LiveOwner,
                       public StreamProducers,
                       public ConnectionCounts {
 public:
  // `unix_fd`: the EDRI_UNIX_SOCKET listening socket, or -1; `admin_fd`:
  // EDRI_ADMIN_SOCKET's, or -1.
  // `helper_cpus`: where its helper threads (the access log's writer) may
  // run; none: where the listener runs.
  Listener(ProcessLoop& loop, const Config& config, const plugin::PluginSet& plugins, std::uint16_t index,
           int listen_fd, int unix_fd = -1, int admin_fd = -1, const std::vector<int>& helper_cpus = {});
  ~Listener() override;
  // What placement this server runs with, for /health.
  void set_placement(std::string summary, bool spread, std::uint32_t spin) {
    builtins_.set_placement(std::move(summary), spread, spin);
  }

  void start();

  // ConnectionOwner, and the other tables a connection talks to
  // (connection_owner.hpp), each forwarded to the part that serves it.
  void request(Connection& c, http::HttpRequest& req) override { http_.dispatch(c, req); }
  void refuse(Connection& c, int status, std::string_view reason) override;
  void websocket_message(Connection& c, std::string_view text) override { websocket_.message(c, text); }
  void grpc_open(Connection& c, std::int32_t stream, http::HttpRequest& head) override { grpc_.open(c, stream, head); }
  void grpc_body(Connection& c, std::int32_t stream, std::string_view bytes, bool end) override {
    grpc_.body(c, stream, bytes, end);
  }
  void grpc_closed(Connection& c, std::int32_t stream) override { grpc_.closed(c, stream); }
  void events_drained(Connection& c, std::int32_t stream) override { streams_.call_drained(c, stream); }
  void events_closed(Connection& c, std::int32_t stream) override { streams_.call_closed(c, stream); }

  void grpc_push(Connection& c, std::uint64_t type, std::string_view json) override { grpc_.push(c, type, json); }
  void grpc_stream_frame(Connection& c, std::int32_t call, std::string_view json) override {
    grpc_.stream_frame(c, call, json);
  }
  bool grpc_stream_behind(Connection& c, std::int32_t call) override { return grpc_.stream_behind(c, call); }
  void grpc_want_drain(Connection& c, std::int32_t call) override { grpc_.want_drain(c, call); }

  void wants_flush(Connection& c) override { table_.mark_dirty(c); }
  void wants_poll() override { websocket_.need_poll(); }
  void closed(Connection& c) override;
  void answer_abandoned(Connection& c, std::uint32_t seq) override { sender_.client_gone(c, seq); }
  void held_changed(std::size_t before, std::size_t after) override { table_.held_changed(before, after); }
  void shed() override { table_.count_shed(); }
  void proxy_header_refused(Connection& c, std::string_view why) override { table_.count_proxy_refused(c, why); }
  void stream_credit(const StreamRef& s, std::uint64_t bytes) override { sender_.stream_credit(s, bytes); }
  void stream_cancel(const StreamRef& s) override { sender_.stream_cancel(s); }
  void stream_drained(Connection& c) override { streams_.drained(c); }

 private:
  // One record from the broker: a response, a stream piece, a push or a
  // control.
  void on_broker_record(std::span<const std::byte> record);
  http::ParserLimits parser_limits() const;
  // An answer a manager sent here directly (docs/decisions/0016).
  void on_manager_record(std::span<const std::byte> record);
  // True: work is left for the next turn (a WebSocket session to poll, a
  // connection to flush).
  bool after_drain();
  void accept_all();
  // Accepts what waits on `fd`; false when it must retry later.
  bool accept_from(int fd, const TlsContext* tls, bool admin = false);
  void sweep();
  // Requests that outlived EDRI_API_RESPONSE_TIMEOUT by two seconds (lost
  // with a process that died): 504.
  void answer_overdue();
  // The broker died: requests sent before that and still unanswered once
  // its successor has served for kLostAnswerGrace died with it (those it
  // never took excepted): 503.
  void answer_lost();
  void answer_missing(Connection& c, std::uint32_t seq, int status, std::string_view detail);
  // SIGTERM: stop accepting, drain every connection, stop the loop when
  // none is left or at EDRI_SHUTDOWN_TIMEOUT; a second one stops it now.
  void on_stop_signal();
  // SIGUSR2, a reload: the same, but gently (Connection::drain_gently):
  // a new generation serves the clients this one lets go.
  void begin_drain(bool gently);
  // Every connection drains now: gRPC streaming calls end UNAVAILABLE,
  // event streams end, WebSockets get 1001, the idle close.
  void drain_all();
  void stop_if_drained();

  ProcessLoop& loop_;
  const Config& config_;
  // Null when EDRI_ACCESS_LOG is off; before what writes to it, so that it
  // goes last.
  std::unique_ptr<AccessLog> access_log_;
  EventSender sender_;
  std::vector<std::uint64_t> answered_;  // request ids answered by managers directly, for the broker
  std::unique_ptr<TlsContext> tls_;      // null: plain HTTP
  std::unique_ptr<Cors> cors_;           // null: CORS off
  BuiltinEndpoints builtins_;
  std::vector<std::shared_ptr<const RequestValidator>> validators_;  // by event (null: no fields)
  Answers answers_;
  StreamHub streams_;
  grpc::ServiceCatalog grpc_services_;
  Gate gate_;  // the plugins' middleware, on every protocol
  Commands commands_;
  GrpcFront grpc_;
  WebSocketFront websocket_;   // before the connections: their sessions post into its queue
  ConnectionContext context_;  // what every connection is given
  ConnectionTable table_;
  HttpFront http_;
  UniqueFd listen_fd_;  // our own duplicate of the supervisor's socket
  UniqueFd unix_fd_;    // and of its Unix domain socket, if any
  UniqueFd admin_fd_;   // and of its admin socket, if any
  EventLoop::Timer accept_retry_;
  EventLoop::Timer sweep_;
  EventLoop::Timer drain_deadline_;
  // A reload's drain: EDRI_RELOAD_GRACE after it, what stayed open
  // (WebSockets, event streams) is drained as SIGTERM drains it.
  EventLoop::Timer reload_grace_;
  SuccessorWatch lost_watch_;
  bool draining_ = false;
  bool stop_signaled_ = false;
  // (connection, generation, seq) of requests the dead broker never took.
  std::set<std::tuple<std::uint32_t, std::uint32_t, std::uint32_t>> left_for_successor_;
};

}  // namespace edri::listener
