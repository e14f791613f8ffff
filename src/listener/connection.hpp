// Connection: one client's connection in a listener, and its life cycle.
//
// It holds the socket (ClientSocket: TLS or not), the output owed to the
// client (OutputQueue) and the side that speaks the connection's protocol,
// chosen once: HTTP/1.1 (the parser, and Http1Answers: pipelined requests
// answered in order), HTTP/2 from its preface (Http2Link), WebSocket after
// an upgrade (Beast's session, and WebSocketCommands: command answers in
// order, pushes between them). Whichever it is, answers() is where a
// request's answer goes, so nothing above asks which protocol runs.
//
// Output is written with non-blocking send() first and only waits for
// EPOLLOUT when the socket buffer is full. Output is bounded: past
// EDRI_OUTPUT_BUFFER unsent bytes the connection reads nothing more from
// its client (who then makes no more work), and a client that takes no
// byte for EDRI_WRITE_TIMEOUT is closed (Listener's sweep). A push shared
// by many subscribers is one buffer (websocket_frame.hpp).
//
// A connection that ends early (a refused request, a 413 while the body
// still comes) shuts its sending side and reads and drops what the client
// still sends for a bounded time (lingering close, as nginx does), so the
// client reads its answer instead of a reset.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "http/proxy_header.hpp"
#include "http/request_parser.hpp"
#include "listener/answer_sink.hpp"
#include "listener/client_socket.hpp"
#include "listener/connection_owner.hpp"
#include "listener/http1_answers.hpp"
#include "listener/http2_link.hpp"
#include "listener/output_queue.hpp"
#include "listener/slot_info.hpp"
#include "listener/websocket_commands.hpp"
#include "listener/websocket_deflate.hpp"
#include "listener/websocket_frame.hpp"
#include "listener/websocket_session.hpp"
#include "transport/blob_arena.hpp"

