// Connection: one client's HTTP/1.1 connection in a listener.
//
// Requests on a connection may be pipelined; each gets a slot in arrival
// order and responses leave in that order, whatever order they come back
// from the managers in. Output is written with non-blocking send() first and
// only waits for EPOLLOUT when the socket buffer is full. Output is bounded:
// past EDRI_OUTPUT_BUFFER unsent bytes the connection reads nothing more from
// its client (who then makes no more work), and a client that takes no byte
// for EDRI_WRITE_TIMEOUT is closed (Listener's sweep). After a WebSocket
// upgrade the same holds for commands: each gets a slot, answers leave in
// order, and pushes go out between them as they come; the connection frames
// them itself (Beast keeps the handshake, the reading and the control
// frames), so a push shared by many subscribers is one buffer.
//
// A connection that ends early (a refused request, a 413 while the body
// still comes) shuts its sending side and reads and drops what the client
// still sends for a bounded time (lingering close, as nginx does), so the
// client reads its answer instead of a reset.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "http/proxy_header.hpp"
#include "http/request_parser.hpp"
#include "listener/connection_owner.hpp"
#include "listener/file_body.hpp"
#include "listener/http2_link.hpp"
#include "listener/slot_info.hpp"
#include "listener/static_files.hpp"
#include "listener/tls.hpp"
#include "listener/websocket_deflate.hpp"
#include "listener/websocket_frame.hpp"
#include "listener/websocket_session.hpp"
#include "transport/blob_arena.hpp"

namespace edri::listener {

class Connection final : public WebSocketSession::Owner {
 public:
  // Takes ownership of the connected, non-blocking socket `fd`; speaks TLS
  // over it when `tls` is given.
  Connection(ConnectionOwner& owner, UniqueFd fd, std::uint32_t id, std::uint32_t generation, const TlsContext* tls);
  ~Connection() override;

  void start();

  // Reserves the next response slot; returns its sequence number.
  static constexpr std::uint32_t kNoRoute = UINT32_MAX;
  // `headers`: response header lines middleware added for this request;
  // `route`: the route's row in the metrics, or kNoRoute.
  std::uint32_t open_slot(bool keep_alive, bool http10, bool head, std::string_view headers,
                          std::uint32_t route = kNoRoute);
  using SlotInfo = listener::SlotInfo;
  void set_conditions(std::uint32_t seq, StaticFiles::Conditions conditions);
  // Keeps the request's body file (an UploadFile) until its response is
  // sent or the connection goes: then it is removed.
  void hold_upload(std::uint32_t seq, std::shared_ptr<http::SpilledBody> upload);
  // The slot for `seq`, or nullptr if it is not pending (stale response).
  const SlotInfo* slot(std::uint32_t seq) const;
  // Fills slot `seq` with its serialized response: bytes are appended by
  // `write(std::string&)`.
  template <class Write>
  void complete(std::uint32_t seq, Write&& write);
  // The same, for a response whose head `write` appends and whose body is
  // `file`, sent from disk after it.
  template <class Write>
  void complete(std::uint32_t seq, Write&& write, FileBody file);
  // The same, for a body in the blob area, sent from its mapping and
  // freed once the socket took it.
  template <class Write>
  void complete(std::uint32_t seq, Write&& write, transport::BlobLease blob);

  // Streamed answers (Response::stream). The head fills the slot like a
  // response, but the slot stays open: pieces follow until the last one,
  // and later responses wait behind them. The bytes of each piece are
  // granted back to its producer once the client has taken them
  // (ConnectionOwner::stream_credit), so what a stream holds here is
  // bounded by the producer's window.
  // `close_after`: the body ends with the connection (HTTP/1.0, no length).
  template <class Write>
  void open_stream(std::uint32_t seq, Write&& write, StreamRef ref, bool close_after);
  // A piece of slot `seq`'s stream: `bytes`, or `file` (a blob) when it is
  // open. `end`: the last piece; `abort`: the producer failed, the response
  // is cut short and the connection closes after what was sent. False when
  // the slot has no open stream (the piece is stale).
  bool stream_piece(std::uint32_t seq, std::string_view bytes, transport::BlobLease blob, bool end, bool abort);
  // True when a stream waits on its producer, with all its output taken,
  // since before `cutoff`.
  bool stream_stalled_since(std::chrono::steady_clock::time_point cutoff) const;

