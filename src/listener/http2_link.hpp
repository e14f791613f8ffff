// Http2Link: a Connection's HTTP/2 side (decision 0021). It holds the
// nghttp2 session and gives each stream the slot an HTTP/1.1 request would
// get, so that the front (HttpFront, Exchange) and the answers (Answers)
// work as they do for HTTP/1.1; but slots are answered in any order, each
// as soon as its answer comes, since streams are independent. A body goes
// out as the client's window allows, from where it is: bytes, the blob
// area, a file, or the pieces of a streamed answer as they come (their
// bytes granted back to the producer as the session takes them).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

#include "http/response_writer.hpp"
#include "http2/server_session.hpp"
#include "listener/answer_sink.hpp"
#include "listener/connection_owner.hpp"
#include "listener/file_body.hpp"
#include "listener/grpc_calls.hpp"
#include "listener/queued_body.hpp"
#include "listener/slot_info.hpp"
#include "transport/blob_arena.hpp"

namespace edri::listener {

class Connection;
class PiecesBody;

class Http2Link final : public http2::ServerSession::Handler, public AnswerSink {
 public:
  Http2Link(Connection& c, ConnectionContext& ctx, const http2::Limits& limits);
  ~Http2Link() override;

  bool receive(std::string_view bytes, std::chrono::steady_clock::time_point now) {
    now_ = now;
    return session_.receive(bytes, now);
  }
  void produce(std::string& out, std::size_t max);
  bool done() const { return session_.done(); }
  bool wants_write() const { return session_.wants_write(); }
  // GOAWAY: no new stream. `end_events`: Server-Sent Events streams end
  // too (their clients reconnect elsewhere); else they go on (a reload's
  // EDRI_RELOAD_GRACE), until a shutdown that ends them.
  void shutdown(bool end_events = true);

  // AnswerSink. A slot is the stream of the request being dispatched now
  // (from on_request or on_refused); its sequence number is the stream's
  // id. Answers go out as they come, each on its stream, with the lines
  // every answer has (answer_writer()) before `lines`. Server-Sent Events
  // (docs/streams.md) go on the slot's stream (its head now, 200
  // text/event-stream, then frames as they come) until the client resets
  // it or the server stops.
  std::string_view protocol() const override { return "h2"; }
  std::uint32_t open(SlotInfo info) override;
  SlotInfo* slot(std::uint32_t seq) override;
  void hold_upload(std::uint32_t seq, std::shared_ptr<http::SpilledBody> upload) override;
  void respond(std::uint32_t seq, const http::ResponseHead& h, std::string_view lines, AnswerBody body) override;
  bool open_stream(std::uint32_t seq, http::ResponseHead h, std::string_view lines, StreamRef ref) override;
  bool stream_piece(std::uint32_t seq, std::string_view bytes, transport::BlobLease blob, bool end,
                    bool abort) override;
  EventsCarrier open_events(std::uint32_t seq, std::string_view lines) override;

  // A live stream's subscriber on HTTP/2 stream `stream` (a gRPC Connect
  // call, or Server-Sent Events): a frame for it (the call's JSON, or the
  // event's bytes); whether its client has not taken all it was sent;
  // LiveOwner::events_drained once it has.
  void live_frame(std::int32_t stream, std::string_view bytes);
  bool live_behind(std::int32_t stream);
  void live_want_drain(std::int32_t stream);

  // Streams whose queued bodies drained while asked to wake their owner:
  // told, and cleared, once the session's output is produced.
  std::vector<std::int32_t>& woken() { return woken_; }

