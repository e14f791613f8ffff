// Connection: one client's connection in a listener: the transport, one
// codec and its life cycle (decision 0035).
//
// The transport is the socket (ClientSocket: TLS or not) and the output
// owed to the client (OutputQueue). The codec speaks the protocol, chosen
// once: HTTP/1.1 (Http1Codec), or HTTP/2 from its preface (Http2Codec);
// an HTTP/1.1 upgrade swaps it for WebSocket (WebSocketCodec). The
// connection never asks which one runs: what it reads goes to the codec,
// and answers() is where a request's answer goes, so nothing above asks
// either.
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
#include "listener/codec.hpp"
#include "listener/connection_owner.hpp"
#include "listener/output_queue.hpp"
#include "listener/slot_info.hpp"
#include "listener/websocket_deflate.hpp"

namespace edri::listener {

class Connection final : private CodecHost {
 public:
  // Takes ownership of the connected, non-blocking socket `fd`; speaks TLS
  // over it when `tls` is given.
  Connection(ConnectionContext& ctx, UniqueFd fd, std::uint32_t id, std::uint32_t generation, const TlsContext* tls);
  ~Connection();

  void start();

  // Where the answers of this connection's requests go: HTTP/1.1's ordered
  // slots, HTTP/2's streams or a WebSocket's command answers, whichever
  // this connection speaks now.
  AnswerSink& answers() { return codec_->answers(); }
  // Opens the slot of the request being dispatched; its sequence number.
  static constexpr std::uint32_t kNoRoute = SlotInfo::kNoRoute;
  // `headers`: response header lines middleware added for this request;
  // `route`: the route's row in the metrics, or kNoRoute.
  std::uint32_t open_slot(bool keep_alive, bool http10, bool head, std::string_view headers,
                          std::uint32_t route = kNoRoute, std::unique_ptr<AccessRecord> access = nullptr);
  // True when a streamed answer waits on its producer, with all its output
  // taken, since before `cutoff`.
  bool stream_stalled_since(std::chrono::steady_clock::time_point cutoff) const {
    return out_.empty() && codec_->stream_stalled_since(cutoff);
  }

  // Calls f(seq) for each slot still waiting that was opened before
  // `cutoff`.
  template <class F>
  void for_each_overdue(std::chrono::steady_clock::time_point cutoff, F&& f) {
    codec_->for_each_overdue(cutoff, f);
  }
  bool waiting() const { return codec_->waiting(); }

  // The protocol's own side, for the front made for it: HTTP/2 (decision
  // 0021: the connection opened with the preface; GrpcFront) or a
  // WebSocket (WebSocketFront); null otherwise.
  Http2Link* http2() const { return codec_->http2(); }
  WebSocketCodec* websocket() const { return codec_->websocket(); }
  // HTTP/2: the link has frames to write.
  void h2_output() { mark_dirty(); }

  // Switches this connection to WebSocket after the upgrade request `req`
  // (its codec takes over once the request is read); Beast answers it (101
  // with `headers`, or an error and a close). False if requests before it
  // are still unanswered.
  bool upgrade(const http::HttpRequest& req, std::string_view headers);
  // The answers still due will not be wanted: the owner hears it once.
  void abandon_answers() override;
  // A live stream's subscriber on this connection, whatever carries it:
  // `call` 0 is the connection itself (a WebSocket, or a Server-Sent
  // Events connection), else the HTTP/2 stream of a gRPC Connect call or
  // of Server-Sent Events. A frame for it (`ws` for a WebSocket or a gRPC
  // call, `sse` for Server-Sent Events: the one its kind was made for);
  // whether its client has not taken what it was sent (read once per emit
  // `pass`); a drain wanted (LiveOwner's stream_drained once every byte
  // queued so far is out, at once when none is waiting; or
  // events_drained). A subscriber that lets frames pile up past 8 x
  // EDRI_OUTPUT_BUFFER is closed with 1008.
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
  AnswerSink::EventsCarrier start_events(std::uint32_t seq, std::string_view lines) {
    return codec_->start_events(seq, lines);
  }
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
  // Whether it ever (un)subscribed to pushes: from then on its commands
  // cross the broker behind its subscriptions, so that a push its own
  // command causes finds them there (decision 0040).
  bool ordered_with_pushes = false;