  // Calls f(seq) for each slot still waiting that was opened before
  // `cutoff`.
  template <class F>
  void for_each_overdue(std::chrono::steady_clock::time_point cutoff, F&& f) {
    for (std::size_t i = 0; i < slots_.size(); ++i)
      if (!slots_[i].ready && slots_[i].info.opened < cutoff) f(base_seq_ + static_cast<std::uint32_t>(i));
    for (std::size_t i = 0; i < ws_slots_.size(); ++i)
      if (!ws_slots_[i].ready && ws_slots_[i].opened < cutoff) f(ws_base_seq_ + static_cast<std::uint32_t>(i));
    if (h2_) h2_->for_each_overdue(cutoff, f);
  }
  bool waiting() const { return !slots_.empty() || !ws_slots_.empty() || (h2_ && h2_->waiting()); }

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
  std::uint32_t ws_open_slot(std::string command);
  // The command of a pending slot, or nullptr (stale answer).
  const std::string* ws_slot(std::uint32_t seq) const;
  void ws_complete(std::uint32_t seq, std::string message);
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
  // bound. want_drain(): call the owner's stream_drained() once every
  // byte queued so far is out (at once when none is waiting).
  void stream_send(const SharedFrame& frame);  // Server-Sent Events: the event's bytes
  void want_drain();
  // Makes this connection a Server-Sent Events stream: slot `seq` gets the
  // response head, nothing more is read as a request (what the client
  // sends is dropped; its end closes the connection), and no idle limit
  // applies.
  void start_events(std::uint32_t seq, std::string head);
  bool events() const { return events_; }
  // Caps the socket's send buffer (SO_SNDBUF) at `bytes`.
  void limit_send_buffer(int bytes);
  // Kept by StreamHub: a drain is wanted; the emit pass that last read
  // the backlog, and whether it was behind then.
  bool stream_waiting = false;
  std::uint64_t stream_pass = 0;
  bool stream_behind = false;
  // Closes the connection because its client is too far behind: what it
  // has not started to take is dropped at once, then a WebSocket gets
  // `code` and `reason` (a plain connection just closes).
  void close_lagging(std::uint16_t code, std::string_view reason);
  // Output bytes queued for the client but not yet written (file bodies
  // are on disk, not counted).
  std::size_t backlog() const { return queued_bytes_ + out_.size() - out_off_; }
  // What the listener counts towards EDRI_OUTPUT_BUFFER_TOTAL: the backlog
  // less the blob area's bytes (shared memory with its own bound).
  std::size_t held_bytes() const { return backlog() - queued_blob_bytes_; }
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
  // Output before out_, in order: bytes, a frame shared with other
  // connections, a blob, or a file range. A piece of a streamed answer
  // grants `credit` bytes to its producer once written.
  struct Piece {
    std::variant<std::string, SharedFrame, transport::BlobLease, FileBody> body;
    std::size_t off = 0;  // bytes of an in-memory body already written (a file keeps its own offset)
    std::uint32_t credit = 0;
    StreamRef stream{};
    // The bytes of an in-memory body (empty for a file).
    std::string_view data() const;
    std::size_t unsent() const { return data().size() - off; }
  };
  struct Slot {
    SlotInfo info;
    bool ready = false;
    std::string bytes;
    FileBody file;              // sent after `bytes`
    transport::BlobLease blob;  // or this
    // A streamed answer: open from its head to its last piece; pieces wait
    // here until the slot is the oldest.
    bool streaming = false;
    bool stream_done = false;
    StreamRef stream{};
    std::vector<Piece> pieces;  // a vector: no allocation for the slots that never stream
    std::chrono::steady_clock::time_point last_piece{};
    std::shared_ptr<http::SpilledBody> upload;
  };

  struct WsSlot {
    std::string command;
    std::chrono::steady_clock::time_point opened;
    bool ready = false;
    std::string message;
  };

  // WebSocketSession::Owner
  void ws_output(std::string_view bytes) override;
  void ws_message(std::string_view text) override;
  void ws_starved() override;
  void ws_ended() override;

  void on_events(std::uint32_t events);
  // The PROXY protocol header, read before anything else (TLS included):
  // true once it is read, false while it is awaited or when it failed
  // (the connection is then closed).
  bool read_proxy_header();
  // Takes the header `h` (peeked whole) off the socket; its source becomes
  // the peer.
  bool take_proxy_header(const http::ProxyHeader& h);
  // Peeks at what the socket holds, or takes `n` bytes off it: bytes, 0 at
  // its end, TlsSession::kWouldBlock or kFailed, as read_some() says.
  ssize_t recv_raw(char* buf, std::size_t n, int flags);
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
  // Drops the output the client has not started to take (whole pieces and
  // frames only: a piece begun is finished).
  void drop_unsent();
  // Tells the listener how much this connection holds now.
  void report_held();
  // Appends a whole WebSocket frame to the output, or a text message
  // framed as it goes.
  void append_frame(std::string_view frame);
  // Appends a frame shared with other connections, or closes this one
  // (1008) when its unsent output would pass its bound; false then.
  bool append_shared(const SharedFrame& frame);
  void append_message(std::string_view text);
  bool consume(const char* data, std::size_t n);  // false: stop reading
  // The first bytes: the HTTP/2 preface (held while they may still be
  // it), or HTTP/1.1.
  bool choose_protocol(const char* data, std::size_t n);
  bool consume_h2(const char* data, std::size_t n);
  // Frames the link has, into the output while it is under its bound;
  // the connection ends once the session is done and they are out.
  void pump_h2();
  void on_peer_closed(bool error);
  void send_continue();
  // recv/send, or their TLS counterparts: bytes, 0 at the end of the
  // stream, TlsSession::kWouldBlock or TlsSession::kFailed.
  ssize_t read_some(char* buf, std::size_t n);
  ssize_t write_some(const char* buf, std::size_t n);
  void promote_ready();
  void mark_dirty();
  bool output_empty() const { return queue_.empty() && out_off_ == out_.size(); }
  // Queues `file` after everything written so far.
  void append_file(FileBody file);
  // Queues `p` after everything written so far.
  void append_piece(Piece p);
  // Moves out_ into the queue when it holds more than a piece's worth, so
  // that drop_unsent() can drop most of it.
  void seal_out();
  // Writes the queue, then out_, until the socket is full; ends the
  // connection when its last answer is out.
  void write_out();
  // Drops the slots (the connection closes, or a response closed it):
  // their open streams are cancelled at their producers.
  void drop_slots();
  // Writes the front piece; false when the socket is full or the
  // connection failed (closed_ then tells which).
  bool write_piece(Piece& p, bool& progress);
  bool write_file(FileBody& f, bool& progress);

