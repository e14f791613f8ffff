// What a handler asks of others from its manager (Context): requests to
// other managers and HTTP calls to other services (each a client span of
// the handler's trace, where it has one), straight where one alone handles the event
// (docs/decisions/0028) or through the router; notifications; live-stream
// publishes and reads through the broker; and the answers that come back.
#include <spdlog/spdlog.h>

#include <algorithm>

#include <edri/live_stream.hpp>

#include "envelope/control.hpp"
#include "envelope/send.hpp"
#include "envelope/stream_record.hpp"
#include "http/field_text.hpp"
#include "manager/manager.hpp"

namespace edri::manager {

namespace env = edri::envelope;

bool Manager::send_request(env::EnvelopeWriter& w) {
  const auto target = direct_.manager_for(w.header().event_type);
  transport::Outbox* straight = target ? to_manager_[*target] : nullptr;  // none to itself
  if (straight) {
    const env::RoutedRequest routed{w.header(), *target};
    env::send_routed(to_router_, std::span(&routed, 1), 0);
    if (env::send_straight(*straight, to_router_, w)) return true;
  }
  if (env::send(to_router_, w)) return true;
  const auto& h = w.header();
  if (straight) env::send_answered(to_router_, std::span(&h.request_id, 1), 0, h.reply_to);  // its notice
  return false;
}

void Manager::on_response(env::EnvelopeView& v) {
  auto it = outstanding_.find(v.header.request_id);
  if (it == outstanding_.end()) return;
  auto callback = std::move(it->second);
  outstanding_.erase(it);
  Response r{v.header.status,
             std::string(v.text(env::SectionType::ContentType)),
             std::string(v.text(env::SectionType::Body)),
             {}};
  if (v.has(env::SectionType::File)) r.body = FileBody{std::string(v.text(env::SectionType::File))};
  if (v.has(env::SectionType::Blob)) {
    // The other manager's large body: taken over, copied, freed.
    if (const auto body = transport::claim_blob(loop_.blobs(), v.section(env::SectionType::Blob)))
      r.body = std::string(body.view());
    else
      r = Response::problem(502, "Bad Gateway", "the response body was lost on the way");
  }
  env::KeyValueReader kv(v.section(env::SectionType::Headers));
  std::string_view k, val;
  while (kv.next(k, val)) r.headers.emplace_back(k, val);
  try {
    callback(r);
  } catch (const std::exception& ex) {
    spdlog::error("response callback threw: {}", ex.what());
  }
}

bool Manager::publish(std::string_view event, const nlohmann::json& payload) {
  const int e = plugins_.event_index(event);
  if (e < 0) return false;
  auto h = env::make_header(env::Kind::Notification, plugins_.events()[static_cast<std::size_t>(e)].type_id, 0);
  h.reply_to = static_cast<std::uint16_t>(loop_.slot());
  const std::string body = payload.dump();
  env::EnvelopeWriter w(h);
  w.text(env::SectionType::ContentType, "application/json");
  w.text(env::SectionType::Body, body);
  // A PRODUCER span, a child of the handler's, whose context the
  // subscribers' CONSUMER spans continue (OpenTelemetry's messaging).
  const auto traced = trace_call(nullptr);
  std::string trace;
  if (traced) {
    trace = traced->section();
    w.text(env::SectionType::Trace, trace);
  }
  const bool sent = env::send(to_router_, w);
  if (traced)
    traces_.finish(*traced, "publish " + std::string(event), !sent, {{"edri.event", std::string(event)}},
                   SpanKind::Producer);
  if (sent) return true;
  // Not queued (the router is far behind): WebSocket subscribers of it
  // must not miss it in silence; the router has the broker close them.
  auto lost = env::make_header(env::Kind::Control, env::kControlPushesLost, 0);
  env::EnvelopeWriter l(lost);
  l.raw(env::SectionType::Control, std::as_bytes(std::span<const std::uint64_t>(&h.event_type, 1)));
  (void)env::send(to_router_, l, transport::Admission::Answer);
  return false;
}

std::optional<Traces::Call> Manager::trace_call(const Request* about, std::string_view traceparent) const {
  if (!traces_.on()) return std::nullopt;
  const Request* handler = handler_of(about);
  if (!handler && continuing_) {
    if (traceparent.empty()) traceparent = continuing_->traceparent;
    return traces_.call(traceparent, continuing_->tracestate);
  }
  if (traceparent.empty() && handler) traceparent = handler->traceparent;
  return traces_.call(traceparent, handler ? handler->tracestate : std::string_view());
}

const Request* Manager::handler_of(const Request* about) const {
  return about ? about : (current_ || notifying_) ? &request_ : nullptr;
}

Manager::CallerTrace Manager::asker_trace(const Request* about) const {
  if (const Request* handler = handler_of(about))
    return {std::string(handler->traceparent), std::string(handler->tracestate)};
  return continuing_ ? *continuing_ : CallerTrace{};
}

bool Manager::request_for(const Request* about, std::string_view event, const nlohmann::json& body,
                          std::function<void(const Response&)> on_response) {
  const int e = plugins_.event_index(event);
  if (e < 0) return false;
  const auto id = ++next_request_;
  auto h = env::make_header(env::Kind::Request, plugins_.events()[static_cast<std::size_t>(e)].type_id, id);
  h.reply_to = static_cast<std::uint16_t>(loop_.slot());
  h.flags |= env::kFlagWholeAnswer;
  const std::string text = body.dump();
  env::EnvelopeWriter w(h);
  w.text(env::SectionType::Body, text);
  const auto traced = trace_call(about);
  std::string trace;
  if (traced) {
    trace = traced->section();
    w.text(env::SectionType::Trace, trace);
    on_response = [this, call = *traced, name = std::string(event), then = std::move(on_response),
                   asker = asker_trace(about)](const Response& r) {
      traces_.finish(call, "ask " + name, r.status >= 500,
                     {{"edri.event", name}, {"http.response.status_code", std::int64_t{r.status}}});
      // What the callback calls out to continues the asker's trace.
      const ContinuingTrace continuing(continuing_, asker);
      then(r);
    };
  }
  if (!send_request(w)) {
    on_response(Response::problem(503, "Service Unavailable", "the channel to the pipeline is full"));
    return true;
  }
  outstanding_.emplace(id, std::move(on_response));
  return true;
}

std::optional<Response> refused_patch(std::string_view name, const nlohmann::json& patch, std::size_t patch_bytes,
                                      std::size_t max_bytes) {
  auto refuse = [](int status, std::string_view detail) {
    return Response::problem(status, status == 413 ? "Content Too Large" : "Unprocessable Content", detail);
  };
  if (!is_valid_stream_name(name)) return refuse(422, "a stream name is 1 to 128 of A-Z a-z 0-9 . _ : -");
  if (!patch.is_object()) return refuse(422, "a stream's patch must be a JSON object (RFC 7386)");
  if (patch_bytes > max_bytes) return refuse(413, "the patch is larger than EDRI_STREAM_MAX_BYTES");
  return std::nullopt;
}

bool Manager::publish_patch(std::string_view name, const nlohmann::json& patch,
                            std::function<void(const Response&)> then) {
  const std::string text = patch.dump();
  if (auto refused = refused_patch(name, patch, text.size(), config_.stream_max_bytes)) {
    if (then) then(*refused);
    return false;
  }
  return send_stream_control(env::kControlStreamPublish, name, text, std::move(then));
}

void Manager::read_stream(std::string_view name, std::function<void(const Response&)> then) {
  if (!is_valid_stream_name(name)) {
    if (then) then(Response::problem(422, "Unprocessable Content", "a stream name is 1 to 128 of A-Z a-z 0-9 . _ : -"));
    return;
  }
  send_stream_control(env::kControlStreamRead, name, {}, std::move(then));
}

bool Manager::send_stream_control(std::uint64_t code, std::string_view name, std::string_view json,
                                  std::function<void(const Response&)> then) {
  const auto id = ++next_request_;
  auto h = env::make_header(env::Kind::Control, code, id);
  h.reply_to = static_cast<std::uint16_t>(loop_.slot());
  h.origin_stream = then ? 0 : env::kNoAnswer;
  const std::string payload = env::encode_stream_record(env::StreamRecord{0, 0, 0, name, json});
  env::EnvelopeWriter w(h);
  w.text(env::SectionType::Control, payload);
  if (!env::send(to_router_, w)) {
    if (then) then(Response::problem(503, "Service Unavailable", "the router channel is full"));
    return false;
  }
  if (!then) return true;
  outstanding_.emplace(id, std::move(then));
  // The broker may die with it taken: `then` still runs, with a 504, once
  // EDRI_API_RESPONSE_TIMEOUT has passed.
  const auto timeout = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(config_.api_response_timeout_s));
  stream_deadlines_.emplace_back(std::chrono::steady_clock::now() + timeout, id);
  if (stream_deadlines_.size() == 1) stream_control_timer_.expires_after(timeout);
  return true;
}

