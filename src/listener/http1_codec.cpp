#include "listener/http1_codec.hpp"

#include <cerrno>
#include <cstring>

#include <spdlog/spdlog.h>

#include "listener/upload_file.hpp"

namespace edri::listener {

Http1Codec::Http1Codec(CodecHost& host, ConnectionContext& ctx)
    : host_(host),
      ctx_(ctx),
      reader_(
          ctx.parser_limits, [this](http::HttpRequest& req) { request(req); }, [this] { send_continue(); },
          [this](http::HttpRequest& req, std::string_view bytes) { return spill(req, bytes); }),
      answers_(host.output(), *this) {}

void Http1Codec::request(http::HttpRequest& req) {
  reader_.mark_served();
  ctx_.owner.request(host_.connection(), req);
  // An upload file lives as long as its slot holds it, not until the next
  // request.
  req.spill.reset();
  // Requests pipelined in one read stop here too, not only reads.
  if (!host_.closed() && !host_.upgrading() && must_pause(host_.output().backlog())) reader_.pause();
}

bool Http1Codec::spill(http::HttpRequest& req, std::string_view bytes) {
  if (!req.spill) {
    req.spill = UploadFile::create(ctx_.config.upload_path);
    if (!req.spill) {
      spdlog::error("cannot create an upload file in {}: {}", ctx_.config.upload_path, std::strerror(errno));
      return false;
    }
  }
  if (static_cast<UploadFile&>(*req.spill).append(bytes)) return true;
  spdlog::error("cannot write an upload file in {}: {}", ctx_.config.upload_path, std::strerror(errno));
  return false;
}

void Http1Codec::send_continue() {
  // Only when nothing is owed to the client before it: an interim response
  // must not overtake the responses of earlier pipelined requests. (A client
  // that gets no 100 sends its body after its own short wait.)
  if (answers_.empty()) host_.write_interim("HTTP/1.1 100 Continue\r\n\r\n");
}

bool Http1Codec::receive(std::string_view bytes, Clock::time_point now) {
  // An event stream reads only to see its client go.
  if (events_) return true;
  return follow(reader_.feed(bytes, now), now);
}

bool Http1Codec::resume(Clock::time_point now) { return follow(reader_.resume(now), now); }

bool Http1Codec::follow(const http::Http1Reader::Outcome& outcome, Clock::time_point now) {
  using Kind = http::Http1Reader::Outcome::Kind;
  switch (outcome.kind) {
    case Kind::Refused:
      // Requests before the error are answered; then the error, then close.
      ctx_.owner.refuse(host_.connection(), outcome.status, outcome.reason);
      return false;
    case Kind::Held:
      if (!host_.closed()) host_.pause_reading();
      return false;
    case Kind::Ended: return false;
    case Kind::Upgrade:
      if (host_.closed()) return false;
      // The owner saw the upgrade request: it either switched this
      // connection to WebSocket (the rest is frames) or answered it as
      // plain HTTP (the rest is the next request).
      if (host_.upgrading()) {
        host_.hand_over(outcome.rest);
        return false;
      }
      if (host_.reading_stopped()) return false;
      reader_.decline_upgrade();
      return follow(reader_.feed(outcome.rest, now), now);
    case Kind::More: break;
  }
  return !host_.closed() && !host_.reading_stopped();
}

bool Http1Codec::must_pause(std::size_t backlog) const {
  if (events_) return false;  // it must still see its client go
  return answers_.pending() >= ctx_.config.max_pipeline || backlog > ctx_.config.output_buffer;
}

void Http1Codec::last_answer_queued() {
  host_.end_after_output();
  stop();
}

void Http1Codec::stop() {
  // What follows the request being answered is never read as a request;
  // if the client sent some, the close lingers so that it gets the answer.
  reader_.stop();
  host_.stop_reading();
}

void Http1Codec::go_away() {
  stop();
  // An event stream has no last answer to wait for: it ends now.
  if (events_) return host_.close();
  if (answers_.empty() && host_.output_idle()) return host_.close();
  answers_.close_after_last();
  host_.end_after_output();
  host_.output_ready();
}

void Http1Codec::go_away_gently() {
  // Idle: the next request is read and answered with Connection: close
  // (the listener is draining), or the sweep closes the quiet connection.
  // Closing it now would race a request the client may be sending. An
  // event stream stays for EDRI_RELOAD_GRACE: the listener ends it.
  if (events_ || (answers_.empty() && host_.output_idle() && !reader_.mid_message())) return;
  go_away();
}

void Http1Codec::check_time(Clock::time_point now) {
  if (events_) return;  // an event stream idles as long as its client stays
  const auto& config = ctx_.config;
  const http::Http1Reader::Limits limits{seconds(config.header_timeout_s), seconds(config.body_timeout_s)};
  const Clock::time_point last = host_.last_input();
  if (const char* why = reader_.overdue(now, last, limits, host_.reading_stopped(), host_.reading_paused())) {
    host_.timed_out();
    ctx_.owner.refuse(host_.connection(), 408, why);
    return;
  }
  if (reader_.mid_message() || !answers_.empty() || !host_.output_idle()) return;
  // Draining, an idle connection goes once quiet for kDrainQuiet.
  if (ctx_.draining && now - last > kDrainQuiet) return host_.close();
  if (now - last > seconds(reader_.served() ? config.keepalive_timeout_s : config.header_timeout_s)) host_.close();
}

AnswerSink::EventsCarrier Http1Codec::start_events(std::uint32_t seq, std::string_view lines) {
  const auto carrier = answers_.open_events(seq, lines);
  if (carrier != AnswerSink::EventsCarrier::Connection) return carrier;
  // Nothing more is read as a request; what the client sends is dropped,
  // and its end closes the connection.
  events_ = true;
  reader_.stop();
  return carrier;
}

void Http1Codec::live_send(std::int32_t call, const SharedMessage&, const SharedFrame& sse) {
  if (call == 0 && events_ && sse) host_.append_shared(sse);
}

}  // namespace edri::listener