  // gRPC calls (docs/grpc.md): streams whose content type is
  // application/grpc go to GrpcOwner as they come, not as
  // requests; their state is kept here, with the connection.
  GrpcCalls& grpc() { return grpc_; }
  Connection& connection() const { return c_; }
  // Sends `stream`'s answer head (200, application/grpc, `lines`) and then
  // `body`; with no body, the head is the whole answer (trailers only).
  void grpc_respond(std::int32_t stream, std::string_view lines, std::unique_ptr<http2::BodySource> body);
  // `stream`'s answer body has more.
  void grpc_resume(std::int32_t stream);
  // Ends `stream` with RST_STREAM ENHANCE_YOUR_CALM (gRPC clients read it
  // as RESOURCE_EXHAUSTED): its client is too far behind.
  void grpc_reset(std::int32_t stream);
  // Ends `stream` with RST_STREAM REFUSED_STREAM (gRPC clients read it as
  // UNAVAILABLE, and may retry it): its call would start past
  // EDRI_MAX_PIPELINE.
  void grpc_refuse(std::int32_t stream);
  // Requests and gRPC events dispatched and not answered, their streams
  // reset or not: what one connection may have running is
  // EDRI_MAX_PIPELINE, whatever it resets.
  std::size_t running() const;
  bool full() const { return running() >= max_running_; }
  // A request or event ended: the calls that could take no event while
  // the connection was full (GrpcCall::starved) take theirs once the
  // session's output is next produced.
  void wake_starved();
  // `bytes` of `stream`'s body were taken: its window reopens as much.
  void grpc_consume(std::int32_t stream, std::size_t bytes) { session_.consume(stream, bytes); }

  bool waiting() const { return !slots_.empty() || grpc_.waiting(); }
  // Streams open: a connection holding one is not idle (a Connect call
  // that waits for pushes, a request still arriving).
  bool streams_open() const { return session_.open_streams() > 0; }
  // A header block is not yet whole (EDRI_HEADER_TIMEOUT bounds it, for
  // the whole connection).
  bool head_owed() const { return session_.head_owed(); }
  // Each collected body that had nothing new since `cutoff` is answered
  // 408, and its stream then reset; each gRPC call whose client left a
  // message unfinished since then is reset (CANCEL), its buffer freed.
  // The connection serves on.
  void time_out_bodies(std::chrono::steady_clock::time_point cutoff);
  // A header block stopped arriving: each collected body not yet whole is
  // answered 408, then a GOAWAY; the connection closes once they are out.
  void time_out();
  // An answer waits on the client alone: its window is shut.
  bool held_by_client() const;
  template <class F>
  void for_each_overdue(std::chrono::steady_clock::time_point cutoff, F&& f) {
    for (const auto& [seq, s] : slots_)
      if (!s.answered && s.info.opened < cutoff) f(seq);
    grpc_.for_each_overdue(cutoff, f);
  }
  // The connection goes: every streamed answer's producer stops.
  void cancel_all();

  // http2::ServerSession::Handler
  void on_request(std::int32_t stream, http::HttpRequest& req) override;
  bool on_head(std::int32_t stream, http::HttpRequest& head) override;
  void on_body(std::int32_t stream, std::string_view bytes, bool end) override;
  void on_refused(std::int32_t stream, int status, std::string_view reason) override;
  bool on_spill(std::int32_t stream, http::HttpRequest& req, std::string_view bytes) override;
  void on_closed(std::int32_t stream, bool answered) override;

 private:
  struct Slot {
    SlotInfo info;
    bool answered = false;
    PiecesBody* pieces = nullptr;  // a streamed answer's body, owned by the session
    QueuedBody* events = nullptr;  // a Server-Sent Events stream's, owned by the session
    StreamRef ref{};
    // Its stream was reset while its request ran: kept, and counted, until
    // its answer comes (slot() is asked then) or is overdue.
    bool gone = false;
    std::shared_ptr<http::SpilledBody> upload;  // its body's file (EDRI_UPLOAD_THRESHOLD)
  };
  // The slot of a stream still open, or null.
  Slot* find(std::uint32_t seq);
  void time_out_calls(std::chrono::steady_clock::time_point cutoff);
  // Answers slot `seq`; the body, if any, from `body` (null for HEAD and
  // the statuses that have none).
  void respond_body(std::uint32_t seq, Slot& s, const http::ResponseHead& h, std::string_view lines,
                    std::unique_ptr<http2::BodySource> body);
  // `lines` after the ones every answer has.
  static std::string_view with_standard_lines(std::string_view lines);

  Connection& c_;
  ConnectionContext& ctx_;
  http2::ServerSession session_;
  // By sequence number, which is the stream's id; a slot goes when its
  // stream closes.
  std::unordered_map<std::uint32_t, Slot> slots_;
  GrpcCalls grpc_;
  std::vector<std::int32_t> woken_;
  std::int32_t dispatching_ = 0;                 // the stream whose request is being dispatched
  std::size_t max_running_;                      // EDRI_MAX_PIPELINE
  std::chrono::steady_clock::time_point now_{};  // when what receive() reads arrived
};

}  // namespace edri::listener