namespace edri::listener {

class Connection final : public WebSocketSession::Owner,
                         private Http1Answers::Events,
                         private WebSocketCommands::Events {
 public:
  // Takes ownership of the connected, non-blocking socket `fd`; speaks TLS
  // over it when `tls` is given.
  Connection(ConnectionContext& ctx, UniqueFd fd, std::uint32_t id, std::uint32_t generation, const TlsContext* tls);
  ~Connection() override;

  void start();

  // Where the answers of this connection's requests go: HTTP/1.1's ordered
  // slots, HTTP/2's streams or a WebSocket's command answers, whichever
  // this connection speaks now.
  AnswerSink& answers() { return *sink_; }
  // Opens the slot of the request being dispatched; its sequence number.
  static constexpr std::uint32_t kNoRoute = SlotInfo::kNoRoute;
  // `headers`: response header lines middleware added for this request;
  // `route`: the route's row in the metrics, or kNoRoute.
  std::uint32_t open_slot(bool keep_alive, bool http10, bool head, std::string_view headers,
                          std::uint32_t route = kNoRoute);
  // True when a streamed answer waits on its producer, with all its output
  // taken, since before `cutoff`.
  bool stream_stalled_since(std::chrono::steady_clock::time_point cutoff) const {
    return out_.empty() && http1_.stream_stalled_since(cutoff);
  }

  // Calls f(seq) for each slot still waiting that was opened before
  // `cutoff`.
  template <class F>
  void for_each_overdue(std::chrono::steady_clock::time_point cutoff, F&& f) {
    http1_.for_each_overdue(cutoff, f);
    ws_commands_.for_each_overdue(cutoff, f);
    if (h2_) h2_->for_each_overdue(cutoff, f);
  }
  bool waiting() const { return !http1_.empty() || ws_commands_.pending() > 0 || (h2_ && h2_->waiting()); }

  // HTTP/2 (decision 0021): the connection opened with the preface. Its
  // answers go through the link, each stream's as soon as it comes.
  Http2Link* http2() const { return h2_.get(); }
  // The link has frames to write.
  void h2_output() { mark_dirty(); }

  // WebSocket. Switches this connection to WebSocket after the upgrade
  // request `req`; Beast answers it (101 with `headers`, or an error and a
  // close). False if requests before it are still unanswered.
  bool upgrade(const http::HttpRequest& req, std::string_view headers);
  bool websocket() const { return ws_ != nullptr; }
  // The upgrade request, for header and cookie fields of commands.
  const http::HttpRequest& upgrade_request() const { return upgrade_request_; }
  // A command's answer slot: answers leave in the order commands came.
  std::uint32_t ws_open_slot(std::string command) { return ws_commands_.open_command(std::move(command)); }
  // A message outside the command order (a push), already framed
  // (websocket_frame.hpp) and shared by every subscriber it goes to. A
  // subscriber that lets pushes pile up past 8 x EDRI_OUTPUT_BUFFER is
  // closed with 1008.
  void ws_send(const SharedMessage& message);
  void ws_close(std::uint16_t code, std::string reason);
  // The answers still due will not be wanted: the owner hears it once.
  void abandon_answers();
  // Live streams (StreamHub). A frame of a stream, shared by its
  // subscribers: on a WebSocket as ws_send(); on a Server-Sent Events
  // connection (start_events) appended after what is there, with the same
  // bound. want_drain(): LiveOwner::stream_drained() once every
  // byte queued so far is out (at once when none is waiting).
  void stream_send(const SharedFrame& frame);  // Server-Sent Events: the event's bytes
  void want_drain();
  // A live stream's subscriber on this connection, whatever carries it:
  // `call` 0 is the connection itself (a WebSocket, or a Server-Sent
  // Events connection), else the HTTP/2 stream of a gRPC Connect call or
  // of Server-Sent Events. A frame for it (`ws` for a WebSocket or a gRPC
  // call, `sse` for Server-Sent Events: the one its kind was made for);
  // whether its client has not taken what it was sent (read once per emit
  // `pass`); a drain wanted (LiveOwner's stream_drained or
  // events_drained).
  void live_send(std::int32_t call, const SharedMessage& ws, const SharedFrame& sse);
  bool live_behind(std::int32_t call, std::uint64_t pass);
  void live_want_drain(std::int32_t call);
  // A push of notification `type` to this connection: a WebSocket message,
  // or to each gRPC Connect call on it that subscribed.
  void push(std::uint64_t type, const SharedMessage& message);
  // Server-Sent Events on slot `seq` (answers().open_events): when the
  // whole connection carries them, nothing more is read as a request
  // (what the client sends is dropped; its end closes the connection), and
  // no idle limit applies.
  AnswerSink::EventsCarrier start_events(std::uint32_t seq, std::string_view lines);
  bool events() const { return events_; }
  // Caps the socket's send buffer (SO_SNDBUF) at `bytes`.
  void limit_send_buffer(int bytes);
  // Closes the connection because its client is too far behind: what it
  // has not started to take is dropped at once, then a WebSocket gets
  // `code` and `reason` (a plain connection just closes).
  void close_lagging(std::uint16_t code, std::string_view reason);
  // Output bytes queued for the client but not yet written (file bodies
  // are on disk, not counted).
  std::size_t backlog() const { return out_.backlog(); }
  // What the listener counts towards EDRI_OUTPUT_BUFFER_TOTAL: the backlog
  // less the blob area's bytes (shared memory with its own bound).
  std::size_t held_bytes() const { return out_.held_bytes(); }
  // True when output has waited for the client since before `cutoff`
  // without a byte taken (EDRI_WRITE_TIMEOUT).
  bool write_stalled_since(std::chrono::steady_clock::time_point cutoff) const {
    return writing_ && stalled_since_ != std::chrono::steady_clock::time_point{} && stalled_since_ < cutoff;
  }
  // Notification types this connection subscribed to.
  std::vector<std::uint64_t> subscriptions;

  // Writes whatever is ready, then resumes reading if the client may send
  // again; called once per loop turn for dirty connections.
  void flush();
  void close();
  // The server is stopping: nothing more is read; what is in flight is
  // answered (the last answer says Connection: close) and the connection
  // closes after it, at once when nothing is. A WebSocket is closed with
  // 1001 (going away).
  void drain();
  // EDRI_HEADER_TIMEOUT, EDRI_BODY_TIMEOUT and EDRI_KEEPALIVE_TIMEOUT,
  // checked by the listener's sweep: a request head that is not complete in
  // time, or a body that stopped arriving, is answered 408 and the
  // connection closes (a slowloris client); a connection with nothing in
  // flight that stayed quiet too long is closed (the first request gets
  // the header timeout, later ones the keep-alive timeout); a lingering
  // close ends at EDRI_LINGERING_TIME or after EDRI_LINGERING_TIMEOUT of
  // silence.
  void apply_idle_limits(std::chrono::steady_clock::time_point now);
  // The HTTP/2 side of it: true when the client's streams timed out.
  bool h2_timed_out(std::chrono::steady_clock::time_point now);

  bool closed() const { return closed_; }
  bool lingering() const { return lingering_; }
  std::uint32_t id() const { return id_; }
  // The peer's IP address as text ("unix" over a Unix socket); set once,
  // when the connection is accepted.
  const std::string& peer() const { return peer_; }
  void set_peer(std::string peer) { peer_ = std::move(peer); }
  // The peer is a trusted proxy and EDRI_PROXY_PROTOCOL is on: the
  // connection must begin with a PROXY protocol header, whose source
  // becomes peer(); before start().
  void expect_proxy_header() { proxy_header_ = true; }
  // Accepted on EDRI_ADMIN_SOCKET: the built-in endpoints answer in full,
  // and nothing else is served.
  bool admin() const { return admin_; }
  void set_admin() { admin_ = true; }
  std::uint32_t generation() const { return generation_; }
  bool dirty = false;

 private:
  // WebSocketSession::Owner
  void ws_output(std::string_view bytes) override;
  void ws_message(std::string_view text) override;
  void ws_starved() override;
  void ws_ended() override;
  // Http1Answers::Events
  void output_ready() override { mark_dirty(); }
  void last_answer_queued() override;
  void stream_cancel(const StreamRef& ref) override { ctx_.producers.stream_cancel(ref); }
  // WebSocketCommands::Events
  void command_answered(std::string_view message) override;
  void commands_changed() override { update_ws_flow(); }

  void on_events(std::uint32_t events);
  // The PROXY protocol header, read before anything else (TLS included):
  // true once it is read, false while it is awaited or when it failed
  // (the connection is then closed).
  bool read_proxy_header();
  // Takes the header `h` (peeked whole) off the socket; its source becomes
  // the peer.
  bool take_proxy_header(const http::ProxyHeader& h);
  // No valid header (`why`): counted, and closed without an answer.
  void refuse_proxy_header(std::string_view why);
  // A Server-Sent Events connection: reads and drops; its end closes.
  void drop_events_input();
  void read_available();
  void resume_reading();
  // Too much in flight or unsent for this client (or, on a WebSocket, read
  // and not yet taken): read nothing more.
  bool must_pause() const;
  // A WebSocket takes no more messages while its commands in flight or its
  // unsent output are over their bounds, and takes them again below.
  void update_ws_flow();
  // The answer is out and the connection ends: close now, or linger when
  // the client may still be sending.
  void finish();
  bool client_may_still_send();
  // Lingering: reads and drops what arrives; closes at its end.
  void discard_input();
  // Stops reading requests after the one being answered (a refused one, or
  // one that asked to close): RFC 9112 9.6.
  void stop_input();
  // Tells the listener how much this connection holds now.
  void report_held();
  // Appends a frame shared with other connections, or closes this one
  // (1008) when its unsent output would pass its bound; false then.
  bool append_shared(const SharedFrame& frame);
  // Appends a text message, framed as it goes.
  void append_message(std::string_view text);
  bool consume(const char* data, std::size_t n);  // false: stop reading
  bool consume_http1(const char* data, std::size_t n);
  // The first bytes: the HTTP/2 preface (held while they may still be
  // it), or HTTP/1.1.
  bool choose_protocol(const char* data, std::size_t n);
  bool consume_h2(const char* data, std::size_t n);
  // Frames the link has, into the output while it is under its bound;
  // the connection ends once the session is done and they are out.
  void pump_h2();
  void on_peer_closed(bool error);
  void send_continue();
  void mark_dirty();
  // Writes the queue until the socket is full; ends the connection when
  // its last answer is out.
  void write_out();
  // The parts of apply_idle_limits for each protocol.
  void websocket_idle(std::chrono::steady_clock::time_point now);
  void h2_idle(std::chrono::steady_clock::time_point now);
  void http1_idle(std::chrono::steady_clock::time_point now);

  ConnectionContext& ctx_;
  ClientSocket socket_;
  std::uint32_t id_;
  std::string peer_;
  bool proxy_header_ = false;  // a PROXY protocol header is awaited
  bool admin_ = false;
  std::uint32_t generation_;
  http::RequestParser parser_;
  std::string pending_input_;  // bytes read past the request the parser paused after
  OutputQueue out_;
  Http1Answers http1_{out_, *this};
  WebSocketCommands ws_commands_{*this};
  AnswerSink* sink_ = &http1_;
  bool read_paused_ = false;  // too many requests in flight: not reading
  bool writing_ = false;      // send() hit EAGAIN: waiting for EPOLLOUT
  // When the client last stopped taking bytes (writing_ since then, and no
  // progress); the epoch when it is not stalled.
  std::chrono::steady_clock::time_point stalled_since_{};
  // A drain is wanted (want_drain); the emit pass that last read the
  // backlog, and whether it was behind then.
  bool stream_waiting_ = false;
  std::uint64_t stream_pass_ = 0;
  bool stream_behind_ = false;
  std::size_t reported_held_ = 0;  // held_bytes() as the listener last heard it
  bool read_closed_ = false;       // peer closed, or an error ended reading
  bool peer_closed_ = false;       // the client ended its side (or the socket failed)
  bool input_refused_ = false;     // we stopped reading before the client's input ended
  bool timed_out_ = false;         // a 408: the client was too slow
  bool shed_ = false;              // closed for falling too far behind
  bool lingering_ = false;
  std::chrono::steady_clock::time_point linger_until_{};
  std::chrono::steady_clock::time_point close_out_at_{};  // a WebSocket close of ours was written
  bool served_ = false;                                   // a request was read: the keep-alive timeout applies
  std::chrono::steady_clock::time_point last_input_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point head_started_{};  // of the request head in progress
  bool close_after_write_ = false;
  bool closed_ = false;
  bool abandoned_answers_ = false;  // abandon_answers() told the owner
  bool events_ = false;             // a Server-Sent Events stream (start_events)
  // permessage-deflate as the 101 agreed it: the server's window bits, or
  // 0 (plain frames).
  int deflate_bits_ = 0;
  bool handshake_written_ = false;
  std::string handshake_;  // Beast's answer to the handshake, until its head is whole
  std::shared_ptr<WebSocketSession> ws_;
  bool protocol_known_ = false;
  std::string preface_;  // the first bytes while they may be HTTP/2's preface
  std::unique_ptr<Http2Link> h2_;
  http::HttpRequest upgrade_request_;
};

}  // namespace edri::listener
