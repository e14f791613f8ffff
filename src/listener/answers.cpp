#include "listener/answers.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include <spdlog/spdlog.h>

#include <edri/problem.hpp>

#include "envelope/problem.hpp"
#include "listener/grpc_front.hpp"
#include "listener/header_lines.hpp"

namespace edri::listener {

namespace env = edri::envelope;

Answers::Answers(const Config& config, ConnectionTable& table, EventSender& sender, transport::BlobArena* blobs,
                 std::vector<MiddlewareDecl> middlewares, Metrics metrics)
    : config_(config),
      table_(table),
      sender_(sender),
      blobs_(blobs),
      middlewares_(std::move(middlewares)),
      metrics_(metrics) {
  for (const auto& mw : middlewares_)
    if (mw.on_response) has_response_middleware_ = true;
}

void Answers::on_response(const env::EnvelopeView& v) {
  const auto& h = v.header;
  // A body in the blob area is this listener's to free from here on: when
  // this returns, unless the connection takes it to send.
  transport::BlobLease blob;
  const bool has_blob = v.has(env::SectionType::Blob);
  if (has_blob) blob = transport::claim_blob(blobs_, v.section(env::SectionType::Blob));
  const bool blob_lost = has_blob && !blob;
  Connection* c = table_.find(h.origin_connection, h.origin_generation);
  if (!c) return;  // the client went away
  if (grpc_->owns(*c, h.origin_stream)) {
    if (v.has(env::SectionType::File))
      return grpc_->refused(*c, h.origin_stream, 500, "a file answer cannot be sent over gRPC");
    if (blob_lost) return grpc_->refused(*c, h.origin_stream, 502, "the answer's body was lost on the way");
    return grpc_->answer(*c, v, blob ? blob.view() : v.text(env::SectionType::Body));
  }
  deliver(c->answers(), v, std::move(blob), blob_lost);
}

void Answers::deliver(AnswerSink& sink, const env::EnvelopeView& v, transport::BlobLease blob, bool blob_lost) {
  const auto& h = v.header;
  if (!sink.slot(h.origin_stream)) return;
  if (blob_lost)
    return problem(sink, h.origin_stream, 502, "the answer's body was lost on the way (a process restarted)");
  collect_headers(v);
  if (v.has(env::SectionType::Stream)) {
    env::StreamHead sh{};
    const auto sec = v.section(env::SectionType::Stream);
    if (sec.size() != sizeof sh) return problem(sink, h.origin_stream, 502, "a malformed streamed answer");
    std::memcpy(&sh, sec.data(), sizeof sh);
    return reply_stream(sink, h.origin_stream, h.status, v.text(env::SectionType::ContentType), sh, h.request_id,
                        extra_headers_);
  }
  if (v.has(env::SectionType::File)) return reply_file(sink, v);
  if (blob) {
    // Sent from the blob area's mapping, never copied into this process;
    // freed once the socket took it or when the connection goes.
    const std::size_t length = blob.view().size();
    return reply_body(sink, h.origin_stream, h.status, v.text(env::SectionType::ContentType), std::move(blob), length,
                      extra_headers_);
  }
  reply(sink, h.origin_stream, h.status, v.text(env::SectionType::ContentType), v.text(env::SectionType::Body),
        extra_headers_);
}

void Answers::collect_headers(const env::EnvelopeView& v) {
  const auto& h = v.header;
  extra_headers_.clear();
  append_header_lines(extra_headers_, v, [](std::string_view) { return false; });
  if (!(h.flags & env::kFlagTiming) || !h.t0_ns) return;
  const auto& s = h.stamps;
  const double total = static_cast<double>(env::monotonic_ns() - h.t0_ns);
  auto ms = [](double ns) { return ns / 1e6; };
  char buf[256];
  const int n = std::snprintf(buf, sizeof buf,
                              "Server-Timing: broker;dur=%.3f, router;dur=%.3f, manager;dur=%.3f, handler;dur=%.3f, "
                              "return;dur=%.3f, total;dur=%.3f\r\n",
                              ms(s[env::kStampBrokerIn]), ms(double(s[env::kStampRouterIn]) - s[env::kStampBrokerIn]),
                              ms(double(s[env::kStampManagerIn]) - s[env::kStampRouterIn]),
                              ms(double(s[env::kStampManagerOut]) - s[env::kStampManagerIn]),
                              ms(total - s[env::kStampManagerOut]), ms(total));
  if (n > 0) extra_headers_.append(buf, static_cast<std::size_t>(std::min(n, int(sizeof buf) - 1)));
}

void Answers::reply_file(AnswerSink& sink, const env::EnvelopeView& v) {
  // The handler answered with a file: sent from here, from disk.
  const auto& h = v.header;
  const std::string path(v.text(env::SectionType::File));
  auto a = StaticFiles::serve_file(path, sink.slot(h.origin_stream)->conditions, v.text(env::SectionType::ContentType));
  if (!a) {
    spdlog::error("a handler answered with the file {}, which cannot be read", path);
    return problem(
        sink, h.origin_stream, 500,
        config_.production ? "the answer's file cannot be read" : "the answer's file cannot be read: " + path);
  }
  // A handler's own status stands, unless the file answer is partial or
  // conditional (206, 304, 416).
  if (a->status == 200) a->status = h.status;
  extra_headers_ += a->headers;
  reply_static(sink, h.origin_stream, std::move(*a), extra_headers_);
}

void Answers::on_stream_piece(const env::EnvelopeView& v) {
  const auto& h = v.header;
  // A piece in the blob area is this listener's to free from here on.
  transport::BlobLease blob;
  const bool has_blob = v.has(env::SectionType::Blob);
  if (has_blob) blob = transport::claim_blob(blobs_, v.section(env::SectionType::Blob));
  Connection* c = table_.find(h.origin_connection, h.origin_generation);
  if (!c) return;  // gone: its close cancelled the stream
  const bool end = h.flags & env::kFlagStreamEnd;
  const bool abort = (h.flags & env::kFlagStreamAbort) || (has_blob && !blob);
  const std::string_view bytes = blob ? std::string_view() : v.text(env::SectionType::Body);
  if (abort) spdlog::warn("a streamed answer on connection {} was cut short", c->id());
  (void)c->answers().stream_piece(h.origin_stream, bytes, std::move(blob), end, abort);
}

void Answers::compose_headers(const SlotInfo& info, int status, std::string_view headers) {
  composed_.assign(headers);
  composed_ += info.headers;  // added by middleware when the request came in
  if (!has_response_middleware_) return;
  response_headers_.clear();
  for (const auto& mw : middlewares_)
    if (mw.on_response) mw.on_response(status, response_headers_);
  composed_ += response_headers_.lines();
}

void Answers::reply(AnswerSink& sink, std::uint32_t seq, int status, std::string_view content_type,
                    std::string_view body, std::string_view headers) {
  reply_body(sink, seq, status, content_type, body, body.size(), headers);
}

void Answers::reply_body(AnswerSink& sink, std::uint32_t seq, int status, std::string_view content_type,
                         AnswerBody body, std::size_t length, std::string_view headers) {
  auto* info = sink.slot(seq);
  if (!info) return;
  compose_headers(*info, status, headers);
  const http::ResponseHead h{status, content_type, length, info->keep_alive, info->http10, info->head};
  record(*info, status, info->head || http::bodyless_status(status) ? 0 : length);
  sink.respond(seq, h, composed_, std::move(body));
}

void Answers::reply_static(AnswerSink& sink, std::uint32_t seq, StaticFiles::Answer&& a, std::string_view headers) {
  if (!a.file) return reply(sink, seq, a.status, a.content_type, std::string_view(), headers);
  const auto length = static_cast<std::size_t>(a.file.remaining());  // before the move
  reply_body(sink, seq, a.status, a.content_type, std::move(a.file), length, headers);
}

void Answers::reply_stream(AnswerSink& sink, std::uint32_t seq, int status, std::string_view content_type,
                           const env::StreamHead& sh, std::uint64_t id, std::string_view headers) {
  const StreamRef ref{sh.manager_slot, id, false};
  auto* info = sink.slot(seq);
  if (!info) return sender_.stream_cancel(ref);
  compose_headers(*info, status, headers);
  record(*info, status, sh.length > 0 && !info->head ? static_cast<std::uint64_t>(sh.length) : 0);
  http::ResponseHead h{status,           content_type, sh.length >= 0 ? static_cast<std::size_t>(sh.length) : 0,
                       info->keep_alive, info->http10, info->head};
  h.framing = sh.length >= 0 ? http::ResponseHead::Framing::Length : http::ResponseHead::Framing::Chunked;
  // No body goes out (HEAD, a bodyless status, a protocol without
  // streams): the producer is stopped.
  if (!sink.open_stream(seq, h, composed_, ref)) sender_.stream_cancel(ref);
}

void Answers::problem(AnswerSink& sink, std::uint32_t seq, int status, std::string_view detail,
                      std::string_view headers) {
  reply(sink, seq, status, "application/problem+json", problem_json(status, detail), headers);
}

void Answers::answer_locally(Connection& c, bool keep_alive, bool http10, bool head, int status,
                             std::string_view detail, std::string_view headers, std::unique_ptr<AccessRecord> access) {
  const auto seq = c.open_slot(keep_alive, http10, head, {}, Connection::kNoRoute, std::move(access));
  problem(c.answers(), seq, status, detail, headers);
}

void Answers::record(SlotInfo& info, int status, std::uint64_t bytes_out) {
  using transport::bump_owned;  // this listener is the only writer of its block
  const auto now = std::chrono::steady_clock::now();
  if (info.access && access_log_) access_log_->end(std::move(info.access), {status, -1, bytes_out, now});
  const auto us =
      static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(now - info.opened).count());
  if (info.route == SlotInfo::kUncounted) {  // a WebSocket command's answer
    bump_owned(metrics_.header.websocket_commands[transport::status_column(status)]);
    return transport::observe_latency_us(
        metrics_.call_latency + std::size_t{info.call_row} * transport::kRouteLatencyCells, us);
  }
  const auto row = info.route == SlotInfo::kNoRoute ? metrics_.unrouted_row : info.route;
  bump_owned(metrics_.request_counters[row * transport::kStatusColumns + transport::status_column(status)]);
  transport::observe_latency_us(metrics_.route_latency + std::size_t{row} * transport::kRouteLatencyCells, us);
}

void Answers::count_refusal() {
  SlotInfo info{};
  info.route = SlotInfo::kNoRoute;
  info.opened = std::chrono::steady_clock::now();
  record(info, 503, 0);
}

}  // namespace edri::listener
