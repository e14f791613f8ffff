// Http2Codec: a Connection that opened with the HTTP/2 preface (decisions
// 0021, 0035). The link (Http2Link) holds the nghttp2 session, the streams'
// slots and the gRPC calls; this codec joins it to the transport: frames
// are produced into the output while it is under EDRI_OUTPUT_BUFFER, the
// connection ends once the session is done and they are out, and the
// session's own limits (a header block unfinished, a body stalled, a
// window the client never opens) are checked with the others.
#pragma once

#include "http2/server_session.hpp"
#include "listener/codec.hpp"
#include "listener/connection_owner.hpp"
#include "listener/http2_link.hpp"

namespace edri::listener {

class Http2Codec final : public Codec {
 public:
  Http2Codec(CodecHost& host, ConnectionContext& ctx);

  AnswerSink& answers() override { return link_; }
  bool receive(std::string_view bytes, Clock::time_point now) override;
  // The session bounds the streams in flight (EDRI_MAX_PIPELINE).
  bool must_pause(std::size_t backlog) const override { return backlog > ctx_.config.output_buffer; }
  void produce() override;
  bool wants_write() const override { return link_.wants_write(); }
  // GOAWAY: the streams taken are answered (reading goes on, for their
  // WINDOW_UPDATEs), then the connection closes.
  void go_away() override;
  // GOAWAY, its event streams and gRPC calls kept (EDRI_RELOAD_GRACE).
  void go_away_gently() override;
  void check_time(Clock::time_point now) override;
  bool waiting() const override { return link_.waiting(); }
  void for_each_overdue(Clock::time_point cutoff, const std::function<void(std::uint32_t)>& f) override {
    link_.for_each_overdue(cutoff, f);
  }
  // No WINDOW_UPDATE can come: nothing more would go.
  bool ends_with_client() const override { return true; }
  void cancel() override { link_.cancel_all(); }
  void live_send(std::int32_t call, const SharedMessage& ws, const SharedFrame& sse) override;
  bool live_behind(std::int32_t call) override { return link_.live_behind(call); }
  void live_want_drain(std::int32_t call) override { link_.live_want_drain(call); }
  // A push to each gRPC Connect call on this connection that subscribed.
  void push(std::uint64_t type, const SharedMessage& message) override;
  Http2Link* http2() override { return &link_; }

 private:
  static http2::Limits limits(const ConnectionContext& ctx);
  // True when the client's streams timed out (the connection then ends).
  bool timed_out(Clock::time_point now);

  CodecHost& host_;
  ConnectionContext& ctx_;
  Http2Link link_;
  bool timed_out_ = false;
};

}  // namespace edri::listener