void Manager::expire_stream_controls() {
  const auto now = std::chrono::steady_clock::now();
  while (!stream_deadlines_.empty() && stream_deadlines_.front().first <= now) {
    const auto it = outstanding_.find(stream_deadlines_.front().second);
    stream_deadlines_.pop_front();
    if (it == outstanding_.end()) continue;  // answered in time
    auto then = std::move(it->second);
    outstanding_.erase(it);
    try {
      then(Response::problem(504, "Gateway Timeout",
                             "the broker did not answer within EDRI_API_RESPONSE_TIMEOUT (did it restart?)"));
    } catch (const std::exception& ex) {
      spdlog::error("a stream answer's callback threw: {}", ex.what());
    }
  }
  // Answered ids are skipped when they come to the front: the queue is
  // bounded by what was sent within one timeout.
  if (!stream_deadlines_.empty()) stream_control_timer_.expires_after(stream_deadlines_.front().first - now);
}

std::function<void()> Manager::http(HttpCall call, std::chrono::steady_clock::time_point deadline,
                                    std::function<void(HttpReply)> done) {
  if (!http_) {
    auto ms = [](double s) { return std::chrono::milliseconds(static_cast<std::int64_t>(s * 1000)); };
    http_ = std::make_unique<HttpClient>(
        loop_.events(),
        HttpClient::Settings{ms(config_.http_client_timeout_s), ms(config_.http_client_connect_timeout_s),
                             config_.http_client_max_response, config_.http_client_ca_file});
  }
  if (traces_.on()) trace_http(call, done);
  return http_->start(std::move(call), deadline, std::move(done));
}