  ConnectionOwner& owner_;
  UniqueFd fd_;
  std::unique_ptr<TlsSession> tls_;
  std::uint32_t id_;
  std::string peer_;
  bool proxy_header_ = false;  // a PROXY protocol header is awaited
  bool admin_ = false;
  std::uint32_t generation_;
  http::RequestParser parser_;
  std::string pending_input_;          // bytes read past the request the parser paused after
  std::deque<Piece> queue_;            // written before out_
  std::size_t queued_bytes_ = 0;       // unsent bytes in queue_
  std::size_t queued_blob_bytes_ = 0;  // of which in the blob area
  std::size_t reported_held_ = 0;      // held_bytes() as the listener last heard it
  std::string file_chunk_;             // TLS: a file's bytes read for SSL_write
  std::size_t file_chunk_off_ = 0;
  std::string out_;
  std::size_t out_off_ = 0;
  std::deque<Slot> slots_;
  std::uint32_t base_seq_ = 0;  // sequence number of slots_.front()
  std::uint32_t next_seq_ = 0;
  bool read_paused_ = false;  // too many requests in flight: not reading
  bool writing_ = false;      // send() hit EAGAIN: waiting for EPOLLOUT
  // When the client last stopped taking bytes (writing_ since then, and no
  // progress); the epoch when it is not stalled.
  std::chrono::steady_clock::time_point stalled_since_{};
  bool read_closed_ = false;    // peer closed, or an error ended reading
  bool peer_closed_ = false;    // the client ended its side (or the socket failed)
  bool input_refused_ = false;  // we stopped reading before the client's input ended
  bool timed_out_ = false;      // a 408: the client was too slow
  bool shed_ = false;           // closed for falling too far behind
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
  std::deque<WsSlot> ws_slots_;  // answers of commands in flight, in order
  std::uint32_t ws_base_seq_ = 0;
  std::uint32_t ws_next_seq_ = 0;
};

template <class Write>
void Connection::complete(std::uint32_t seq, Write&& write) {
  const std::uint32_t idx = seq - base_seq_;
  if (idx >= slots_.size()) return;
  Slot& s = slots_[idx];
  if (s.ready) return;
  s.ready = true;
  if (idx == 0 && !writing_ && output_empty()) {
    // The common case: the oldest slot, nothing queued. Serialize straight
    // into the output buffer.
    write(out_);
  } else {
    write(s.bytes);
  }
  promote_ready();
}

template <class Write>
void Connection::open_stream(std::uint32_t seq, Write&& write, StreamRef ref, bool close_after) {
  const std::uint32_t idx = seq - base_seq_;
  if (idx >= slots_.size() || slots_[idx].ready) return;
  Slot& s = slots_[idx];
  s.streaming = true;
  s.stream = ref;
  s.last_piece = std::chrono::steady_clock::now();
  if (close_after) s.info.keep_alive = false;
  complete(seq, std::forward<Write>(write));
}

template <class Write>
void Connection::complete(std::uint32_t seq, Write&& write, transport::BlobLease blob) {
  const std::uint32_t idx = seq - base_seq_;
  if (idx >= slots_.size() || slots_[idx].ready) return;
  slots_[idx].blob = std::move(blob);
  complete(seq, std::forward<Write>(write));
}

template <class Write>
void Connection::complete(std::uint32_t seq, Write&& write, FileBody file) {
  const std::uint32_t idx = seq - base_seq_;
  if (idx >= slots_.size() || slots_[idx].ready) return;
  // Promotion queues the file after the head, wherever the head was written.
  slots_[idx].file = std::move(file);
  complete(seq, std::forward<Write>(write));
}

}  // namespace edri::listener
