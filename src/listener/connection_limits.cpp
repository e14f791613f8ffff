// Connection: its time limits, checked by the listener's sweep (the header,
// body, keep-alive, lingering and write timeouts, and a WebSocket close the
// client does not answer), for whichever protocol it speaks.
#include <spdlog/spdlog.h>

#include "listener/connection.hpp"

namespace edri::listener {

void Connection::apply_idle_limits(std::chrono::steady_clock::time_point now) {
  if (closed_) return;
  const auto& config = ctx_.config;
  if (lingering_) {
    if (now > linger_until_ || now - last_input_ > seconds(config.lingering_timeout_s)) close();
    return;
  }
  if (proxy_header_) {
    // Counted from the accept, not from the last byte: a header trickled
    // in gets no more time than a silent one.
    if (now - last_input_ > seconds(config.header_timeout_s))
      refuse_proxy_header("no whole PROXY protocol header within EDRI_HEADER_TIMEOUT");
    return;
  }
  if (events_) return;  // an event stream idles as long as its client stays
  if (ws_) return websocket_idle(now);
  if (h2_) return h2_idle(now);
  http1_idle(now);
}

void Connection::websocket_idle(std::chrono::steady_clock::time_point now) {
  // This side closed: once its close frame is out (until then
  // EDRI_WRITE_TIMEOUT applies), the client has EDRI_LINGERING_TIMEOUT
  // to answer it (RFC 6455 7.1.1: the server ends the TCP connection).
  if (ws_->close_sent_at() == std::chrono::steady_clock::time_point{} || !out_.empty()) return;
  if (close_out_at_ == std::chrono::steady_clock::time_point{}) close_out_at_ = now;
  if (now - close_out_at_ > seconds(ctx_.config.lingering_timeout_s)) {
    spdlog::debug("closing WebSocket connection {}: its client did not answer the close", id_);
    close();
  }
}

void Connection::h2_idle(std::chrono::steady_clock::time_point now) {
  const auto& config = ctx_.config;
  // A window the client never opens holds an answer (and what it holds:
  // a blob, a file, a producer) for as long as EDRI_WRITE_TIMEOUT, as a
  // socket the client never reads does.
  if (h2_->held_by_client() && now - last_input_ > seconds(config.write_timeout_s)) return close();
  if (h2_timed_out(now)) return;
  // An open stream is not idleness: a Connect call waiting for pushes
  // lasts as long as its client (as a WebSocket does). Every slot and
  // gRPC event in flight has its stream open, so this covers them.
  if (h2_->streams_open() || !out_.empty() || writing_) return;
  if (now - last_input_ > seconds(config.keepalive_timeout_s)) close();
}

void Connection::http1_idle(std::chrono::steady_clock::time_point now) {
  const auto& config = ctx_.config;
  if (parser_.in_head()) {
    if (read_closed_ || now - head_started_ <= seconds(config.header_timeout_s)) return;
    timed_out_ = true;
    ctx_.owner.refuse(*this, 408, "the request head did not arrive within EDRI_HEADER_TIMEOUT");
    return;
  }
  if (parser_.mid_message()) {
    // A body in progress. Not while this side stopped reading: then the
    // client waits for us.
    if (read_closed_ || read_paused_ || now - last_input_ <= seconds(config.body_timeout_s)) return;
    timed_out_ = true;
    ctx_.owner.refuse(*this, 408, "the request body stopped arriving for EDRI_BODY_TIMEOUT");
    return;
  }
  if (!http1_.empty() || !out_.empty() || writing_) return;
  if (now - last_input_ > seconds(served_ ? config.keepalive_timeout_s : config.header_timeout_s)) close();
}

bool Connection::h2_timed_out(std::chrono::steady_clock::time_point now) {
  // A header block left unfinished within EDRI_HEADER_TIMEOUT holds the
  // whole connection (nothing else may come until it is whole), so the
  // connection goes. A collected body that stopped arriving for
  // EDRI_BODY_TIMEOUT (a slowloris client on HTTP/2) is its stream's
  // alone: a 408 ends that stream, and the others go on. Not while this
  // side stopped reading: then the client waits for us.
  const auto& config = ctx_.config;
  if (timed_out_ || read_paused_) return false;
  h2_->time_out_bodies(now - seconds(config.body_timeout_s));
  if (!h2_->head_owed() || now - last_input_ <= seconds(config.header_timeout_s)) return false;
  spdlog::info("closing HTTP/2 connection {}: a request head did not arrive within EDRI_HEADER_TIMEOUT", id_);
  timed_out_ = true;
  h2_->time_out();
  close_after_write_ = true;
  mark_dirty();
  return true;
}

}  // namespace edri::listener
