#include "listener/http2_codec.hpp"

#include <spdlog/spdlog.h>

#include "listener/connection.hpp"

namespace edri::listener {

http2::Limits Http2Codec::limits(const ConnectionContext& ctx) {
  http2::Limits limits;
  limits.request = ctx.parser_limits;
  limits.max_concurrent_streams = static_cast<std::uint32_t>(ctx.config.max_pipeline);
  limits.body_memory = ctx.config.http2_body_memory;
  return limits;
}

Http2Codec::Http2Codec(CodecHost& host, ConnectionContext& ctx)
    : host_(host), ctx_(ctx), link_(host.connection(), ctx, limits(ctx)) {}

bool Http2Codec::receive(std::string_view bytes, Clock::time_point now) {
  const bool more = link_.receive(bytes, now);
  host_.output_ready();
  if (!more) host_.stop_reading();
  return more && !host_.closed();
}

void Http2Codec::produce() {
  OutputQueue& out = host_.output();
  const std::size_t bound = ctx_.config.output_buffer;
  if (out.backlog() < bound) {
    link_.produce(out.tail(), out.tail().size() + (bound - out.backlog()));
    out.seal();
  }
  if (link_.done()) host_.end_after_output();
}

void Http2Codec::go_away() {
  link_.shutdown();
  host_.output_ready();
}

void Http2Codec::go_away_gently() {
  link_.shutdown(false);
  host_.output_ready();
}

void Http2Codec::check_time(Clock::time_point now) {
  const auto& config = ctx_.config;
  const Clock::time_point last = host_.last_input();
  // A window the client never opens holds an answer (and what it holds:
  // a blob, a file, a producer) for as long as EDRI_WRITE_TIMEOUT, as a
  // socket the client never reads does.
  if (link_.held_by_client() && now - last > seconds(config.write_timeout_s)) return host_.close();
  if (timed_out(now)) return;
  // An open stream is not idleness: a Connect call waiting for pushes
  // lasts as long as its client (as a WebSocket does). Every slot and
  // gRPC event in flight has its stream open, so this covers them.
  if (link_.streams_open() || !host_.output_idle()) return;
  if (now - last > seconds(config.keepalive_timeout_s)) host_.close();
}

bool Http2Codec::timed_out(Clock::time_point now) {
  // A header block left unfinished within EDRI_HEADER_TIMEOUT holds the
  // whole connection (nothing else may come until it is whole), so the
  // connection goes. A collected body that stopped arriving for
  // EDRI_BODY_TIMEOUT (a slowloris client on HTTP/2) is its stream's
  // alone: a 408 ends that stream, and the others go on. Not while this
  // side stopped reading: then the client waits for us.
  const auto& config = ctx_.config;
  if (timed_out_ || host_.reading_paused()) return false;
  link_.time_out_bodies(now - seconds(config.body_timeout_s));
  if (!link_.head_owed() || now - host_.last_input() <= seconds(config.header_timeout_s)) return false;
  spdlog::info("closing HTTP/2 connection {}: a request head did not arrive within EDRI_HEADER_TIMEOUT",
               host_.connection().id());
  timed_out_ = true;
  host_.timed_out();
  link_.time_out();
  host_.end_after_output();
  host_.output_ready();
  return true;
}

void Http2Codec::live_send(std::int32_t call, const SharedMessage& ws, const SharedFrame& sse) {
  if (call != 0) link_.live_frame(call, sse ? std::string_view(*sse) : ws->payload());
}

void Http2Codec::push(std::uint64_t type, const SharedMessage& message) {
  ctx_.grpc.grpc_push(host_.connection(), type, message->payload());
}

}  // namespace edri::listener