  // Writes whatever is ready, then resumes reading if the client may send
  // again; called once per loop turn for dirty connections.
  void flush();
  void close() override;
  // The server is stopping: nothing more is read; what is in flight is
  // answered (the last answer says Connection: close) and the connection
  // closes after it, at once when nothing is. A WebSocket is closed with
  // 1001 (going away).
  void drain();
  // A reload's drain: as drain(), but an idle HTTP/1.1 connection stays
  // open for its next request (answered with Connection: close) instead of
  // closing under a client that may be sending one; the sweep closes it
  // once it has been quiet for a second.
  void drain_gently();
  // The time limits, checked by the listener's sweep: a lingering close
  // ends at EDRI_LINGERING_TIME or after EDRI_LINGERING_TIMEOUT of
  // silence; a PROXY protocol header is due within EDRI_HEADER_TIMEOUT;
  // the codec's own (Codec::check_time) apply otherwise.
  void apply_idle_limits(std::chrono::steady_clock::time_point now);

  bool closed() const override { return closed_; }
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
  // CodecHost (what the codecs are made with)
  CodecHost& host() { return *this; }
  Connection& connection() override { return *this; }
  OutputQueue& output() override { return out_; }
  void output_ready() override { mark_dirty(); }
  bool output_idle() const override { return out_.empty() && !writing_; }
  bool append_shared(const SharedFrame& frame) override;
  void write_interim(std::string_view bytes) override;
  void end_after_output() override { close_after_write_ = true; }
  void pause_reading() override { read_paused_ = true; }
  void stop_reading() override { read_closed_ = true; }
  bool reading_paused() const override { return read_paused_; }
  bool reading_stopped() const override { return read_closed_; }
  Clock::time_point last_input() const override { return last_input_; }
  void timed_out() override { timed_out_ = true; }
  bool upgrading() const override { return next_codec_ != nullptr; }
  void hand_over(std::string_view rest) override { handed_over_.assign(rest); }

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
  void read_available();
  void resume_reading();
  // Too much in flight or unsent for this client: read nothing more.
  bool must_pause() const { return codec_->must_pause(backlog()); }
  // The answer is out and the connection ends: close now, or linger when
  // the client may still be sending.
  void finish();
  bool client_may_still_send();
  // Lingering: reads and drops what arrives; closes at its end.
  void discard_input();
  // Tells the listener how much this connection holds now.
  void report_held();
  bool consume(std::string_view bytes);  // false: stop reading
  // After the codec took bytes (`more`: read on): an upgrade taken while
  // it read swaps it for the next codec, which gets what was read past the
  // upgrade request.
  bool after_codec(bool more);
  // The first bytes: the HTTP/2 preface (held while they may still be
  // it), or HTTP/1.1.
  bool choose_protocol(std::string_view bytes);
  void on_peer_closed(bool error);
  void want_drain();
  void mark_dirty();
  // Writes the queue until the socket is full; ends the connection when
  // its last answer is out.
  void write_out();

  ConnectionContext& ctx_;
  ClientSocket socket_;
  std::uint32_t id_;
  std::string peer_;
  bool proxy_header_ = false;  // a PROXY protocol header is awaited
  bool admin_ = false;
  std::uint32_t generation_;
  OutputQueue out_;
  std::unique_ptr<Codec> codec_;
  std::unique_ptr<Codec> next_codec_;  // an upgrade taken while the codec reads
  std::string handed_over_;            // the bytes read past the upgrade request
  bool protocol_known_ = false;
  std::string preface_;       // the first bytes while they may be HTTP/2's preface
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
  bool read_closed_ = false;       // peer closed, or reading stopped for good
  bool peer_closed_ = false;       // the client ended its side (or the socket failed)
  bool timed_out_ = false;         // a 408: the client was too slow
  bool shed_ = false;              // closed for falling too far behind
  bool lingering_ = false;
  std::chrono::steady_clock::time_point linger_until_{};
  std::chrono::steady_clock::time_point last_input_ = std::chrono::steady_clock::now();
  bool close_after_write_ = false;
  bool closed_ = false;
  bool abandoned_answers_ = false;  // abandon_answers() told the owner
};

}  // namespace edri::listener