// The call carries a client span of the handler's trace (fetch() put the
// handler's `traceparent` in its headers; a callback handler's runs now).
void Manager::trace_http(HttpCall& call, std::function<void(HttpReply)>& done) {
  auto given = std::find_if(call.headers.begin(), call.headers.end(),
                            [](const auto& h) { return http::iequals(h.first, "traceparent"); });
  const auto traced = trace_call(nullptr, given != call.headers.end() ? given->second : std::string());
  if (!traced) return;
  if (given != call.headers.end()) call.headers.erase(given);
  call.headers.emplace_back("traceparent", traced->context.text());
  const bool has_state = std::any_of(call.headers.begin(), call.headers.end(),
                                     [](const auto& h) { return http::iequals(h.first, "tracestate"); });
  if (!traced->state.empty() && !has_state) call.headers.emplace_back("tracestate", traced->state);
  done = [this, span = *traced, method = call.method, url = call.url, then = std::move(done)](HttpReply reply) {
    std::vector<SpanAttribute> a{{"http.request.method", method}, {"url.full", url}};
    if (reply.status) a.push_back({"http.response.status_code", std::int64_t{reply.status}});
    if (!reply.error.empty()) a.push_back({"error.type", reply.error});
    traces_.finish(span, method, !reply.error.empty() || reply.status >= 500, std::move(a));
    then(std::move(reply));
  };
}

}  // namespace edri::manager
